#!/usr/bin/env bash
# GPU call G (2026-12-04 session 3): Score-P 8.4 rebuilt with the project's verified patch series
# (call A's packed build did not survive the session), packed for call H; then the lockstep
# tracing-cost benchmark, steps on their stream, every round's Score-P experiment counted.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; K=$ROOT/.gpu-kit; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/g"
finish() { cp /tmp/build.log "$O/g/" 2>/dev/null; (cd "$O" && tar -czf g.tar.gz g && rm -rf g); ls -la "$O"; el done; }
trap finish EXIT
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; echo "rev $DNABERT_SCALING_REVISION"; nproc; } > "$O/g/machine.txt" 2>&1
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
mkdir -p /tmp/bfd; tar -xJf .gpu-run/bfd/bfd-slim.tar.xz -C /tmp/bfd
bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-launch --jobs 16 --strip \
    --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu --nvtx2-include "$K/nvtx2" \
    --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; el "build rc=$?"
[ -x /opt/scorep-launch/bin/scorep ] || { grep -n "error" /tmp/build.log | tail -20; exit 1; }
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep; cat /opt/scorep/share/scorep-patches.txt | tee -a "$O/g/machine.txt"
( tar -C /opt -cf - scorep-launch | xz -T8 -6 > /tmp/scorep-launch-install.tar.xz
  split -b 15m -d /tmp/scorep-launch-install.tar.xz "$O/scorep-launch-install.tar.xz.part"
  sha256sum /tmp/scorep-launch-install.tar.xz > "$O/scorep-launch-install.sha256" ) &
PACK=$!
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/g/setup.log" 2>&1; export PYTHONPATH=$ROOT/artifact:$PYTHONPATH; el setup
wait $PACK; el "packed: $(ls "$O" | grep -c part) parts"
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 scripts/bench_trace.py --rounds 12 --no-micro --budget-s $(( left - 120 )) \
    --json "$O/g/bench-g.json" > "$O/g/bench-g.log" 2>&1
el "bench rc=$?"; grep "^# " "$O/g/bench-g.log"; grep -v "^#" "$O/g/bench-g.log" | grep -v '"untraced"' | cut -c1-230 | tail -16
python3 - "$O/g/bench-g.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for m, c in d["counts"].items():
    print(m, [(e.get("round"), e.get("launches"), e.get("kernels"), e.get("error")) for e in c["experiments"]])
for r in d["rounds"]:
    for m, p in r["processes"].items():
        if p.get("scorep_messages"):
            print("messages", r["round"], m, p["scorep_messages"][:6])
PY
