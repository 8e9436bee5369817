#!/usr/bin/env bash
# GPU call W (2026-12-05, fifteenth session): Score-P 8.4 with the series and the candidate
# 8.4-cupti-launch-records.patch (SCOREP_CUDA_DRIVER_CALLBACKS=records: the launches from CUPTI's activity
# records, no callback on the launch path). BUILD=1: built here (--candidate-patches) and packed into $OUT
# for a later call; else the carried pack (.gpu-run/inst-w) is unpacked, or a warm machine's install kept.
# VERIFY=1: a DNABERT-2 run traced in records mode, counted by scripts/scorep_count.py and analysed by the
# artifact (completeness by correlation id). Then lockstep rounds at 8x70 and 32x70: untraced, the bare
# client with the same records (cupti-launch-records), the default mode (launch callbacks) and records mode.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}; C=${CALL:-w}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { cp /tmp/build.log "$O/$C/build.log" 2>/dev/null; (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
if [ "${BUILD:-0}" = 1 ] && [ ! -x /opt/scorep-cache/bin/scorep ]; then
  mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
  bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-cache --jobs 16 --strip \
      --candidate-patches --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu \
      --nvtx2-include "$K/nvtx2" --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; el "build rc=$?"
  if [ -x /opt/scorep-cache/bin/scorep ]; then
    tar -C /opt -cf - scorep-cache | xz -T16 -6 > /tmp/scorep-cache-install.tar.xz
    split -b 15m -d /tmp/scorep-cache-install.tar.xz "$O/scorep-cache-install.tar.xz.part"
    sha256sum /tmp/scorep-cache-install.tar.xz > "$O/scorep-cache-install.sha256"; el "packed: $(ls "$O" | grep -c part) parts"
  else
    grep -n "error" /tmp/build.log | tail -20; exit 1
  fi
elif [ ! -x /opt/scorep-cache/bin/scorep ] && ls .gpu-run/inst-w/scorep-cache-install.tar.xz.part* > /dev/null 2>&1; then
  cat .gpu-run/inst-w/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt; el unpacked
fi
[ -x /opt/scorep-cache/bin/scorep ] || { el "no Score-P"; exit 1; }
ln -sfn /opt/scorep-cache /opt/scorep
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; el setup
export PYTHONPATH=$ROOT/artifact:$PYTHONPATH
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "rev $DNABERT_SCALING_REVISION"; nproc; uname -a; cat /opt/scorep/share/scorep-patches.txt
  grep -m1 "^model name" /proc/cpuinfo; } > "$O/$C/machine.txt" 2>&1
MODES=untraced,cupti-launch-records,scorep-launch-chunk4m,scorep-records-chunk4m
if [ "${VERIFY:-0}" = 1 ]; then
  for mode in records; do
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
  done
  grep -q '"status": "complete"' "$O/$C/verify-records.completeness.txt" || { el "records mode not complete: left out of the rounds"; MODES=untraced,cupti-launch-records,scorep-launch-chunk4m; }
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
