#!/usr/bin/env bash
# GPU call Z (2026-12-05, seventeenth session): Y.sh, but Score-P comes built: containers/scorep-patches/check/cpu-build.sh
# built it on the project's CPU VM (CUDA 13.0.85 wheels, a stand-in libcuda, prefix /opt/scorep-cache, work folder
# /var/tmp/scorep-z), packed into .gpu-run/inst-z. Here the build's CUDA folder is pointed at this machine's toolkit
# (the install's RUNPATH and scorep-config name it), and the old kit install lends its python3.12 otf2 module (the
# same OTF2 3.0.3; the CPU build's is for 3.11). If the CPU-built install cannot trace (verify run fails), it is
# built here as Y.sh's BUILD=1 does, and the verify run repeats. Otherwise as Y.sh:
# (Y.sh's header:) X.sh with the verify run before the patch check, MODES settable, the
# check's time limited to what is left): Score-P 8.4 with the series and the candidate
# 8.4-cupti-launch-records.patch (SCOREP_CUDA_DRIVER_CALLBACKS=records: the launches from CUPTI's activity
# records, no callback on the launch path). BUILD=1: built here (--candidate-patches) and packed into $OUT
# for a later call; else the carried pack (.gpu-run/inst-y) is unpacked, or a warm machine's install kept.
# VERIFY=1: a DNABERT-2 run traced in records mode, counted by scripts/scorep_count.py and analysed by the
# artifact (completeness by correlation id). CHECK=1: check/run.sh (the patch labs). Then lockstep rounds at
# 8x70 and 32x70 of MODES (default: untraced, torch.profiler, the default mode (launch callbacks), records mode).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}; C=${CALL:-z}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { cp /tmp/build.log "$O/$C/build.log" 2>/dev/null; (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
build_here() {
  rm -rf /opt/scorep-cache
  mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
  bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-cache --jobs 16 --strip \
      --candidate-patches --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu \
      --nvtx2-include "$K/nvtx2" --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; el "build here rc=$?"
  echo "built on the GPU machine" > "$O/$C/built-where.txt"
}
if [ ! -x /opt/scorep-cache/bin/scorep ] && ls .gpu-run/inst-z/scorep-cache-install.tar.xz.part* > /dev/null 2>&1; then
  cat .gpu-run/inst-z/scorep-cache-install.tar.xz.part* | sha256sum > "$O/$C/inst-z.sha256"
  cat .gpu-run/inst-z/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt; el "unpacked the CPU-built install"
  mkdir -p /var/tmp/scorep-z; ln -sfn "$CUDA" /var/tmp/scorep-z/cuda  # the build's toolkit path, as RUNPATH and scorep-config name it
  mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done  # the build's libbfd path, likewise
  mkdir -p /tmp/oldsp; xz -dc "$K/scorep-8.4-patched-install-cuda13.tar.xz" | tar -x -C /tmp/oldsp --wildcards '*/lib/python3.12/*'
  cp -a /tmp/oldsp/*/lib/python3.12 /opt/scorep-cache/lib/ && el "python3.12 otf2 module from the kit's install"
  echo "built on the CPU VM (cpu-build.sh), run here against $CUDA" > "$O/$C/built-where.txt"
  ldd /opt/scorep-cache/lib/libscorep_adapter_cuda_mgmt.so > "$O/$C/ldd-adapter.txt" 2>&1
elif [ "${BUILD:-0}" = 1 ] && [ ! -x /opt/scorep-cache/bin/scorep ]; then
  build_here
fi
[ -x /opt/scorep-cache/bin/scorep ] || { el "no Score-P"; exit 1; }
ln -sfn /opt/scorep-cache /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; el setup
{ scorep-config --thread=pthread --mpp=none --cuda --ldflags; scorep-config --thread=pthread --mpp=none --cuda --libs; scorep-info config-summary | grep -iE "cuda|cupti"; } >> "$O/$C/setup.log" 2>&1
export PYTHONPATH=$ROOT/artifact:$PYTHONPATH
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "rev $DNABERT_SCALING_REVISION"; nproc; uname -a; cat /opt/scorep/share/scorep-patches.txt
  grep -m1 "^model name" /proc/cpuinfo; } > "$O/$C/machine.txt" 2>&1
MODES=${MODES:-untraced,torch,scorep-launch-chunk4m,scorep-records-chunk4m}
if [ "${VERIFY:-0}" = 1 ]; then
  for mode in records; do
   for attempt in 1 2; do
    SCOREP_CUDA_DRIVER_CALLBACKS=$mode timeout 150 python3 -m dnabert_scaling train --tracer scorep --model base --synthetic \
        --batch-size 8 --steps 10 --warmup-steps 3 --no-progress --out /tmp/runs/$mode-b8 > "$O/$C/verify-$mode-train.log" 2>&1
    echo "train rc=$?" >> "$O/$C/verify-$mode-train.log"
    x=/tmp/runs/$mode-b8/traces/scorep-rank0
    python3 scripts/scorep_count.py "$x" --json "$O/$C/verify-$mode.count.json" > "$O/$C/verify-$mode.count.txt" 2>&1
    { du -sb "$x"; grep -i "cuda" "$x/scorep.cfg"; otf2-print -G "$x/traces.otf2" 2>/dev/null | grep -c "CUDA launches"; } >> "$O/$C/verify-$mode-train.log" 2>&1
    python3 -m dnabert_scaling analyze /tmp/runs/$mode-b8 --out /tmp/an/$mode-b8 > "$O/$C/verify-$mode-analyze.log" 2>&1
    echo "analyze rc=$?" >> "$O/$C/verify-$mode-analyze.log"; cp /tmp/an/$mode-b8/metrics.json "$O/$C/verify-$mode.metrics.json" 2>/dev/null
    python3 - /tmp/runs/$mode-b8 > "$O/$C/verify-$mode.completeness.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
from dnabert_scaling.analysis.completeness import trace_completeness
from dnabert_scaling.traces.loader import read_trace
tr = read_trace(Path(sys.argv[1]) / "traces" / "scorep-rank0")
c = trace_completeness(tr)
r = c["per_rank"]["0"]
print(json.dumps({k: r.get(k) for k in ("status", "method", "launches", "found", "steps", "min_step_share", "activities_without_launch", "kinds_not_recorded", "calls_by_kind")}))
print("threads:", tr.host[tr.host["kind"] == "launch"]["thread"].astype(str).value_counts().to_dict())
print("gpu correlation set:", int(tr.gpu["correlation"].notna().sum()), "of", len(tr.gpu))
g, h = tr.gpu, tr.host[tr.host["kind"] == "launch"]
un = g[g["correlation"].notna() & ~g["correlation"].isin(set(h["correlation"].dropna().astype(int)))]
print("activities whose id no launch carries:", len(un), un["name"].astype(str).value_counts().head(6).to_dict())
nf = h[~h["correlation"].isin(set(g["correlation"].dropna().astype(int)))]
print("launch calls whose id no activity carries:", len(nf), nf["name"].astype(str).value_counts().head(8).to_dict())
PY
    el "verify $mode: $(tail -1 "$O/$C/verify-$mode-train.log") | $(head -1 "$O/$C/verify-$mode.completeness.txt" | cut -c1-400)"
    grep -E '"(launches|kernels|kernels_linked|copies)"' "$O/$C/verify-$mode.count.txt" | tr -d '\n'; echo
    if grep -q "train rc=0" "$O/$C/verify-$mode-train.log" || [ $attempt = 2 ] || grep -q "GPU machine" "$O/$C/built-where.txt"; then break; fi
    el "the CPU-built install did not trace: building here"; mkdir -p "$O/$C/cpu-built-attempt"
    mv "$O/$C"/verify-* "$O/$C/cpu-built-attempt/"; build_here
    [ -x /opt/scorep-cache/bin/scorep ] || exit 1
    ln -sfn /opt/scorep-cache /opt/scorep; rm -rf /tmp/site/scorep /tmp/runs /tmp/an
    source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup2.log" 2>&1; cat /opt/scorep/share/scorep-patches.txt >> "$O/$C/machine.txt"
   done
  done
  grep -q '"status": "complete"' "$O/$C/verify-records.completeness.txt" || { el "records mode not complete: left out of the rounds"; MODES=${MODES//,scorep-records-chunk4m/}; }
fi
if [ "${CHECK:-0}" = 1 ]; then  # the patch labs: two threads in all, launch and records mode; overlap; stream reuse
  ct=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) - 10 )); [ $ct -gt 240 ] && ct=240
  timeout $ct bash containers/scorep-patches/check/run.sh /opt/scorep > "$O/$C/check.log" 2>&1
  el "check rc=$?"; grep -E '^\{"lab"|check_patches:' "$O/$C/check.log" | cut -c1-300
fi
left=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) ))
if [ $left -lt 120 ]; then el "no time left for rounds ($left s)"; exit 0; fi
timeout $left python3 scripts/bench_trace.py --rounds 30 --configs 8x70,32x70 --budget-s $(( left - 75 )) --no-micro --count first \
    --modes "$MODES" --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log" | cut -c1-300
python3 - "$O/$C/bench-$C.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["modes"]:
    keys = ("mode", "config", "ratio_median", "ratio_min", "ratio_max", "rounds", "step_ms_median", "kernels_found_share", "kernels_linked", "trace_bytes_per_step", "cupti_launch_records", "cupti_linked_kernels")
    print({k: m.get(k) for k in keys})
for r in d["rounds"]:
    if r.get("error"):
        print("round", r["round"], "error", r["error"][:300])
PY
