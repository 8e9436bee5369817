"""Run a module as ``python -m MODULE ARGS`` would, for Score-P's Python bindings.

``python -m scorep [options] SCRIPT ARGS`` runs a *script path*: every argument that starts with
``-`` before the script goes to ``scorep-config``, so ``-m module`` is not understood (checked in
scorep_binding_python's ``__main__.py``). dnabert-scaling therefore hands the bindings this file
as the script, followed by the module name and its arguments.
"""

import os
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 2:
        sys.stderr.write("usage: run_module.py MODULE [ARGS...]\n")
        raise SystemExit(2)
    module = sys.argv[1]
    sys.argv = [module] + sys.argv[2:]
    # Score-P's bindings put this file's directory first on sys.path; `python -m` puts the
    # current directory there instead.
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path[0] = os.getcwd()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
