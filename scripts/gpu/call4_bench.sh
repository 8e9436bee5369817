#!/usr/bin/env bash
# GPU call 4: tracing cost per mode (scripts/bench_trace.py: torch modes in one process, each
# Score-P mode in its own Score-P process with recording off/on windows), then --tracer auto
# with the unpatched Score-P 8.4 (the preflight must refuse it). Results under $OUT.
set -uo pipefail
source "$PWD/.gpu-run/scripts/gpu/common.sh"
O=$OO/c4; mkdir -p "$O"
t1=$(date +%s)
python3 scripts/bench_trace.py --configs 8x70,32x70 --repeats 3 --steps 20 --warmup 3 \
    --scorep-modes scorep:driver,scorep:nodriver,scorep:driver-launch-only --json "$O/bench_trace.json" > "$O/bench.log" 2>&1
echo "bench rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/bench.log"
grep -v "Warning\|warn" "$O/bench.log" | tail -25
if [ -z "${SKIP_STOCK:-}" ] && [ -f "$K/scorep-8.4-install-cuda13.tar.xz" ]; then
  mkdir -p /tmp/stock && xz -d -c "$K/scorep-8.4-install-cuda13.tar.xz" | tar -x -C /tmp/stock
  rm -f /opt/scorep && mv /tmp/stock/scorep /opt/scorep-stock && ln -s /opt/scorep-stock /opt/scorep
  t1=$(date +%s)
  python3 -m dnabert_scaling sweep --gpus 1 --tracer auto --repeats 1 --no-baseline-no-ddp --no-busbw \
      --out /tmp/auto-stock -- --model base --batch-size 8 --steps 5 --warmup-steps 2 > "$O/sweep-auto-stock.log" 2>&1
  echo "sweep rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/sweep-auto-stock.log"
  cp /tmp/auto-stock/scorep-preflight.json /tmp/auto-stock/sweep.json "$O/" 2>/dev/null; ls /tmp/auto-stock >> "$O/sweep-auto-stock.log"
  grep -h "auto ->\|rc=" "$O/sweep-auto-stock.log"
fi
cd "$OO" && tar -czf c4.tar.gz c4 && rm -rf c4; ls -la "$OO"
