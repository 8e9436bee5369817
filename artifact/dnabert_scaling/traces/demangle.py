"""C++ symbol demangling through libstdc++'s ``__cxa_demangle`` (ctypes, no extra dependency).

Older Score-P versions name CUDA kernel regions by their mangled symbol
(``_Z13jacobi_kernelPKfPfiiS1_``); Score-P 9 and Kineto give readable names. To put every
trace into one model, mangled names are demangled here and then shortened by
:func:`dnabert_scaling.traces.classify.kernel_display_name` (parameter list dropped, template
arguments kept). When libstdc++ is missing or a symbol does not demangle, the input is returned
unchanged: a mangled name is still a correct, if ugly, identifier.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache

_demangler = None
_free = None
_loaded = False


def _load():
    global _demangler, _free, _loaded
    if _loaded:
        return _demangler
    _loaded = True
    for name in (ctypes.util.find_library("stdc++"), "libstdc++.so.6", "libc++.so.1"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free.restype = None
        _demangler, _free = fn, libc.free
        break
    return _demangler


def available() -> bool:
    """Whether a C++ demangler could be loaded on this machine."""
    return _load() is not None


def is_mangled(name: str) -> bool:
    """Itanium-ABI mangled names start with ``_Z`` (``__Z`` on some platforms)."""
    return name.startswith("_Z") or name.startswith("__Z")


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled form of an Itanium C++ symbol, or ``name`` itself when it is not one."""
    if not is_mangled(name):
        return name
    fn = _load()
    if fn is None:
        return name
    status = ctypes.c_int(0)
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        return name
    ptr = fn(raw, None, None, ctypes.byref(status))
    if not ptr:
        return name
    try:
        if status.value != 0:
            return name
        return ctypes.string_at(ptr).decode("utf-8", errors="replace")
    finally:
        _free(ptr)
