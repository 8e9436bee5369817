#!/usr/bin/env bash
# GPU call I (2026-12-04 session 3): the lockstep tracing-cost benchmark (steps on their stream,
# every round's Score-P experiment counted) with call H's build: Score-P 8.4 with the three
# patches of the series, 8.4-cupti-overlap-kept.patch included.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/i"
finish() { (cd "$O" && tar -czf i.tar.gz i && rm -rf i); ls -la "$O"; el done; }
trap finish EXIT
cat .gpu-run/inst-h/scorep-overlap-install.tar.xz.part* | xz -d | tar -x -C /opt; ln -sfn /opt/scorep-overlap /opt/scorep; el "call H's build unpacked"
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/i/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; cat /opt/scorep/share/scorep-patches.txt; } > "$O/i/machine.txt" 2>&1
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 12 --no-micro --budget-s $(( left - 105 )) \
    --json "$O/i/bench-i.json" > "$O/i/bench-i.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/i/bench-i.log"; grep -v "^#" "$O/i/bench-i.log" | grep -v '"untraced"' | cut -c1-200 | tail -12
python3 - "$O/i/bench-i.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for m, c in d["counts"].items():
    print(m, [(e.get("round"), e.get("launches"), e.get("kernels"), e.get("error")) for e in c["experiments"]])
seen = {}
for r in d["rounds"]:
    for m, p in r["processes"].items():
        for msg in p.get("scorep_messages") or []:
            key = msg.split("Warning: ")[-1][:70]
            seen[key] = seen.get(key, 0) + 1
for k, n in sorted(seen.items()):
    print(n, k)
PY
