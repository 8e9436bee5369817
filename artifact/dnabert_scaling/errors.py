"""User-facing errors.

An :class:`ArtifactError` is a problem with the user's input or environment (a malformed file, a
missing rank, a bad configuration). Its message names the file (or setting) and the problem; the
command line prints it without a traceback and exits with status 2.
"""

from __future__ import annotations

import errno
import os
import stat


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


MISSING = "missing"
REGULAR_FILE = "a regular file"
FOLDER = "a folder"


def path_kind(path: os.PathLike | str) -> str:
    """What is at ``path``, for a message: ``MISSING``, ``REGULAR_FILE``, ``FOLDER``, "a symbolic link
    loop", "a broken symbolic link", "a FIFO", "a socket", "a device", or why it cannot be looked at.
    Every reader that opens an input asks this first (``regular_file``, ``read_text_file``), so what
    is there instead of a file is named as what it is, never as damage inside one."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (a link on its path leads back to itself)"
        if os.path.islink(path):
            return "a broken symbolic link"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return MISSING
        return f"not readable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return REGULAR_FILE
    if stat.S_ISDIR(mode):
        return FOLDER
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def regular_file(path: os.PathLike | str, what: str, missing: str | None = None) -> None:
    """Nothing when ``path`` is a regular file (or a link to one); else an ArtifactError naming the
    path, ``what`` it should be ("a claims file") and what is there instead: ``missing`` (default
    "``what`` not found") where nothing is."""
    kind = path_kind(path)
    if kind == MISSING:
        raise ArtifactError(missing or f"{what} not found", path)
    if kind != REGULAR_FILE:
        raise ArtifactError(f"is {kind}, not a regular file: not read as {what}", path)


def read_text_file(path: os.PathLike | str, what: str, missing: str | None = None) -> str:
    """The UTF-8 text of the file at ``path`` (``regular_file`` first); an ArtifactError naming the file
    when it cannot be read, is not UTF-8 text or holds a NUL byte."""
    from pathlib import Path

    regular_file(path, what, missing)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ArtifactError(f"cannot read {what}: {exc.strerror}", path) from None
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"not UTF-8 text, so not {what} ({exc.reason} at byte {exc.start})", path) from None
    if "\x00" in text:  # no text format read here holds one; passed on, it ends in an 'embedded null byte' traceback
        raise ArtifactError(f"holds a NUL byte (character {text.index(chr(0))}), so it is not {what}", path)
    return text


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
    text = read_text_file(path, "a JSON file")
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise ArtifactError(f"not valid JSON: {exc}", path) from None
    if not isinstance(data, dict):
        raise ArtifactError(f"must be {what}", path)
    return data


# Unicode categories no label or title may hold: controls (newline, carriage return, ANSI escapes), format characters
# (bidi overrides such as U+202E, zero-width spaces and joiners), line and paragraph separators, surrogates,
# private-use and unassigned code points: each can hide, reorder or rewrite what a reader or a terminal shows
HIDDEN_CATEGORIES = {"Cc": "a control character", "Cf": "a format (invisible or bidi) character", "Zl": "a line separator",
                     "Zp": "a paragraph separator", "Cs": "a surrogate", "Co": "a private-use character",
                     "Cn": "an unassigned code point"}  # fmt: skip
# Letters and symbols that render as nothing though their category is not one of the above: the Hangul fillers and the
# blank Braille pattern, used to pass an "empty" name through checks that look at categories or white space only
BLANK_LOOKING = {0x115F: "a Hangul filler", 0x1160: "a Hangul filler", 0x3164: "a Hangul filler",
                 0xFFA0: "a Hangul filler", 0x2800: "a blank Braille pattern"}  # fmt: skip


def _hidden_kind(c: str) -> str | None:
    """What hides in the character ``c``: its ``HIDDEN_CATEGORIES`` or ``BLANK_LOOKING`` words, or None."""
    import unicodedata

    category = unicodedata.category(c)
    if category in HIDDEN_CATEGORIES:
        return HIDDEN_CATEGORIES[category]
    if ord(c) in BLANK_LOOKING:
        return f"{BLANK_LOOKING[ord(c)]} (shows as blank)"
    return None


def escape_hidden(text: str) -> str:
    """``text`` with each character of ``HIDDEN_CATEGORIES`` and of ``BLANK_LOOKING`` written as a Python escape
    (``\\x1b``, ``\\u202e``): safe to print where the text comes from a file (a kernel name in a trace), since a
    terminal then shows the escape instead of acting on it, and a reader sees that the name holds it."""
    if text.isprintable() and text.isascii():  # the common case: nothing to look at
        return text
    return "".join(ascii(c)[1:-1] if _hidden_kind(c) else c for c in text)


def hidden_character(text: str) -> str | None:
    """Where ``text`` holds a character of ``HIDDEN_CATEGORIES`` or of ``BLANK_LOOKING``: "U+202E at character 2, a
    format (invisible or bidi) character" (never the character itself, which a terminal would act on); None where it
    holds none."""
    for i, c in enumerate(text):
        if (kind := _hidden_kind(c)) is not None:
            return f"U+{ord(c):04X} at character {i + 1}, {kind}"
    return None
