#!/usr/bin/env bash
# The GPU evidence in one go, on whatever GPUs this machine has (1, 2, 4 or 8):
#   - the traced sweep at the official per-GPU batch (8 x 70 tokens) and at batch 32, world sizes
#     1, 2, 4, 8 up to the GPU count (torch tracer: Score-P is not on the lent machines; pass
#     TRACER=scorep where it is), 3 untraced repeats each, 50 measured steps;
#   - bench-train (sdpa / eager / unpad, MFU) and bench-trace (tracing dilation per tracer mode).
# Usage: scripts/reference_run.sh OUT_DIR        (PYTHON=python3 TRACER=torch STEPS=50 REPEATS=3)
# Then, on any machine: tar the OUT_DIR and `scripts/import_reference.py` it into expected/.
set -euo pipefail
OUT=${1:?usage: scripts/reference_run.sh OUT_DIR}
PY=${PYTHON:-python3}
TRACER=${TRACER:-torch}
STEPS=${STEPS:-50}
REPEATS=${REPEATS:-3}
BATCHES=${BATCHES:-"8 32"}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# keep NVLink multicast off where the host asks for it (shared multi-GPU hosts)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

NGPU=$($PY -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)')
if [ "$NGPU" -lt 1 ]; then echo "reference_run: no CUDA GPU here" >&2; exit 2; fi
SIZES=""
for n in 1 2 4 8; do [ "$n" -le "$NGPU" ] && SIZES="${SIZES:+$SIZES,}$n"; done
echo "reference_run: $NGPU GPU(s): world sizes $SIZES; batches $BATCHES; tracer $TRACER" >&2
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" || true
nvidia-smi topo -m > "$OUT/nvidia-topo.txt" 2>&1 || true

status=0
for b in $BATCHES; do
  $PY -m dnabert_scaling sweep --gpus "$SIZES" --tracer "$TRACER" --repeats "$REPEATS" \
      --out "$OUT/sweep-b$b" -- --model base --batch-size "$b" --steps "$STEPS" --warmup-steps 5 || status=1
done
$PY scripts/bench_train.py --json "$OUT/bench_train.json" || status=1
$PY scripts/bench_trace.py --configs 8x70,32x70,128x128 --rounds 5 --modes untraced,torch --json "$OUT/bench_trace.json" || status=1
exit $status
