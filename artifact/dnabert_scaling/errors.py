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
