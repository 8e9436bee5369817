#!/usr/bin/env bash
# A full Score-P build with the series' patches, candidates included, on a machine without a GPU
# or a CUDA toolkit, before any GPU time is spent on a patch:
#   containers/scorep-patches/check/cpu-build.sh SCOREP_SOURCE_TARBALL PREFIX [options]
#     --jobs N                                  make -j (default: nproc)
#     --libbfd-include DIR --libbfd-lib DIR     libbfd when not installed (Debian: binutils-dev)
#     --work DIR                                where to download, lay out and build (default: a new
#                                               folder under /var/tmp, removed at the end)
# A CUDA 13.0 toolkit is laid out from NVIDIA's PyPI wheels (hash-pinned, about 115 MB: nvcc, NVVM,
# the runtime, CUPTI, CCCL, ...), with the unversioned library links a toolkit has and, in
# lib64/stubs, a stand-in libcuda.so.1 that exports every cu* function cuda.h names (each returns
# an error: nothing here calls them). The NVTX v2 headers come from the wheel the image pins.
# Then containers/build-scorep.sh --cuda-stubs --candidate-patches builds and installs into
# PREFIX, about 12 minutes on 2 cores. It shows that the patches configure, compile and link in
# full, and PREFIX/share/scorep-patches.txt lists them; the build runs nothing on a GPU and says
# nothing of what the patches do there (check/run.sh on a GPU does). The install links the
# wheels' toolkit by path (RUNPATH, scorep-config): here, use it to inspect symbols and
# `scorep-info config-vars`. Built with --work DIR, it can trace on a GPU machine once DIR/cuda
# there is a link to that machine's CUDA 13 toolkit and the libbfd path given here exists
# (--libbfd-lib), as in GPU call Z (expected/reference/h100-bench/gpu-call-2026-12-06-cpu-built/;
# its otf2 Python module is for the Python that built it: call Z took a 3.12 one from the kit).
# Exit status: 0 built, 1 the build failed (build-scorep.sh prints its log), 2 cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
die() { echo "cpu-build: $*" >&2; exit 2; }
[ $# -ge 2 ] && [ -f "$1" ] || die "usage: $0 SCOREP_SOURCE_TARBALL PREFIX [--jobs N] [--libbfd-include DIR --libbfd-lib DIR] [--work DIR]"
src_tar=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); prefix=$2; shift 2
jobs=$(nproc); bfd=(); work=""
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=${2:?}; shift 2 ;;
    --libbfd-include|--libbfd-lib) bfd+=("$1" "${2:?}"); shift 2 ;;
    --work) work=${2:?}; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
if [ ${#bfd[@]} -eq 0 ] && [ ! -f /usr/include/bfd.h ]; then
  die "no libbfd (Score-P needs it): install binutils-dev, or pass --libbfd-include and --libbfd-lib"
fi
command -v gcc > /dev/null || die "no gcc"
py=${PYTHON:-python3}
if [ -z "$work" ]; then work=$(mktemp -d /var/tmp/scorep-cpu-build.XXXXXX); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"
cat > "$work/wheels.txt" <<'REQ'
nvidia-cuda-cccl==13.0.85 --hash=sha256:e0da7ad981f3a8aff08241b5bfc1af868742a63e2762f53a5171c492ef242649
nvidia-cuda-crt==13.0.88 --hash=sha256:2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4
nvidia-cuda-culibos==13.0.85 --hash=sha256:5c178858405f485367175e14f8a7536af6c86c5c428d25301f2218406c316ba0
nvidia-cuda-cupti==13.0.85 --hash=sha256:4eb01c08e859bf924d222250d2e8f8b8ff6d3db4721288cf35d14252a4d933c8
nvidia-cuda-cuxxfilt==13.0.85 --hash=sha256:a3449fe64974ddc97419cf2c2a8fc560e159601d74d80fa120ffe953e40d67e9
nvidia-cuda-nvcc==13.0.88 --hash=sha256:56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03
nvidia-cuda-profiler-api==13.0.85 --hash=sha256:73d2671deac833db6686d6fbde4753fa3a3a497d87540fc246f081f375243f66
nvidia-cuda-runtime==13.0.96 --hash=sha256:7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548
nvidia-nvtx==13.0.85 --hash=sha256:4936d1d6780fbe68db454f5e72a42ff64d1fd6397df9f363ae786930fd5c1cd4
nvidia-nvvm==13.0.88 --hash=sha256:c5f41ffeb6466944a026dfa5317d7d85355c119bbec279205d22f1869d1054e0
nvidia-nvtx-cu12==12.4.127 --hash=sha256:781e950d9b9f60d8241ccea575b32f5105a5baf4c2351cab5256a24869f12a1a
REQ
"$py" -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$work/wheels.txt" -d "$work/wheels" \
  || die "cannot download the CUDA wheels (PyPI)"
rm -rf "$work/site"
for w in "$work"/wheels/*.whl; do "$py" -m zipfile -e "$w" "$work/site"; done
cuda="$work/cuda"; rm -rf "$cuda"; mv "$work/site/nvidia/cu13" "$cuda"
chmod +x "$cuda"/bin/* "$cuda"/nvvm/bin/* 2> /dev/null || true
ln -s lib "$cuda/lib64"
for so in "$cuda"/lib/lib*.so.[0-9]*; do  # the unversioned names a toolkit links by
  base=${so##*/}; [ -e "$cuda/lib/${base%%.so.*}.so" ] || ln -s "$base" "$cuda/lib/${base%%.so.*}.so"
done
mkdir -p "$cuda/targets/x86_64-linux" "$cuda/lib/stubs"
ln -s ../../include "$cuda/targets/x86_64-linux/include"; ln -s ../../lib "$cuda/targets/x86_64-linux/lib"
# the stand-in driver: every function cuda.h declares, under its own and its versioned (#define) name
"$py" - "$cuda/include/cuda.h" > "$work/cuda_stub.c" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
names = set(re.findall(r"\bCUresult\s+CUDAAPI\s+(cu\w+)\s*\(", text))
names |= {target for _, target in re.findall(r"#define\s+(cu\w+)\s+(cu\w+_v\d+)\b", text)}
if len(names) < 300:
    sys.exit(f"cpu-build: only {len(names)} driver functions found in {sys.argv[1]}")
print("/* stand-in libcuda for linking only: every function returns CUDA_ERROR_NOT_SUPPORTED (801) */")
for name in sorted(names):
    print(f"int {name}(void) {{ return 801; }}")
PY
gcc -shared -fPIC -o "$cuda/lib/stubs/libcuda.so" -Wl,-soname,libcuda.so.1 "$work/cuda_stub.c" || die "cannot build the libcuda stand-in"
echo "cpu-build: toolkit laid out in $cuda ($(grep -c '^int ' "$work/cuda_stub.c") driver functions in the stand-in libcuda)"
PATH="$cuda/bin:$PATH" bash "$root/containers/build-scorep.sh" --source "$src_tar" --prefix "$prefix" --cuda "$cuda" \
  --cuda-stubs --candidate-patches --strip --jobs "$jobs" --build-dir "$work/build" \
  --nvtx2-include "$work/site/nvidia/nvtx/include" "${bfd[@]}" || exit 1
echo "cpu-build: built $prefix with:"; grep '^patch:' "$prefix/share/scorep-patches.txt"
