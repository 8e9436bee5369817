#!/usr/bin/env bash
# The one Score-P build recipe of the project: called by the Apptainer definition's %post
# (containers/dnabert-scaling.def, Score-P 8.4 from the checksummed release tarball) and run as is
# on the lent GPU machine (the Score-P 8.4 source of the GPU kit), so image and machine share it.
#
#   containers/build-scorep.sh --source scorep-X.Y.tar.{gz,xz} --prefix DIR [options]
#     --cuda DIR            CUDA toolkit (default: the one of `nvcc` on PATH, else /usr/local/cuda)
#     --jobs N              make -j (default: nproc)
#     --mpi none|NAME       --without-mpi (default) or --with-mpi=NAME
#     --cuda-stubs          link libcuda from the toolkit's stubs (build hosts without a driver;
#                           the real libcuda comes in at run time, e.g. apptainer --nv)
#     --libbfd-include DIR / --libbfd-lib DIR   libbfd when not installed system-wide (libbfd
#                           is a hard requirement of Score-P 8 and 9; Debian/Ubuntu: binutils-dev).
#                           Libraries given this way are copied into PREFIX/lib.
#     --nvtx2-include DIR   NVTX v2 headers (nvToolsExt.h), needed by Score-P 8.x on CUDA 13
#     --build-dir DIR       where to unpack and build (default: a new folder under /var/tmp)
#     --strip               delete static libraries and strip debug info after the install
#     --candidate-patches   also apply the patches the version's series lists as 'candidate'
#     --list-patches        print the patches that would be applied (FILE STATUS) and exit
#     --check               after the install, run the patches' regression check
#                           (containers/scorep-patches/check/run.sh: needs a CUDA GPU and torch;
#                           its overlap lab nvcc and compute capability 9.0). A failed check stops
#                           the build; one that cannot run here is a warning: NOT CHECKED)
#
# What it handles:
#   * patches: containers/scorep-patches/series-<X.Y> lists the version's patches (FILE STATUS
#     note); the 'verified' ones are applied (patch -p1) in its order, the 'candidate' ones only
#     with --candidate-patches; each applied patch is listed in PREFIX/share/scorep-patches.txt
#     (name, sha256, status). A <X.Y>-*.patch the series does not list is refused; versions
#     without a series are built as released.
#   * CUDA 13 keeps CUPTI under targets/<arch>-linux/{include,lib}, not extras/CUPTI, which is
#     where Score-P 8 and 9 look for it (from --with-libcudart). When extras/CUPTI is missing,
#     the folder holding CUPTI's include/ and lib/ is given as --with-libcupti.
#   * NVTX: CUDA 13 ships only the header-only NVTX3 (nvtx3/nvToolsExt.h). Score-P 9.x detects
#     it; Score-P 8.x compiles its NVTX adapter against the v2 nvToolsExt.h, so 8.x on a toolkit
#     without it needs --nvtx2-include (refused otherwise, before configure).
# Exit status: 0 built and installed with CUDA support; 1 any step failed (its log is printed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "build-scorep: $*" >&2; exit 1; }

SOURCE="" PREFIX="" CUDA="" JOBS=$(nproc 2>/dev/null || echo 4) MPI=none STUBS=0
BFD_INC="" BFD_LIB="" NVTX2="" BUILD="" STRIP=0 CANDIDATES=0 CHECK=0 LIST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --source) SOURCE=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --cuda) CUDA=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --mpi) MPI=$2; shift 2 ;;
    --cuda-stubs) STUBS=1; shift ;;
    --libbfd-include) BFD_INC=$2; shift 2 ;;
    --libbfd-lib) BFD_LIB=$2; shift 2 ;;
    --nvtx2-include) NVTX2=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --strip) STRIP=1; shift ;;
    --candidate-patches) CANDIDATES=1; shift ;;
    --check) CHECK=1; shift ;;
    --list-patches) LIST=1; shift ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[ -n "$SOURCE" ] || die "--source is required (scorep-X.Y.tar.gz or .tar.xz)"
