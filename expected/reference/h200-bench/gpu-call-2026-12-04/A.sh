#!/usr/bin/env bash
# GPU call A (2026-12-04): Score-P 8.4 built with the project's patch series (both verified), packed
# for later calls; the patches' regression check; the lockstep tracing-cost benchmark.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/a"
finish() { cp /tmp/build.log "$O/a/" 2>/dev/null; (cd "$O" && tar -czf a.tar.gz a && rm -rf a); ls -la "$O"; el done; }
trap finish EXIT
{ nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; echo "rev $DNABERT_SCALING_REVISION"; nproc; lscpu | grep -E "Model name|NUMA|Thread"; } > "$O/a/machine.txt" 2>&1
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
mkdir -p /tmp/bfd; tar -xJf .gpu-run/bfd/bfd-slim.tar.xz -C /tmp/bfd
bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-launch --jobs 16 --strip \
    --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu --nvtx2-include "$K/nvtx2" \
    --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; el "build rc=$?"
[ -x /opt/scorep-launch/bin/scorep ] || { grep -n "error" /tmp/build.log | tail -20; exit 1; }
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep; cat /opt/scorep/share/scorep-patches.txt
( tar -C /opt -cf - scorep-launch | xz -T8 -6 > /tmp/scorep-launch-install.tar.xz
  split -b 15m -d /tmp/scorep-launch-install.tar.xz "$O/scorep-launch-install.tar.xz.part"
  sha256sum /tmp/scorep-launch-install.tar.xz > "$O/scorep-launch-install.sha256" ) &
PACK=$!
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/a/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
wait $PACK; el "packed: $(ls -la "$O" | grep part | wc -l) parts"
timeout 150 bash containers/scorep-patches/check/run.sh /opt/scorep > "$O/a/check.log" 2>&1; el "regression check rc=$?"; tail -4 "$O/a/check.log"
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 12 --budget-s $(( left - 100 )) --configs 8x70,32x70,128x128 \
    --json "$O/a/bench-trace-scorep.json" > "$O/a/bench.log" 2>&1
el "bench rc=$?"; grep -v "^# round" "$O/a/bench.log" | grep -v '"untraced"' | tail -20; grep "^# round" "$O/a/bench.log"
