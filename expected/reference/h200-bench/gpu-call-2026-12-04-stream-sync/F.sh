#!/usr/bin/env bash
# GPU call F (2026-12-04, second session): what Score-P costs when loaded without CUDA recording
# (scorep-nocuda), beside kernel recording only (scorep-nodriver), torch.profiler and no tracer.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/f" /tmp/keep
finish() { cp "$O"/f/bench-f.json /tmp/keep/ 2>/dev/null; (cd "$O" && tar -czf f.tar.gz f && rm -rf f); ls -la "$O"; el done; }
trap finish EXIT
if [ -x /opt/scorep-launch/bin/scorep ]; then el "warm machine: call A's build"; else
  cat .gpu-run/inst/scorep-launch-install.tar.xz.part* | xz -d | tar -x -C /opt; el "cold machine: call A's build unpacked"; fi
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/f/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; cat /opt/scorep/share/scorep-patches.txt; } > "$O/f/machine.txt" 2>&1
left=$(( 470 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 12 --modes untraced,torch,scorep-nodriver,scorep-nocuda --budget-s $(( left - 110 )) --json "$O/f/bench-f.json" > "$O/f/bench-f.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/f/bench-f.log"; grep -v "^#" "$O/f/bench-f.log" | grep -v '"untraced"' | cut -c1-230 | tail -24
