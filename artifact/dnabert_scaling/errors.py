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


class Stopped(BaseException):
    """SIGTERM or SIGINT reached a command (``cli.main`` turns them into this). A ``BaseException``
    as ``KeyboardInterrupt``: no ``except Exception`` on the way swallows it, and every ``finally``
    (temporary files, a half-built results folder) runs before the command exits with
    ``exit_code`` (128 + the signal's number: 130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")
