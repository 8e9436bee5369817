#!/usr/bin/env bash
# GPU call A (2026-12-04, sixth session): where launch-only Score-P's host time goes. Call N's build
# (Score-P 8.4 with the four patches of the series) unpacked; one lockstep round with the stack
# sampler (scripts/host_sampler.c) in every child, 100 measured steps per configuration; then
# lockstep rounds recording each step's page faults and thread CPU time, with the per-call loops
# (page-fault cost included) in the second round.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit-slim; O=${OUT:-/tmp/out}; C=${CALL:-a}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
[ -x /opt/scorep-cache/bin/scorep ] || cat .gpu-run/inst-n/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt
ln -sfn /opt/scorep-cache /opt/scorep; el "call N's build unpacked"
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; cat /opt/scorep/share/scorep-patches.txt
  uname -a; command -v nm addr2line; cat /proc/sys/kernel/perf_event_paranoid 2>&1; } > "$O/$C/machine.txt" 2>&1
SAMPLE_MODES=untraced,cupti-kernels,cupti-launch,scorep-nodriver-chunk4m,scorep-launch-chunk4m
timeout 200 python3 scripts/bench_trace.py --rounds 1 --configs 8x70,32x70 --steps 100 --no-micro --count first \
    --modes $SAMPLE_MODES --sample "$O/$C/samples" --json "$O/$C/sampled-$C.json" > "$O/$C/sampled-$C.log" 2>&1
el "sampled round rc=$?"; grep -v '"untraced"' "$O/$C/sampled-$C.log" | cut -c1-400 | tail -12
python3 scripts/host_profile.py "$O/$C/samples" --bench "$O/$C/sampled-$C.json" --top 40 --json "$O/$C/profile-$C.json" > "$O/$C/profile-$C.txt" 2>&1
el "profile rc=$?"; grep -A14 "^## \|library self" "$O/$C/profile-$C.txt" | grep -v "^--" | head -120
left=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 14 --configs 8x70,32x70 --budget-s $(( left - 110 )) \
    --modes untraced,torch,cupti-kernels,cupti-launch,scorep-nodriver-chunk4m,scorep-launch-chunk4m \
    --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log"; grep -v "^#" "$O/$C/bench-$C.log" | grep -v '"untraced"' | cut -c1-420 | tail -16
