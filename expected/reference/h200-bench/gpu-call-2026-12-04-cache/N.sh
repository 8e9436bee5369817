#!/usr/bin/env bash
# GPU call N (2026-12-04, fifth session): Score-P 8.4 built with the four patches of the series (the
# candidate 8.4-cupti-stream-ref-cache.patch too), packed for call O; then the lockstep benchmark at
# 8x70 and 32x70: no tracer, torch.profiler, the bare CUPTI client without and with launch
# callbacks, Score-P without `driver`, launch-only Score-P with and without the stream reference
# cache (all Score-P modes in 4 MB chunks). If the build fails, the modes without Score-P run.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}; C=${CALL:-n}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/$C"
finish() { cp /tmp/build.log "$O/$C/build.log" 2>/dev/null; (cd "$O" && tar -czf "$C.tar.gz" "$C" && rm -rf "$C"); ls -la "$O"; el done; }
trap finish EXIT
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-cache --jobs 16 --strip \
    --candidate-patches --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu \
    --nvtx2-include "$K/nvtx2" --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; el "build rc=$?"
MODES=untraced,torch,cupti-kernels,cupti-launch
if [ -x /opt/scorep-cache/bin/scorep ]; then
  ln -sfn /opt/scorep-cache /opt/scorep
  tar -C /opt -cf - scorep-cache | xz -T16 -6 > /tmp/scorep-cache-install.tar.xz
  split -b 15m -d /tmp/scorep-cache-install.tar.xz "$O/scorep-cache-install.tar.xz.part"
  sha256sum /tmp/scorep-cache-install.tar.xz > "$O/scorep-cache-install.sha256"; el "packed: $(ls "$O" | grep -c part) parts"
  # shellcheck disable=SC1091
  source "$K/setup-on-gpu.sh" "$K" > "$O/$C/setup.log" 2>&1; el setup
  MODES=$MODES,scorep-nodriver-chunk4m,scorep-launch-chunk4m,scorep-launch-nocache-chunk4m
else
  grep -n "error" /tmp/build.log | tail -20
  mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$K"/wheels/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$ROOT/artifact:$PYTHONPATH
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; cat /opt/scorep/share/scorep-patches.txt
  nvcc --version | tail -2; for f in /opt/scorep/lib/libscorep_adapter_cuda*.so; do echo "$f"; ldd "$f" | grep -i cupti; done; } > "$O/$C/machine.txt" 2>&1
left=$(( ${TOTAL_S:-575} - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 14 --configs 8x70,32x70 --budget-s $(( left - 100 )) --no-micro \
    --modes $MODES --json "$O/$C/bench-$C.json" > "$O/$C/bench-$C.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/$C/bench-$C.log"; grep -v "^#" "$O/$C/bench-$C.log" | grep -v '"untraced"' | cut -c1-200 | tail -16
python3 - "$O/$C/bench-$C.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("client", d.get("cupti_client"))
for m, c in d["counts"].items():
    print(m, [(e.get("round"), e.get("launches"), e.get("kernels"), e.get("error")) for e in c["experiments"]])
for r in d["rounds"]:
    print("round", r["round"], {m: p.get("cupti_records") for m, p in r["processes"].items() if p.get("cupti_records")}, r.get("error", "")[:200])
seen = {}
for r in d["rounds"]:
    for m, p in r["processes"].items():
        for msg in p.get("scorep_messages") or []:
            key = m + ": " + msg.split("Warning: ")[-1][:70]
            seen[key] = seen.get(key, 0) + 1
for k, n in sorted(seen.items()):
    print(n, k)
PY
