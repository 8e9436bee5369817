#!/usr/bin/env bash
# GPU call U (2026-12-05, thirteenth session): whether the cost of the default Score-P mode beyond the bare CUPTI
# client lies in the two callback domains Score-P enables beside its driver callbacks (resource and
# synchronisation), which the bare client did not. Lockstep rounds of no tracer, the bare client with the launch
# callbacks (cupti-launch), the same client with the resource and synchronisation domains as well
# (cupti-launch-domains), the default mode (scorep-launch-chunk4m) and the default mode with the synchronisation
# domain held back by the preloaded scripts/cupti_domain_filter.c (scorep-launch-nosync-chunk4m), with call N's
# build (Score-P 8.4 with the four patches of the series). A one-round smoke first: a mode that fails there is
# left out.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit-slim; O=${OUT:-/tmp/out}; C=${CALL:-u}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
[ -x /opt/scorep-cache/bin/scorep ] || cat .gpu-run/inst-n/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt
ln -sfn /opt/scorep-cache /opt/scorep; el "call N's build in place"
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "rev $DNABERT_SCALING_REVISION"; nproc; uname -a; cat /opt/scorep/share/scorep-patches.txt
  grep -m1 "^model name" /proc/cpuinfo; grep -m1 -o -w "constant_tsc\|nonstop_tsc\|tsc_known_freq\|tsc_reliable" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  grep -m1 "^flags" /proc/cpuinfo | tr ' ' '\n' | grep -c . ; } > "$O/$C/machine.txt" 2>&1
MODES=untraced,cupti-launch,cupti-launch-domains,scorep-launch-chunk4m,scorep-launch-nosync-chunk4m
timeout 150 python3 scripts/bench_trace.py --rounds 1 --configs 8x70 --warmup 1 --steps 3 --no-micro --count first \
    --modes $MODES --json "$O/$C/smoke-$C.json" > "$O/$C/smoke-$C.log" 2>&1
el "smoke rc=$?"; tail -5 "$O/$C/smoke-$C.log" | cut -c1-300
MODES=$(python3 - "$O/$C/smoke-$C.json" "$MODES" <<'PY'
import json, sys
try:
    procs = json.load(open(sys.argv[1]))["rounds"][0]["processes"]
except Exception as exc:  # no smoke output: keep the modes, the rounds will show what fails
    print(sys.argv[2]); print(f"smoke unreadable: {exc}", file=sys.stderr); sys.exit(0)
keep = [m for m in sys.argv[2].split(",") if procs.get(m, {}).get("exit_status") == 0]
print(",".join(keep))
print("smoke:", {m: p.get("exit_status") for m, p in procs.items()}, file=sys.stderr)
print("smoke counts:", {m: {k: p.get(k) for k in ("cupti_records", "domain_filter") if k in p} for m, p in procs.items()}, file=sys.stderr)
PY
)
el "modes: $MODES"
left=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 30 --configs 8x70,32x70 --budget-s $(( left - 75 )) --no-micro --count first \
    --modes "$MODES" --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log" | cut -c1-300
python3 - "$O/$C/bench-$C.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["modes"]:
    keys = ("mode", "config", "ratio_median", "ratio_min", "ratio_max", "rounds", "step_ms_median", "proc_cpu_ms_median", "kernels_found_share", "cupti_domain_callbacks", "domain_filter_held_back")
    print({k: m.get(k) for k in keys})
for r in d["rounds"]:
    if r.get("error"):
        print("round", r["round"], "error", r["error"][:300])
seen = set()
for r in d["rounds"]:
    for m, p in r.get("processes", {}).items():
        for line in p.get("scorep_messages") or []:
            if (m, line) not in seen:
                seen.add((m, line)); print("message", m, line[:300])
PY
