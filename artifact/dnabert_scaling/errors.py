"""User-facing errors.

An :class:`ArtifactError` is a problem with the user's input or environment (a malformed file, a
missing rank, a bad configuration). Its message names the file (or setting) and the problem; the
command line prints it without a traceback and exits with status 2.
"""

from __future__ import annotations

import os


class ArtifactError(Exception):
    """A clear, user-facing error. ``path`` (optional) is the file the problem is in."""

    exit_code = 2

    def __init__(self, message: str, path: str | os.PathLike | None = None):
        self.path = None if path is None else os.fspath(path)
        super().__init__(f"{self.path}: {message}" if self.path else message)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT reached a command (``cli.main`` turns them into this). A
    ``KeyboardInterrupt``: no ``except Exception`` on the way swallows it, code that ends what it
    started on Ctrl-C (the sweep's ranks) does so for both signals, and every ``finally``
    (temporary files, a half-built results folder) runs before the command exits with
    ``exit_code`` (128 + the signal's number: 130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


def stop_on_signals(received: list[int] | None = None) -> None:
    """SIGINT and SIGTERM raise :class:`Stopped` (their number appended to ``received``), once: the
    command unwinds, removing its temporary files and folders, without a second signal cutting the
    clean-up short. ``cli.main`` installs it for every subcommand; a subcommand that must do more
    when stopped (``train`` records the failure, ``sweep`` ends its ranks) installs its own handler
    over it, and one whose library replaced it (nbclient) installs it again."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, _frame: object) -> None:
        if received is not None:
            received.append(signum)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Stopped(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} appears twice in one object (which one counts is a parser's choice)")
        seen[key] = value
    return seen


def loads_json(text: str) -> object:
    """``json.loads`` that refuses an object with a key twice (ValueError, as for malformed JSON):
    a hand-edited file whose second ``"max"`` says 0 while its first says 3 has no one meaning."""
    import json

    return json.loads(text, object_pairs_hook=_unique_keys)


def read_json_object(path: os.PathLike | str, what: str = "a JSON object") -> dict:
    """The JSON object in the file at ``path`` (``loads_json``: a key twice is refused); an
    ArtifactError naming the file when it cannot be read, is not JSON or holds no object."""
    from pathlib import Path

    try:
        data = loads_json(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ArtifactError(f"cannot read: {exc.strerror}", path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"not valid JSON: {exc}", path) from None
    if not isinstance(data, dict):
        raise ArtifactError(f"must be {what}", path)
    return data
