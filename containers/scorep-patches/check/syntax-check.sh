#!/usr/bin/env bash
# CPU-only check of the Score-P 8.4 patches, before a GPU build: unpack the source, apply the
# series' patches (candidates too), and compile the patched CUDA adapter files with
# `gcc -fsyntax-only -Wall` against the CUDA 13.0 and CUPTI 13.0 headers of PyPI's wheels, with a
# minimal stand-in for the config.h that Score-P's configure would write. Then the same for the
# released files: a patched file may show no error and no warning the released one lacks.
#   containers/scorep-patches/check/syntax-check.sh SCOREP_SOURCE_TARBALL [NVTX2_INCLUDE_DIR]
# Needs gcc, python with pip ($PYTHON, default python3; downloads three header wheels, hash-pinned, about 10 MB) and, for
# SCOREP_Cuda_Init.c, the NVTX v2 headers (nvToolsExt.h; else that file is skipped).
# It caught what the first GPU build of 8.4-cupti-launch-callbacks.patch failed on (a helper
# placed before the CUPTI subscriber's declaration). It is no substitute for a build and
# check/run.sh on a GPU. Exit status: 0 clean, 1 new errors or warnings, 2 cannot run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patches=$(cd "$here/.." && pwd)
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: $0 SCOREP_SOURCE_TARBALL [NVTX2_INCLUDE_DIR]" >&2; exit 2; }
src_tar=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); nvtx2=${2:+$(cd "$2" && pwd)}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cat > "$work/headers.txt" <<'REQ'
nvidia-cuda-cupti==13.0.85 --hash=sha256:4eb01c08e859bf924d222250d2e8f8b8ff6d3db4721288cf35d14252a4d933c8
nvidia-cuda-runtime==13.0.96 --hash=sha256:7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548
nvidia-cuda-crt==13.0.88 --hash=sha256:2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4
REQ
py=${PYTHON:-python3}
"$py" -m pip download -q --no-deps \
  --require-hashes -r "$work/headers.txt" -d "$work/wheels" || { echo "syntax-check: cannot download the CUDA header wheels" >&2; exit 2; }
for w in "$work"/wheels/*.whl; do "$py" -m zipfile -e "$w" "$work/cuda"; done
cuda_inc="$work/cuda/nvidia/cu13/include"
for tree in released patched; do
  mkdir -p "$work/$tree"; tar -xf "$src_tar" -C "$work/$tree"
done
src="$work/patched/scorep-8.4"
while read -r file status _; do
  case "$file" in ''|'#'*) continue ;; esac
  (cd "$src" && patch -p1 -s --batch < "$patches/$file") || { echo "syntax-check: $file ($status) does not apply" >&2; exit 1; }
done < "$patches/series-8.4"
stub="$work/stub"; mkdir -p "$stub"
sed 's/@PACKAGE_SYM_CAPS@/SCOREP/g; s/@PACKAGE_SYM@/scorep/g; s/@[A-Z_]*@/SCOREP/g' \
  "$src/common/utils/src/exception/ErrorCodes.tmpl.h" > "$stub/SCOREP_ErrorCodes.h"
{ echo "#include \"$src/build-config/common/config-common.h\""
  cat <<'CFG'
#define AFS_PACKAGE_SRCDIR ""
#define AFS_PACKAGE_NAME SCOREP
#define AFS_PACKAGE_STRING "scorep"
#define AFS_PACKAGE_name scorep
#define PACKAGE_ERROR_CODES_HEADER <SCOREP_ErrorCodes.h>
#define HAVE_THREAD_LOCAL_STORAGE 1
#define THREAD_LOCAL_STORAGE_SPECIFIER __thread
#define THREAD_LOCAL_STORAGE_MODEL(m)
#define SCOREP_THREAD_LOCAL_STORAGE_MODEL(m)
#define HAVE_CUPTI_ASYNC_SUPPORT 1
#define HAVE_BACKEND_CUDA_SUPPORT 1
#define STATIC_INLINE static inline
#define UTILS_CPU_RELAX do {} while (0)
CFG
} > "$stub/config.h"
compile() {  # compile TREE FILE: the adapter's diagnostics (its own lines only), sorted, without line numbers
  local root=$1 f=$2 incs
  incs=$(cd "$root" && find src common -type d -name include | sed "s|^|-I$root/|" | tr '\n' ' ')
  # shellcheck disable=SC2086
  (cd "$root" && gcc -fsyntax-only -std=gnu99 -Wall -Wextra -Wno-unused-parameter -I"$stub" -I"$cuda_inc" \
     ${nvtx2:+-I"$nvtx2"} -Iinclude $incs -Isrc/adapters/cuda -Isrc/measurement -Isrc -Icommon/hash \
     -Ivendor/otf2/include "src/adapters/cuda/$f" 2>&1 || true) \
    | grep -E "^src/adapters/cuda/.*: (fatal error|error|warning)" | sed -E 's/:[0-9]+:[0-9]+:/:/' | sort || true
}
files=(scorep_cupti_callbacks.c scorep_cupti4_activity.c scorep_cuda_confvars.c)
# and every other C file of the adapter a listed patch changes (an .inc.c is compiled through the file that includes it)
while read -r f; do
  case " ${files[*]} " in *" $f "*) ;; *) files+=("$f") ;; esac
done < <(sed -n 's|^+++ b/src/adapters/cuda/\([A-Za-z0-9_]*\.c\)$|\1|p' "$patches"/8.4-*.patch | grep -v '[.]inc[.]c$' | sort -u)
[ -n "$nvtx2" ] && files+=(SCOREP_Cuda_Init.c) || echo "syntax-check: no NVTX v2 headers given: SCOREP_Cuda_Init.c skipped"
status=0
for f in "${files[@]}"; do
  old=$(compile "$work/released/scorep-8.4" "$f")
  if grep -q "fatal error" <<<"$old"; then echo "syntax-check: $f cannot be compiled here: $old" >&2; exit 2; fi
  new=$(comm -13 <(echo "$old") <(compile "$src" "$f"))
  if [ -n "$new" ]; then echo "syntax-check: $f: new diagnostics:"; echo "$new"; status=1; else echo "syntax-check: $f: ok"; fi
done
exit $status
