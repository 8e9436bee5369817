#!/usr/bin/env bash
# Rebuild dnabert-scaling.sif from scratch with Apptainer (>= 1.2, for %arguments / --build-arg).
#
#   containers/build.sh [--output FILE] [--notest] [--nv] [--build-arg KEY=VALUE]... [--lint-only]
#                       [-- extra apptainer build options]
#
#   --output FILE         the image (default: dnabert-scaling.sif in the repository root)
#   --notest              skip %test at the end of the build (a build host without GPU still runs
#                         %test fine: its CUDA run-time checks skip themselves; use --notest when
#                         the host cannot run the image at all), then run `apptainer test` on a
#                         GPU node later
#   --nv                  run %test with the host's NVIDIA driver (GPU build hosts)
#   --build-arg K=V       override a %arguments default, e.g. SCOREP_VERSION=9.3 with
#                         SCOREP_SHA256=<its sha256>, MAKE_JOBS=32, GUE_ZIP_URL=... GUE_ZIP_SHA256=...
#   --lint-only           only the static checks (no Apptainer needed)
#
# The build runs from the repository root (so %files finds the project), needs network access
# (base image, Score-P tarball, PyPI, Hugging Face) and about 40 GB of temporary space
# (APPTAINER_TMPDIR / APPTAINER_CACHEDIR move it off /tmp). Without root it uses --fakeroot.
# Before building, the definition is linted (python -m dnabert_scaling.tools lint-container).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DEF="containers/dnabert-scaling.def"
output="$ROOT/dnabert-scaling.sif"
notest=0 nv=0 lint_only=0
build_args=() extra=()

die() {
    echo "build.sh: error: $*" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --output) output="${2:?--output needs a file}"; shift 2 ;;
        --notest) notest=1; shift ;;
        --nv) nv=1; shift ;;
        --build-arg) build_args+=("${2:?--build-arg needs KEY=VALUE}"); shift 2 ;;
        --build-arg=*) build_args+=("${1#--build-arg=}"); shift ;;
        --lint-only) lint_only=1; shift ;;
        -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
for a in "${build_args[@]}"; do
    [[ "$a" =~ ^[A-Za-z_][A-Za-z0-9_]*=.*$ ]] || die "--build-arg '$a': expected KEY=VALUE"
done

cd "$ROOT"
for path in pyproject.toml README.md requirements/lock.txt artifact scripts containers expected docs; do
    [ -e "$path" ] || die "$ROOT/$path is missing: %files copies it into the image"
done

python=""
for candidate in "$ROOT/.venv/bin/python" python3; do
    if "$candidate" -c "import dnabert_scaling.tools.containerlint" >/dev/null 2>&1; then
        python="$candidate"
        break
    fi
done
if [ -n "$python" ]; then
    lint_args=()
    for a in "${build_args[@]}"; do
        lint_args+=(--build-arg "$a")
    done
    "$python" -m dnabert_scaling.tools lint-container "${lint_args[@]}" "$DEF"
elif [ "$lint_only" -eq 1 ]; then
    die "dnabert_scaling is not importable: run 'make venv' first"
else
    echo "build.sh: dnabert_scaling not importable here; skipping the lint (run 'make lint-container')" >&2
fi
[ "$lint_only" -eq 0 ] || exit 0

apptainer=""
for candidate in apptainer singularity; do
    if command -v "$candidate" >/dev/null; then
        apptainer="$candidate"
        break
    fi
done
[ -n "$apptainer" ] || die "apptainer not found (https://apptainer.org/docs/admin/main/installation.html)"

cmd=("$apptainer" build --force)
[ "$(id -u)" -eq 0 ] || cmd+=(--fakeroot)
[ "$notest" -eq 0 ] || cmd+=(--notest)
[ "$nv" -eq 0 ] || cmd+=(--nv)
for a in "${build_args[@]}"; do
    cmd+=(--build-arg "$a")
done
cmd+=("${extra[@]}" "$output" "$DEF")
echo "build.sh: ${cmd[*]}"
start=$(date +%s)
"${cmd[@]}"
echo "build.sh: built $output in $(( $(date +%s) - start )) s"
"$apptainer" inspect --labels "$output" || true
if [ "$notest" -eq 1 ]; then
    echo "build.sh: %test was skipped: run '$apptainer test --nv $output' on a GPU node"
fi
