#!/usr/bin/env bash
# GPU call C (2026-12-04): more rounds of the lockstep benchmark, unpinned (to join call A's) and
# pinned to CPUs 2-9 (is the step-to-step noise the scheduler's?).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/c"
finish() { (cd "$O" && tar -czf c.tar.gz c && rm -rf c); ls -la "$O"; el done; }
trap finish EXIT
if [ -x /opt/scorep-launch/bin/scorep ]; then el "warm machine: call A's build"; else
  cat .gpu-run/inst/scorep-launch-install.tar.xz.part* | xz -d | tar -x -C /opt; el "cold machine: call A's build unpacked"; fi
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/c/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
lscpu -e > "$O/c/lscpu.txt" 2>&1; nvidia-smi topo -m >> "$O/c/lscpu.txt" 2>&1
timeout 290 python3 scripts/bench_trace.py --rounds 5 --budget-s 190 --no-micro --json "$O/c/bench-unpinned.json" > "$O/c/bench-unpinned.log" 2>&1
el "unpinned rc=$?"; grep "^# round" "$O/c/bench-unpinned.log"
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 5 --budget-s $(( left - 90 )) --no-micro --cpus 2-9 --json "$O/c/bench-pinned.json" > "$O/c/bench-pinned.log" 2>&1
el "pinned rc=$?"; grep "^# round" "$O/c/bench-pinned.log"
for f in unpinned pinned; do echo "== $f"; grep '"scorep-launch"\|"torch"\|"scorep-nodriver"' "$O/c/bench-$f.log" | cut -c1-260; done
