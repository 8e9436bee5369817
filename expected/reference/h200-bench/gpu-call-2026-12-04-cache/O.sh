#!/usr/bin/env bash
# GPU calls O and P (2026-12-04, fifth session): call N's build (Score-P 8.4 with the four patches of
# the series, the candidate 8.4-cupti-stream-ref-cache.patch too) unpacked; with CHECK=1 first the
# patches' regression check (its stream-reuse lab included); then call N's lockstep benchmark again.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit-slim; O=${OUT:-/tmp/out}; C=${CALL:-o}
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
  nvcc --version | tail -2; for f in /opt/scorep/lib/libscorep_adapter_cuda*.so; do echo "$f"; ldd "$f" | grep -i cupti; done; } > "$O/$C/machine.txt" 2>&1
if [ "${CHECK:-0}" = 1 ]; then
  timeout 170 bash containers/scorep-patches/check/run.sh /opt/scorep > "$O/$C/check-$C.log" 2>&1; el "regression check rc=$?"; cat "$O/$C/check-$C.log"
fi
left=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 14 --configs 8x70,32x70 --budget-s $(( left - 100 )) --no-micro \
    --modes untraced,torch,cupti-kernels,cupti-launch,scorep-nodriver-chunk4m,scorep-launch-chunk4m,scorep-launch-nocache-chunk4m \
    --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log"; grep -v "^#" "$O/$C/bench-$C.log" | grep -v '"untraced"' | cut -c1-200 | tail -16
python3 - "$O/$C/bench-$C.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for m, c in d["counts"].items():
    print(m, [(e.get("round"), e.get("launches"), e.get("kernels"), e.get("error")) for e in c["experiments"]])
for r in d["rounds"]:
    print("round", r["round"], {m: (p["cupti_records"]["kernels"], p["cupti_records"]["dropped"], p["cupti_records"]["driver_callbacks"]) for m, p in r["processes"].items() if p.get("cupti_records")}, r.get("error", "")[:200])
seen = {}
for r in d["rounds"]:
    for m, p in r["processes"].items():
        for msg in p.get("scorep_messages") or []:
            key = m + ": " + msg.split("Warning: ")[-1][:70]
            seen[key] = seen.get(key, 0) + 1
for k, n in sorted(seen.items()):
    print(n, k)
PY
