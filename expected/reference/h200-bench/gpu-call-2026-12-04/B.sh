#!/usr/bin/env bash
# GPU call B (2026-12-04): the Score-P sets and their torch twins, recorded side by side
# (reference_run.sh --tracer scorep:1 --tracer torch:1 --batch "8 32"), with call A's Score-P build.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/b" /tmp/pk
finish() { tar -cf "$O/sets.tar" -C /tmp/pk . 2>/dev/null; (cd "$O" && tar -czf b.tar.gz b && rm -rf b); ls -la "$O"; el done; }
trap finish EXIT
if [ -x /opt/scorep-launch/bin/scorep ]; then el "warm machine: call A's build"; else
  cat .gpu-run/inst/scorep-launch-install.tar.xz.part* | xz -d | tar -x -C /opt; el "cold machine: call A's build unpacked"; fi
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/b/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
cat /opt/scorep/share/scorep-patches.txt
timeout 560 bash scripts/reference_run.sh --tracer scorep:1 --tracer torch:1 --batch "8 32" --repeats 1 --steps 20 --warmup 5 \
    --no-busbw --bench none --kit "$K" --budget 420 --name h200-scorep --pack /tmp/pk /tmp/rr > "$O/b/sets.log" 2>&1
el "sets rc=$?"; grep "reference_run:" "$O/b/sets.log" | tail -12
