#!/usr/bin/env bash
# GPU call B (lead), on A's warm machine: the Score-P rehearsal (ws 1,2,4, bucket hook on) with the
# launch-only build, then the tracing-cost benchmark (scripts/bench_trace.py, rounds of short processes).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run; O=${OUT:-/tmp/out}
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/w" /tmp/pk-rs
finish() { tar -cf "$O/rehearsal-scorep.tar" -C /tmp/pk-rs . 2>/dev/null; (cd "$O" && tar -czf bench.tar.gz w && rm -rf w); ls -la "$O"; el done; }
trap finish EXIT
cd "$R" || exit 1
if [ -x /opt/scorep-launch/bin/scorep ]; then rm -rf /opt/scorep; ln -s /opt/scorep-launch /opt/scorep; else el "COLD machine: the kit's stream-order-only install"; fi
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/w/setup.log" 2>&1; export PYTHONPATH=$R/artifact:$PYTHONPATH; el setup
cat /opt/scorep/share/scorep-patches.txt
timeout 240 bash scripts/reference_run.sh --rehearse --tracer scorep:1,2,4 --bucket-hook on --steps 5 --warmup 3 --budget 150 \
    --kit "$K" --pack /tmp/pk-rs /tmp/rr-scorep > "$O/w/rehearsal-scorep.log" 2>&1
el "scorep rehearsal rc=$?"; grep "reference_run:" "$O/w/rehearsal-scorep.log" | tail -6
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 5 --budget-s $(( left - 75 )) --configs 8x70,32x70,128x128 \
    --json "$O/w/bench-trace-scorep.json" > "$O/w/bench.log" 2>&1
el "bench rc=$?"; grep -v "^# round" "$O/w/bench.log" | tail -30