[ -f "$SOURCE" ] || die "--source $SOURCE: no such file"
SOURCE=$(cd "$(dirname "$SOURCE")" && pwd)/$(basename "$SOURCE")
name=$(basename "$SOURCE")
VERSION=$(echo "$name" | sed -nE 's/^scorep-([0-9]+\.[0-9]+(\.[0-9]+)?)([-_][A-Za-z0-9]+)?\.tar\.(gz|xz|bz2)$/\1/p')
[ -n "$VERSION" ] || die "--source $name: expected a release tarball named scorep-X.Y[.Z][-TAG].tar.gz|xz|bz2"
MAJOR=${VERSION%%.*}
MINOR=$(echo "$VERSION" | cut -d. -f1,2)

patches=() statuses=()
series="$here/scorep-patches/series-$MINOR"
if [ -f "$series" ]; then
  while read -r file status _; do
    case "$file" in ''|'#'*) continue ;; esac
    [ -f "$here/scorep-patches/$file" ] || die "$series lists $file, which does not exist"
    case "$status" in
      verified) ;;
      candidate) [ "$CANDIDATES" = 1 ] || { echo "build-scorep: not applying candidate $file (--candidate-patches applies it)" >&2; continue; } ;;
      *) die "$series: $file has status '$status' (verified or candidate)" ;;
    esac
    patches+=("$here/scorep-patches/$file"); statuses+=("$status")
  done < "$series"
fi
for p in "$here"/scorep-patches/"$MINOR"-*.patch; do
  [ -f "$p" ] || continue
  { [ -f "$series" ] && grep -Eq "^$(basename "$p" | sed 's/[.]/[.]/g')[[:space:]]" "$series"; } \
    || die "$(basename "$p") is not listed in ${series#"$here"/} (FILE STATUS note): say whether it was verified"
done

if [ "$LIST" = 1 ]; then for i in "${!patches[@]}"; do echo "$(basename "${patches[$i]}") ${statuses[$i]}"; done; exit 0; fi
[ -n "$PREFIX" ] || die "--prefix is required"

if [ -z "$CUDA" ]; then
  if command -v nvcc >/dev/null; then CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")"); else CUDA=/usr/local/cuda; fi
fi
[ -f "$CUDA/include/cuda.h" ] || die "--cuda $CUDA: no include/cuda.h (not a CUDA toolkit)"
command -v nvcc >/dev/null || export PATH="$CUDA/bin:$PATH"
command -v nvcc >/dev/null || die "no nvcc on PATH or in $CUDA/bin (Score-P's configure needs a working nvcc)"

# CUPTI: extras/CUPTI (CUDA <= 12) or the toolkit's own targets/ folder (CUDA 13). Score-P takes
# --with-libcupti=DIR as DIR/include + DIR/lib64 (DIR/lib without lib64); the explicit
# --with-libcupti-include/-lib are ignored once --with-libcudart is given (it sets the default).
cupti_opts=()
if [ ! -f "$CUDA/extras/CUPTI/include/cupti.h" ]; then
  cupti_dir=""
  for d in "$CUDA/targets/$(uname -m)-linux" "$CUDA/targets/sbsa-linux" "$CUDA"; do
    if [ -d "$d/lib64" ]; then l=$d/lib64; else l=$d/lib; fi
    if [ -f "$d/include/cupti.h" ] && [ -e "$l/libcupti.so" ]; then cupti_dir=$d; break; fi
  done
  [ -n "$cupti_dir" ] || die "CUPTI not found in $CUDA (neither extras/CUPTI nor targets/*/{include/cupti.h,lib/libcupti.so})"
  cupti_opts=(--with-libcupti="$cupti_dir")
fi

# NVTX v2 headers for Score-P 8.x
cppflags=""
if [ "$MAJOR" -lt 9 ] && [ ! -f "$CUDA/include/nvToolsExt.h" ]; then
  [ -n "$NVTX2" ] || die "Score-P $VERSION needs the NVTX v2 header nvToolsExt.h, which $CUDA lacks (CUDA 13 has only NVTX3): give --nvtx2-include DIR"
  [ -f "$NVTX2/nvToolsExt.h" ] || die "--nvtx2-include $NVTX2: no nvToolsExt.h there"
  cppflags="-I$(cd "$NVTX2" && pwd)"
fi

