"""Argument types shared by every subcommand: numbers that must be positive (or not negative), or lie
in a stated range (``ranged``).

argparse turns the ``ArgumentTypeError`` into ``dnabert-scaling X: error: argument --steps: ...``
with exit status 2, naming the option and the value, before any work starts.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

_N = TypeVar("_N", int, float)


def _number(kind: type[_N], text: str) -> _N:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _bounded(kind: type[_N], text: str, strict: bool) -> _N:
    value = _number(kind, text)
    if value < 0 or (strict and value == 0):
        bound = ("at least 1" if kind is int else "greater than 0") if strict else "0 or more"
        raise argparse.ArgumentTypeError(f"must be {bound}, not {text!r}")
    return value


def positive_int(text: str) -> int:
    return _bounded(int, text, strict=True)


def nonneg_int(text: str) -> int:
    return _bounded(int, text, strict=False)


def positive_float(text: str) -> float:
    return _bounded(float, text, strict=True)


def nonneg_float(text: str) -> float:
    return _bounded(float, text, strict=False)


def positive_float_list(text: str) -> list[float]:
    """Comma-separated positive numbers (e.g. ``--sizes-mb 1,25``)."""
    items = [x.strip() for x in text.split(",")]
    if not items or not all(items):
        raise argparse.ArgumentTypeError(f"must be comma-separated numbers like 1,25, not {text!r}")
    return [positive_float(x) for x in items]


def _shown(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def ranged(kind: type[_N], low: float, high: float, low_open: bool = False) -> Callable[[str], _N]:
    """An argparse type: a finite number of ``kind`` in ``[low, high]`` (``(low, high]`` when
    ``low_open``); the message states the range."""

    def check(text: str) -> _N:
        value = _number(kind, text)
        if value < low or value > high or (low_open and value == low):
            bound = f"greater than {_shown(low)}" if low_open else f"within {_shown(low)}..{_shown(high)}"
            if low_open and high != math.inf:
                bound += f" and at most {_shown(high)}"
            raise argparse.ArgumentTypeError(f"must be {bound}, not {text!r}")
        return value

    check.__name__ = kind.__name__
    return check
