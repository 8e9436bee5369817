#!/usr/bin/env bash
# GPU call E (2026-12-04 session 2), a second run of call D on a fresh machine: the lockstep tracing-cost benchmark with --step-sync stream
# (no per-step CUPTI flush) and the sixth mode scorep-launch-chunk4m, with call A's Score-P build.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/e" /tmp/keep
finish() { cp "$O"/e/bench-e.json /tmp/keep/ 2>/dev/null; (cd "$O" && tar -czf e.tar.gz e && rm -rf e); ls -la "$O"; el done; }
trap finish EXIT
if [ -x /opt/scorep-launch/bin/scorep ]; then el "warm machine: call A's build"; else
  cat .gpu-run/inst/scorep-launch-install.tar.xz.part* | xz -d | tar -x -C /opt; el "cold machine: call A's build unpacked"; fi
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/e/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; cat /opt/scorep/share/scorep-patches.txt; } > "$O/e/machine.txt" 2>&1
left=$(( 578 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 12 --budget-s $(( left - 110 )) --json "$O/e/bench-e.json" > "$O/e/bench-e.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/e/bench-e.log"; grep -v "^#" "$O/e/bench-e.log" | grep -v '"untraced"' | cut -c1-230 | tail -24
