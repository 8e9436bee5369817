#!/usr/bin/env bash
# GPU call L (2026-12-04, fourth session): what part of the no-driver floor is the CUPTI buffer size?
# Lockstep benchmark at 8x70 and 32x70: the bare CUPTI client with 4 MB and with 8 kB buffers, Score-P
# without `driver` and launch-only Score-P, each with its default 8 kB chunk and with 4 MB chunks;
# Score-P 8.4 with the three patches of the series (call H's build).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit-slim; O=${OUT:-/tmp/out}; C=${CALL:-l}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
cat .gpu-run/inst-h/scorep-overlap-install.tar.xz.part* | xz -d | tar -x -C /opt; ln -sfn /opt/scorep-overlap /opt/scorep; el "call H's build unpacked"
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; cat /opt/scorep/share/scorep-patches.txt
  nvcc --version | tail -2; for f in /opt/scorep/lib/libscorep_adapter_cuda*.so; do echo "$f"; ldd "$f" | grep -i cupti; done; } > "$O/$C/machine.txt" 2>&1
left=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 14 --configs 8x70,32x70 --budget-s $(( left - 110 )) \
    --modes untraced,scorep-launch,scorep-launch-chunk4m,scorep-nodriver,scorep-nodriver-chunk4m,cupti-kernels,cupti-kernels-8k \
    --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log"; grep -v "^#" "$O/$C/bench-$C.log" | grep -v '"untraced"' | cut -c1-220 | tail -16
python3 - "$O/$C/bench-$C.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("client", d.get("cupti_client"))
for m, c in d["counts"].items():
    print(m, [(e.get("round"), e.get("launches"), e.get("kernels"), e.get("error")) for e in c["experiments"]])
for r in d["rounds"]:
    p = r["processes"].get("cupti-kernels", {})
    print("round", r["round"], "micro" if r["micro"] else "", p.get("cupti_records"), r.get("error", "")[:200])
seen = {}
for r in d["rounds"]:
    for m, p in r["processes"].items():
        for msg in p.get("scorep_messages") or []:
            key = m + ": " + msg.split("Warning: ")[-1][:70]
            seen[key] = seen.get(key, 0) + 1
for k, n in sorted(seen.items()):
    print(n, k)
PY
