"""Argument types shared by every subcommand: numbers that must be positive (or not negative).

argparse turns the ``ArgumentTypeError`` into ``dnabert-scaling X: error: argument --steps: ...``
with exit status 2, naming the option and the value, before any work starts.
"""

from __future__ import annotations

import argparse
import math
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
