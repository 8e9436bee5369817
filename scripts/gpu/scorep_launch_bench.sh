#!/usr/bin/env bash
# GPU call (issue 24, 2 of 2), from the device copy's root: bash .gpu-run-scorep/scripts/gpu/scorep_launch_bench.sh
# On the machine of scorep_launch_build.sh (warm: /opt/scorep-launch there) or a fresh one (the
# install unpacked from the carried .scorep-new/scorep-launch.tar.xz.part-*): the tracing-cost
# benchmark (scripts/bench_trace.py: 5 rounds of alternated short processes), then, while time
# is left, the Score-P reference sets re-recorded with the default (launch-only) mode.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run-scorep; O=${OUT:-/tmp/out}
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
if [ ! -x /opt/scorep-launch/bin/scorep ]; then
  el "cold machine: unpacking the carried install"
  cat "$ROOT"/.scorep-new/scorep-launch.tar.xz.part-* | xz -d | tar -x -C /opt || exit 1
  rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep
  mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
fi
[ "$(readlink /opt/scorep)" = /opt/scorep-launch ] || { rm -rf /opt/scorep; ln -s /opt/scorep-launch /opt/scorep; }
source "$K/setup-on-gpu.sh" "$K" > "$O/setup.log" 2>&1; tail -2 "$O/setup.log"
export PYTHONPATH=$R/artifact:$PYTHONPATH
cd "$R"; cat /opt/scorep/share/scorep-patches.txt; el setup
python3 scripts/bench_trace.py --rounds 5 --budget-s "${BENCH_BUDGET:-250}" --configs "${BENCH_CONFIGS:-8x70,32x70,128x128}" \
    --json "$O/bench-trace-scorep.json" > "$O/bench.log" 2>&1
el "bench rc=$?"; grep -v "^# round" "$O/bench.log" | tail -25
for b in 8 32; do
  [ $(( $(date +%s) - T0 )) -lt "${SWEEP_UNTIL:-380}" ] || { el "no time left for the b$b set"; continue; }
  python3 -m dnabert_scaling sweep --gpus 1 --tracer scorep --repeats 1 --no-baseline-no-ddp --no-busbw \
      --out /tmp/ev/sweep-scorep-b$b -- --model base --batch-size $b --steps 20 --warmup-steps 5 > "$O/sweep-b$b.log" 2>&1
  el "sweep b$b rc=$?"
  x=/tmp/ev/sweep-scorep-b$b/ws1-scorep-r0/traces/scorep-rank0
  python3 scripts/scorep_count.py $x --json "$O/sweep-b$b.count.json" > /dev/null 2>&1; du -sb $x; grep -h DRIVER_CALLBACKS $x/scorep.cfg
done
if [ -d /tmp/ev ]; then
  rm -rf /tmp/ev/*/synthetic-data/*/*.csv
  (cd /tmp/ev && tar -cf - . | xz -T16 -6 > /tmp/ev.tar.xz) && split -b 15M /tmp/ev.tar.xz "$O/ev.tar.xz.part-"
fi
el done; ls -la "$O"
