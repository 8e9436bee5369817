#!/usr/bin/env bash
# GPU call H (2026-12-04 session 3): the patches' regression check, its new overlap lab included,
# against call G's build (the kernel writer as released: the contrast); Score-P 8.4 rebuilt with
# the series' candidate 8.4-cupti-overlap-kept.patch; the same check against that build, which
# must pass; the new build packed for call I.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/h"
finish() { cp /tmp/build.log "$O/h/build.log" 2>/dev/null; (cd "$O" && tar -czf h.tar.gz h && rm -rf h); ls -la "$O"; el done; }
trap finish EXIT
{ nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; nvcc --version | tail -2; } > "$O/h/machine.txt" 2>&1
cat .gpu-run/inst-g/scorep-launch-install.tar.xz.part* | xz -d | tar -x -C /opt; el "call G's build unpacked"
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
mkdir -p /tmp/bfd; tar -xJf .gpu-run/bfd/bfd-slim.tar.xz -C /tmp/bfd
bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-overlap --jobs 14 --strip \
    --candidate-patches --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu \
    --nvtx2-include "$K/nvtx2" --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1 &
BUILD=$!
ln -sfn /opt/scorep-launch /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/h/setup-g.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el "setup (G's build)"
timeout 200 bash containers/scorep-patches/check/run.sh /opt/scorep-launch > "$O/h/check-g.log" 2>&1; el "check against G's build rc=$?"; cat "$O/h/check-g.log"
wait $BUILD; el "build rc=$?"
[ -x /opt/scorep-overlap/bin/scorep ] || { grep -n "error" /tmp/build.log | tail -20; exit 1; }
cat /opt/scorep-overlap/share/scorep-patches.txt | tee -a "$O/h/machine.txt"
ln -sfn /opt/scorep-overlap /opt/scorep; rm -rf /tmp/site /tmp/scorep-bindings
source "$K/setup-on-gpu.sh" "$K" > "$O/h/setup-h.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el "setup (new build)"
( tar -C /opt -cf - scorep-overlap | xz -T4 -6 > /tmp/scorep-overlap-install.tar.xz
  split -b 15m -d /tmp/scorep-overlap-install.tar.xz "$O/scorep-overlap-install.tar.xz.part"
  sha256sum /tmp/scorep-overlap-install.tar.xz > "$O/scorep-overlap-install.sha256" ) &
PACK=$!
timeout 200 bash containers/scorep-patches/check/run.sh /opt/scorep-overlap > "$O/h/check-h.log" 2>&1; el "check against the new build rc=$?"; cat "$O/h/check-h.log"
wait $PACK; el "packed: $(ls "$O" | grep -c part) parts"
