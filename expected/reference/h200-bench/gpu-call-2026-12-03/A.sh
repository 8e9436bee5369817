#!/usr/bin/env bash
# GPU call A (lead): Score-P 8.4 rebuilt with both patches (background) while the torch rehearsal
# runs (ws 1,2,4,8 on one GPU); then the launch-only verification and the Score-P sets b8/b32.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run; O=${OUT:-/tmp/out}
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p "$O/v" /tmp/pk-rt /tmp/pk-sp
finish() {
  tar -cf "$O/rehearsal-torch.tar" -C /tmp/pk-rt . 2>/dev/null
  tar -cf "$O/scorep-sets.tar" -C /tmp/pk-sp . 2>/dev/null
  cp /tmp/build.log "$O/v/" 2>/dev/null; (cd "$O" && tar -czf verify.tar.gz v && rm -rf v); ls -la "$O"; el done
}
trap finish EXIT
cd "$R" || exit 1
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
{ nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; cat REVISION; nproc; } > "$O/v/machine.txt" 2>&1
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
( nice -n 10 bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-launch --jobs 10 --strip --candidate-patches \
    --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu --nvtx2-include "$K/nvtx2" \
    --cuda "$CUDA" --build-dir /tmp/sb > /tmp/build.log 2>&1; echo "build rc=$?" >> /tmp/build.log ) &
BUILD=$!
el "build started"
timeout 330 bash scripts/reference_run.sh --rehearse --tracer torch:1,2,4,8 --bucket-hook on --steps 5 --warmup 3 --budget 200 \
    --wheels "$K/wheels" --pack /tmp/pk-rt /tmp/rr-torch > "$O/v/rehearsal-torch.log" 2>&1
el "torch rehearsal rc=$?"; grep "reference_run:" "$O/v/rehearsal-torch.log" | tail -8
wait $BUILD; el "$(tail -1 /tmp/build.log)"
[ -x /opt/scorep-launch/bin/scorep ] || { grep -n "error" /tmp/build.log | tail -20; exit 1; }
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep; cat /opt/scorep/share/scorep-patches.txt
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > "$O/v/setup.log" 2>&1; export PYTHONPATH=$R/artifact:$PYTHONPATH; el setup
timeout 150 python3 -m dnabert_scaling train --tracer scorep --model base --synthetic --batch-size 8 --steps 10 --warmup-steps 3 \
    --no-progress --out /tmp/runs/launch-b8 > "$O/v/verify-train.log" 2>&1; echo "train rc=$?" >> "$O/v/verify-train.log"
x=/tmp/runs/launch-b8/traces/scorep-rank0
python3 scripts/scorep_count.py "$x" --json "$O/v/verify.count.json" > "$O/v/verify.count.txt" 2>&1
{ du -sb "$x"; grep -i "cuda" "$x/scorep.cfg"; } >> "$O/v/verify-train.log" 2>&1
el "verify: $(tail -4 "$O/v/verify-train.log" | tr '\n' ' ')"; cat "$O/v/verify.count.txt" | tail -5
python3 -m dnabert_scaling analyze /tmp/runs/launch-b8 --out /tmp/an/launch-b8 > "$O/v/verify-analyze.log" 2>&1; cp /tmp/an/launch-b8/metrics.json "$O/v/verify.metrics.json" 2>/dev/null
left=$(( 570 - ($(date +%s) - T0) ))
if [ $left -gt 140 ]; then
  timeout $left bash scripts/reference_run.sh --tracer scorep:1 --batch "8 32" --repeats 1 --steps 20 --warmup 5 --no-busbw --bench none \
      --kit "$K" --budget $(( left - 110 )) --name h200-scorep --pack /tmp/pk-sp /tmp/rr-sp > "$O/v/scorep-sets.log" 2>&1
  el "scorep sets rc=$?"; grep "reference_run:" "$O/v/scorep-sets.log" | tail -6
else
  el "no time left for the Score-P sets ($left s)"
fi
