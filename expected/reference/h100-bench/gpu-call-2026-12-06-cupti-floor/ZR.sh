#!/usr/bin/env bash
# GPU call ZR (2026-12-06, twentieth session): the records mode is the artifact's default now (31731e8);
# with call Z's CPU-built five-patch Score-P (.gpu-run/inst-z, as Z.sh sets it up):
#   PART=sets   re-record the Score-P reference sets in the default mode: h200-scorep-b8/-b32 and their torch
#               twins (as 2026-12-04's B.sh), then the Score-P rehearsal ws 1,2,4 (as 2026-12-03's B.sh)
#   PART=bench  lockstep rounds at 8x70 and 32x70 of MODES (default: untraced, torch, records, launch)
#   PART=check  containers/scorep-patches/check/run.sh (the patch labs), then rounds with the time left
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}; C=${CALL:-zr}; PART=${PART:-sets}; TOTAL=${TOTAL_S:-575}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C" /tmp/pk
finish() { [ "$PART" = sets ] && cp /tmp/pk/*.tar.xz /tmp/pk/ref.log "$O/" 2>/dev/null
  (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
if [ ! -x /opt/scorep-cache/bin/scorep ]; then
  cat .gpu-run/inst-z/scorep-cache-install.tar.xz.part* | sha256sum > "$O/$C/inst-z.sha256"
  cat .gpu-run/inst-z/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt; el "unpacked the CPU-built install"
  mkdir -p /var/tmp/scorep-z; ln -sfn "$CUDA" /var/tmp/scorep-z/cuda
  mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
  mkdir -p /tmp/oldsp; xz -dc "$K/scorep-8.4-patched-install-cuda13.tar.xz" | tar -x -C /tmp/oldsp --wildcards '*/lib/python3.12/*'
  cp -a /tmp/oldsp/*/lib/python3.12 /opt/scorep-cache/lib/ && el "python3.12 otf2 module from the kit's install"
else el "warm machine: install kept"; fi
ln -sfn /opt/scorep-cache /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; el setup
export PYTHONPATH=$ROOT/artifact:$PYTHONPATH
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "rev $DNABERT_SCALING_REVISION"; nproc; uname -a; cat /opt/scorep/share/scorep-patches.txt
  python3 -c 'from dnabert_scaling.run.tracing.scorep import default_driver_callbacks as d; print("default driver callbacks:", d())'
  grep -m1 "^model name" /proc/cpuinfo; } > "$O/$C/machine.txt" 2>&1
grep "default driver" "$O/$C/machine.txt"
CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o 'H[0-9][0-9]*' | tr 'H' 'h'); CARD=${CARD:-gpu}; el "card $CARD"
if [ "$PART" = sets ]; then
  timeout 330 bash scripts/reference_run.sh --tracer scorep:1 --tracer torch:1 --batch "8 32" --repeats 1 --steps 20 --warmup 5 \
      --no-busbw --bench none --kit "$K" --budget 260 --name $CARD-scorep --pack /tmp/pk /tmp/rr > "$O/$C/sets.log" 2>&1
  el "sets rc=$?"; grep "reference_run:" "$O/$C/sets.log" | tail -8
  left=$(( TOTAL - ($(date +%s) - T0) - 25 ))
  mkdir -p /tmp/pk/rs
  timeout $left bash scripts/reference_run.sh --rehearse --tracer scorep:1,2,4 --bucket-hook on --steps 5 --warmup 3 \
      --budget $(( left - 90 )) --kit "$K" --name $CARD --pack /tmp/pk/rs /tmp/rr-scorep > "$O/$C/rehearsal-scorep.log" 2>&1
  el "scorep rehearsal rc=$?"; grep "reference_run:" "$O/$C/rehearsal-scorep.log" | tail -6
  for f in /tmp/pk/rs/*; do cp "$f" "$O/rs-$(basename "$f")"; done
  cp /tmp/rr/ref.log "$O/$C/sets-ref.log" 2>/dev/null; cp /tmp/rr-scorep/ref.log "$O/$C/rehearsal-ref.log" 2>/dev/null
  exit 0
fi
if [ "$PART" = check ]; then
  ct=$(( TOTAL - ($(date +%s) - T0) - 10 )); [ $ct -gt 240 ] && ct=240
  timeout $ct bash containers/scorep-patches/check/run.sh /opt/scorep > "$O/$C/check.log" 2>&1
  el "check rc=$?"; grep -E '^\{"lab"|check_patches:' "$O/$C/check.log" | cut -c1-300
fi
MODES=${MODES:-untraced,torch,scorep-records-chunk4m,scorep-launch-chunk4m}; CONFIGS=${CONFIGS:-8x70,32x70}; ROUNDS=${ROUNDS:-30}
left=$(( TOTAL - ($(date +%s) - T0) ))
if [ $left -lt 120 ]; then el "no time left for rounds ($left s)"; exit 0; fi
timeout $left python3 scripts/bench_trace.py --rounds $ROUNDS --configs $CONFIGS --budget-s $(( left - 75 )) --no-micro --count first \
    --modes "$MODES" --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log" | cut -c1-300
python3 - "$O/$C/bench-$C.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["modes"]:
    keys = ("mode", "config", "ratio_median", "ratio_min", "ratio_max", "rounds", "step_ms_median", "kernels_found_share", "kernels_linked", "trace_bytes_per_step")
    print({k: m.get(k) for k in keys})
for r in d["rounds"]:
    if r.get("error"):
        print("round", r["round"], "error", r["error"][:300])
PY
