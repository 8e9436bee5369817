#!/usr/bin/env bash
# GPU call C (2026-12-04, sixth session): where the CPU time of a step goes, on every thread. Call N's
# build unpacked; one lockstep round with the stack sampler on each child's CPU time, every
# thread (100 measured steps per configuration); then lockstep rounds (torch too) recording each
# step's time in its closing synchronisation, CPU time and page faults.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit-slim; O=${OUT:-/tmp/out}; C=${CALL:-c}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
[ -x /opt/scorep-cache/bin/scorep ] || cat .gpu-run/inst-n/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt
ln -sfn /opt/scorep-cache /opt/scorep; el "call N's build unpacked"
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; echo "rev $DNABERT_SCALING_REVISION"; cat /opt/scorep/share/scorep-patches.txt; } > "$O/$C/machine.txt" 2>&1
MODES=untraced,cupti-kernels,cupti-launch,scorep-nodriver-chunk4m,scorep-launch-chunk4m; BENCH_MODES=untraced,torch,${MODES#untraced,}
timeout 200 python3 scripts/bench_trace.py --rounds 1 --configs 8x70,32x70 --steps 100 --no-micro --count first \
    --modes $MODES --sample "$O/$C/samples" --json "$O/$C/sampled-$C.json" > "$O/$C/sampled-$C.log" 2>&1
el "sampled round rc=$?"
python3 scripts/host_profile.py "$O/$C/samples" --bench "$O/$C/sampled-$C.json" --top 60 --json "$O/$C/profile-$C.json" > "$O/$C/profile-$C.txt" 2>&1
el "profile rc=$?"
left=$(( ${TOTAL_S:-330} - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 14 --configs 8x70,32x70 --budget-s $(( left - 110 )) --no-micro \
    --modes $BENCH_MODES --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log"
python3 - "$O/$C/sampled-$C.json" "$O/$C/bench-$C.json" <<'PY'
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    for r in d["modes"]:
        print(f"{f.split('/')[-1]} {r['mode']:26s} {r['config']:6s} x{r['ratio_median']:.3f} step {r['step_ms_median']:.1f} cpu {r.get('cpu_ms_median') or 0:.1f} proc {r.get('proc_cpu_ms_median') or 0:.1f} sync {r.get('sync_ms_median') or 0:.2f} n={r['rounds']}")
PY