bfd_opts=()
if [ -n "$BFD_INC$BFD_LIB" ]; then
  [ -f "$BFD_INC/bfd.h" ] || die "--libbfd-include $BFD_INC: no bfd.h there"
  ls "$BFD_LIB"/libbfd*.so* >/dev/null 2>&1 || die "--libbfd-lib $BFD_LIB: no libbfd*.so there"
  bfd_opts=(--with-libbfd-include="$BFD_INC" --with-libbfd-lib="$BFD_LIB")
  export LD_LIBRARY_PATH="$BFD_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LIBRARY_PATH="$BFD_LIB${LIBRARY_PATH:+:$LIBRARY_PATH}"
fi

cuda_opts=(--with-libcudart="$CUDA" --enable-cuda)
[ "$STUBS" = 1 ] && cuda_opts+=(--with-libcuda-lib="$CUDA/lib64/stubs")
if [ "$MPI" = none ]; then mpi_opts=(--without-mpi); else mpi_opts=("--with-mpi=$MPI"); fi

BUILD=${BUILD:-$(mktemp -d /var/tmp/scorep-build.XXXXXX)}
mkdir -p "$BUILD"
echo "build-scorep: Score-P $VERSION from $name, CUDA $CUDA, prefix $PREFIX, ${#patches[@]} patch(es), in $BUILD"
tar -xf "$SOURCE" -C "$BUILD"
src="$BUILD/scorep-$VERSION"
[ -x "$src/configure" ] || die "$name does not unpack to scorep-$VERSION/configure"
for p in "${patches[@]}"; do
  echo "build-scorep: applying $(basename "$p")"
  (cd "$src" && patch -p1 --forward --batch < "$p") || die "patch $(basename "$p") does not apply to $VERSION"
done
mkdir -p "$src/_build" && cd "$src/_build"
run_logged() {  # run_logged LOG CMD...: quiet on success, the log's tail on failure
  local log=$1; shift
  "$@" > "$log" 2>&1 || { echo "build-scorep: '$*' failed; end of $log:" >&2; tail -40 "$log" >&2; grep -n "error" "$log" | tail -20 >&2; exit 1; }
}
run_logged configure.log ../configure --prefix="$PREFIX" --enable-shared --without-shmem --without-gui \
    --disable-gcc-plugin "${mpi_opts[@]}" "${cuda_opts[@]}" "${cupti_opts[@]}" "${bfd_opts[@]}" \
    ${cppflags:+CPPFLAGS="$cppflags"}
run_logged make.log make -j"$JOBS"
run_logged install.log make install
if [ -n "$BFD_LIB" ]; then cp -a "$BFD_LIB"/libbfd*.so* "$PREFIX/lib/"; cp -a "$BFD_LIB"/libsframe*.so* "$BFD_LIB"/libopcodes*.so* "$PREFIX/lib/" 2>/dev/null || true; fi
mkdir -p "$PREFIX/share"
{ echo "Score-P $VERSION built by containers/build-scorep.sh"
  for i in "${!patches[@]}"; do p=${patches[$i]}; echo "patch: $(basename "$p") sha256 $(sha256sum "$p" | cut -d' ' -f1) ${statuses[$i]}"; done
} > "$PREFIX/share/scorep-patches.txt"
if [ "$STRIP" = 1 ]; then
  find "$PREFIX" -name "*.a" -delete
  find "$PREFIX/lib" -name "*.so*" -type f -exec strip --strip-debug {} + 2>/dev/null || true
fi
"$PREFIX/bin/scorep-info" config-summary > "$PREFIX/share/config-summary.txt"
grep -Eq "CUDA support:[[:space:]]*yes" "$PREFIX/share/config-summary.txt" || { cat "$PREFIX/share/config-summary.txt" >&2; die "Score-P was built without CUDA support"; }
grep -E "CUDA support|libcupti|CUDA version|NVTX" "$PREFIX/share/config-summary.txt" || true
if [ "$CHECK" = 1 ]; then
  echo "build-scorep: regression check of the patches (containers/scorep-patches/check/run.sh)"
  rc=0
  PATH="$PREFIX/bin:$PATH" LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    bash "$here/scorep-patches/check/run.sh" "$PREFIX" || rc=$?
  case $rc in
    0) ;;
    2) echo "build-scorep: WARNING: the regression check cannot run on this machine (it needs a CUDA GPU, torch, and for the overlap lab nvcc and compute capability 9.0): the patches are NOT CHECKED here" >&2 ;;
    *) die "the regression check of the patches failed" ;;
  esac
fi
echo "build-scorep: done ($PREFIX)"
