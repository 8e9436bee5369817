#!/usr/bin/env bash
# Regression check of the project's Score-P patches, on a machine with a CUDA GPU:
#   containers/scorep-patches/check/run.sh PREFIX
# (build-scorep.sh --check runs it after the install). Needs python3 with torch, the Score-P
# Python bindings (python -m scorep) and the otf2 module of PREFIX; Score-P of PREFIX on PATH.
# What it checks: see check_patches.py. Exit status 0 passed, 1 failed, 2 cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 PREFIX" >&2; exit 2; }
exec python3 "$here/check_patches.py" --prefix "$1"
