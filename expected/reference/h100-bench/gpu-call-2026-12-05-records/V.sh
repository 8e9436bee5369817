#!/usr/bin/env bash
# GPU call V (2026-12-05, fourteenth session): what launch records cost when CUPTI writes them as activity
# records (no callback, no tracer code on the launch path; cupti-launch-records), beside the bare client
# without launch records (cupti-kernels), with launch callbacks (cupti-launch) and the default Score-P mode,
# in lockstep rounds with no tracer, at 8x70 and 32x70. BUILD=1: Score-P 8.4 built first with the series'
# verified patches (the build the artifact ships) and packed into $OUT for a later call; otherwise the
# carried pack is unpacked. A one-round smoke first: a mode that fails there is left out.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}; C=${CALL:-v}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { cp /tmp/build.log "$O/$C/build.log" 2>/dev/null; (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
if [ "${BUILD:-0}" = 1 ] && [ ! -x /opt/scorep-cache/bin/scorep ]; then
  mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
  bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-cache --jobs 16 --strip \
      --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu \
      --nvtx2-include "$K/nvtx2" --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; el "build rc=$?"
  if [ -x /opt/scorep-cache/bin/scorep ]; then
    tar -C /opt -cf - scorep-cache | xz -T16 -6 > /tmp/scorep-cache-install.tar.xz
    split -b 15m -d /tmp/scorep-cache-install.tar.xz "$O/scorep-cache-install.tar.xz.part"
    sha256sum /tmp/scorep-cache-install.tar.xz > "$O/scorep-cache-install.sha256"; el "packed: $(ls "$O" | grep -c part) parts"
  else
    grep -n "error" /tmp/build.log | tail -20
  fi
elif [ ! -x /opt/scorep-cache/bin/scorep ] && ls .gpu-run/inst-v/scorep-cache-install.tar.xz.part* > /dev/null 2>&1; then
  cat .gpu-run/inst-v/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt; el unpacked
fi
MODES=untraced,cupti-kernels,cupti-launch,cupti-launch-records
if [ -x /opt/scorep-cache/bin/scorep ]; then
  ln -sfn /opt/scorep-cache /opt/scorep
  # shellcheck disable=SC1091
  source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; el setup
  MODES=$MODES,scorep-launch-chunk4m
else
  mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$K"/wheels/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$ROOT/artifact:$PYTHONPATH
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "rev $DNABERT_SCALING_REVISION"; nproc; uname -a; cat /opt/scorep/share/scorep-patches.txt
  grep -m1 "^model name" /proc/cpuinfo; } > "$O/$C/machine.txt" 2>&1
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
print("smoke counts:", {m: p.get("cupti_records") for m, p in procs.items() if p.get("cupti_records")}, file=sys.stderr)
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
    keys = ("mode", "config", "ratio_median", "ratio_min", "ratio_max", "rounds", "step_ms_median", "kernels_found_share", "cupti_kernel_records", "cupti_launch_records", "cupti_linked_kernels")
    print({k: m.get(k) for k in keys})
for r in d["rounds"]:
    if r.get("error"):
        print("round", r["round"], "error", r["error"][:300])
PY
