#!/usr/bin/env bash
# The one documented way to record GPU evidence: traced sweeps (one per tracer and batch), the
# all_reduce bus bandwidth, optionally the benchmarks, on whatever GPUs this machine has; with
# --pack, the results packed for the trip home (the sets already compacted for expected/reference/).
#
#   scripts/reference_run.sh [options] OUT_DIR
#
#   --tracer NAME[:SIZES]  a traced sweep per tracer (torch, scorep), at SIZES (comma separated) or
#                          at --sizes; repeat the option for several tracers (default: torch)
#   --sizes LIST           world sizes (default: 1,2,4,8 up to the GPUs here; with --rehearse all four)
#   --rehearse             world sizes beyond the GPUs here run as a rehearsal (ranks share GPUs
#                          round-robin, NCCL over loopback sockets; never scaling evidence; see
#                          `dnabert-scaling sweep --rehearse`)
#   --steps N --warmup N   measured and warm-up steps (default: the sweep's, 50 + 5; rehearsal 8 + 3)
#   --batch "B ..."        per-GPU batch sizes, one sweep each (default "8 32"; with --rehearse "8")
#   --repeats N            untraced throughput runs per world size (default 3; refused with --rehearse, which runs none)
#   --bucket-hook MODE     auto|on|off, passed to train (default auto: on in traced runs)
#   --no-busbw             no bus-bandwidth runs (default: in the first tracer's sweeps)
#   --bench LIST           benchmarks: train,trace or none (default train,trace; with --rehearse none)
#   --kit DIR              Score-P kit (default .gpu-kit): a folder whose setup-on-gpu.sh puts a Score-P
#                          install (containers/build-scorep.sh) on PATH; sourced when a tracer is scorep:
#                          `source DIR/setup-on-gpu.sh DIR`
#   --wheels DIR           Python wheels this machine lacks (e.g. datasets), installed into a
#                          private folder first (default .whl, when it exists)
#   --budget S             start no sweep after S seconds, and cut each run's timeout to the time left
#   --pack DIR             pack the results into DIR, after every sweep: reference-set-<label>.tar.xz
#                          (the sweep imported by scripts/import_reference.py, traces compacted, ready
#                          for expected/reference/), run-logs.tar.xz (summaries, manifests, launcher,
#                          NCCL and busbw logs, nvidia-smi, benchmark JSON; no traces) and ref.log
#   --name LABEL           machine label of the imported sets (default h200): <LABEL>-<sweep label>
#   --model NAME           model trained (default base)
#   --device cpu           a rehearsal of this script itself without a GPU (gloo; for its tests)
#
# A sweep's folder is OUT_DIR/sweep-<label>: b<batch> (rehearsal: "rehearsal", or rehearsal-b<batch>
# with several batches), with -<tracer> added for every tracer after the first.
# Import at home: tar -xJf reference-set-<label>.tar.xz -C expected/reference/ (or
# scripts/import_reference.py OUT_DIR --name LABEL from an unpacked OUT_DIR), then `make kick-tires`.
set -uo pipefail
usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "reference_run: $*" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
TRACERS=(); SIZES=""; REHEARSE=0; STEPS=""; WARMUP=""; BATCHES=""; REPEATS=""; HOOK=auto; BUSBW=1
BENCH=""; MODEL=base; DEVICE=cuda; KIT=.gpu-kit; WHEELS=.whl; BUDGET=0; PACK=""; NAME=h200; RUN_TIMEOUT=3600; OUTDIR=""
while [ $# -gt 0 ]; do
  case $1 in  # an option that takes a value: one must follow, and not an empty one
    --tracer|--sizes|--steps|--warmup|--batch|--repeats|--bucket-hook|--bench|--kit|--wheels|--budget|--pack|--name|\
    --run-timeout|--model|--device)
      [ $# -ge 2 ] || die "$1 needs a value"; [ -n "$2" ] || die "$1 needs a value, not an empty one" ;;
  esac
  case $1 in
    --tracer) TRACERS+=("${2:?--tracer needs NAME[:SIZES]}"); shift 2 ;;
    --sizes) SIZES=${2:?}; shift 2 ;;
    --rehearse) REHEARSE=1; shift ;;
    --steps) STEPS=${2:?}; shift 2 ;;
    --warmup) WARMUP=${2:?}; shift 2 ;;
    --batch) BATCHES=${2:?}; shift 2 ;;
    --repeats) REPEATS=${2:?}; shift 2 ;;
    --bucket-hook) HOOK=${2:?}; shift 2 ;;
    --no-busbw) BUSBW=0; shift ;;
    --bench) BENCH=${2:?}; shift 2 ;;
    --kit) KIT=${2:?}; shift 2 ;;
    --wheels) WHEELS=${2:?}; shift 2 ;;
    --budget) BUDGET=${2:?}; shift 2 ;;
    --pack) PACK=${2:?}; shift 2 ;;
    --name) NAME=${2:?}; shift 2 ;;
    --run-timeout) RUN_TIMEOUT=${2:?}; shift 2 ;;
    --model) MODEL=${2:?}; shift 2 ;;
    --device) DEVICE=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$OUTDIR" ] || die "one OUT_DIR only ($OUTDIR, $1)"; OUTDIR=$1; shift ;;
  esac
done
[ -n "$OUTDIR" ] || usage
[ ${#TRACERS[@]} -gt 0 ] || TRACERS=(torch)
[ -n "$BATCHES" ] || { [ $REHEARSE = 1 ] && BATCHES=8 || BATCHES="8 32"; }
# a rehearsal runs no untraced throughput runs: a --repeats given with it would be dropped unsaid (as sweep refuses it)
[ $REHEARSE = 0 ] || [ -z "$REPEATS" ] || die "--repeats $REPEATS --rehearse: a rehearsal runs no untraced throughput runs; leave out --repeats"
[ -n "$REPEATS" ] || REPEATS=3
[[ $REPEATS =~ ^[0-9]{1,9}$ ]] && [ "$((10#$REPEATS))" -ge 1 ] && [ "$((10#$REPEATS))" -le 1000 ] \
  || die "--repeats must be a whole number within 1..1000 (untraced runs per world size), not $REPEATS"
[ -n "$BENCH" ] || { [ $REHEARSE = 1 ] && BENCH=none || BENCH=train,trace; }
for n in "$STEPS" "$WARMUP" "$REPEATS" "$BUDGET" "$RUN_TIMEOUT" $BATCHES; do
  [ -z "$n" ] || [[ $n =~ ^[0-9]+$ ]] || die "not a whole number: $n"
done
case $HOOK in auto|on|off) ;; *) die "--bucket-hook must be auto, on or off, not $HOOK" ;; esac
case $DEVICE in cpu|cuda) ;; *) die "--device must be cpu or cuda, not $DEVICE" ;; esac
for t in "${TRACERS[@]}"; do
  case ${t%%:*} in torch|scorep) ;; *) die "--tracer $t: the tracer must be torch or scorep" ;; esac
done
mkdir -p "$OUTDIR" || die "cannot create $OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
[ -z "$PACK" ] || { mkdir -p "$PACK" && PACK=$(cd "$PACK" && pwd); } || die "cannot create $PACK"
LOG=$OUTDIR/ref.log
say() { echo "reference_run: $*" | tee -a "$LOG" >&2; }
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }

export PYTHONUNBUFFERED=1
# keep NVLink multicast off where the host asks for it (shared multi-GPU hosts)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d "$WHEELS" ] && ls "$WHEELS"/*.whl > /dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/reference-run-site "$WHEELS"/*.whl \
    || die "installing the wheels of $WHEELS failed"
  export PYTHONPATH=/tmp/reference-run-site${PYTHONPATH:+:$PYTHONPATH}
fi
if printf '%s\n' "${TRACERS[@]}" | grep -q '^scorep'; then
  [ -f "$KIT/setup-on-gpu.sh" ] || die "a scorep tracer needs the Score-P kit: $KIT/setup-on-gpu.sh is missing (--kit)"
  # shellcheck disable=SC1091
  source "$KIT/setup-on-gpu.sh" "$KIT" >> "$LOG" 2>&1
  command -v scorep > /dev/null || die "Score-P is not usable after $KIT/setup-on-gpu.sh (see $LOG)"
fi
export PYTHONPATH=$ROOT/artifact${PYTHONPATH:+:$PYTHONPATH}
cd "$ROOT" || die "no $ROOT"

NGPU=$($PY -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)') || die "torch does not import"
if [ "$DEVICE" = cpu ]; then NGPU=0; else [ "$NGPU" -ge 1 ] || die "no CUDA GPU here (--device cpu rehearses this script without one)"; fi
if [ -z "$SIZES" ]; then
  for n in 1 2 4 8; do
    if [ $REHEARSE = 1 ] || [ "$n" -le "$NGPU" ] || { [ "$DEVICE" = cpu ] && [ "$n" -le 2 ]; }; then SIZES="${SIZES:+$SIZES,}$n"; fi
  done
fi
say "$NGPU GPU(s); tracers ${TRACERS[*]}; world sizes $SIZES; batches $BATCHES; rehearsal $REHEARSE; ${DNABERT_SCALING_REVISION:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || cat "$ROOT/REVISION" 2>/dev/null)}"
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,memory.total,clocks.max.sm --format=csv > "$OUTDIR/nvidia-smi.csv" 2>&1 || true
nvidia-smi topo -m > "$OUTDIR/nvidia-topo.txt" 2>&1 || true

pack() {  # pack LABEL: sweep-LABEL imported (compacted) into its own tarball, then the logs so far
  [ -n "$PACK" ] || return 0
  local label=$1 one=/tmp/reference-run-one imp=/tmp/reference-run-import
  rm -rf "$one" "$imp" && mkdir -p "$one" "$imp" && ln -s "$OUTDIR/sweep-$label" "$one/sweep-$label"
  if $PY scripts/import_reference.py "$one" --name "$NAME" --dest "$imp" >> "$LOG" 2>&1; then
    tar -C "$imp" -cf - . | xz -T0 -6 > "$PACK/reference-set-$label.tar.xz.tmp" \
      && mv "$PACK/reference-set-$label.tar.xz.tmp" "$PACK/reference-set-$label.tar.xz"
  else
    say "import_reference failed for sweep-$label (see the log): the raw sweep goes home instead, in 15 MiB parts"
    tar -C "$OUTDIR" --exclude='synthetic-data/*/*.csv' -cf - "sweep-$label" | xz -T0 -6 \
      | split -b 15M - "$PACK/raw-sweep-$label.tar.xz.part-"
  fi
  pack_logs
}
pack_logs() {  # summaries, manifests, launcher/NCCL/busbw logs, nvidia-smi and this script's log: no traces
  [ -n "$PACK" ] || return 0
  tar -C "$OUTDIR" --exclude='traces' --exclude='synthetic-data' -cf - . | xz -T0 -6 > "$PACK/run-logs.tar.xz"
  cp "$LOG" "$PACK/ref.log" 2>/dev/null
  say "packed at $(elapsed) s: $(cd "$PACK" && ls -l | awk 'NR>1 {printf "%s %s, ", $9, $5}')"
}

status=0
first=1
for t in "${TRACERS[@]}"; do
  tracer=${t%%:*}; sizes=$SIZES
  [ "$t" = "$tracer" ] || sizes=${t#*:}
  for b in $BATCHES; do
    if [ $REHEARSE = 1 ]; then
      label=rehearsal; [ "$(echo $BATCHES | wc -w)" -gt 1 ] && label=rehearsal-b$b
    else
      label=b$b
    fi
    [ $first = 1 ] || label=$label-$tracer
    timeout=$RUN_TIMEOUT
    if [ "$BUDGET" -gt 0 ]; then
      left=$(( BUDGET - $(elapsed) ))
      if [ $left -le 0 ]; then say "budget spent: sweep-$label not started"; status=1; continue; fi
      [ $(( left + 60 )) -lt "$timeout" ] && timeout=$(( left + 60 ))
    fi
    opts=(--device "$DEVICE" --gpus "$sizes" --tracer "$tracer" --run-timeout "$timeout" --out "$OUTDIR/sweep-$label")
    if [ $REHEARSE = 1 ]; then opts+=(--rehearse); else opts+=(--repeats "$REPEATS"); fi
    [ $BUSBW = 1 ] && [ $first = 1 ] || opts+=(--no-busbw)
    targs=(--model "$MODEL" --batch-size "$b" --bucket-hook "$HOOK")
    [ -n "$STEPS" ] && targs+=(--steps "$STEPS")
    [ -n "$WARMUP" ] && targs+=(--warmup-steps "$WARMUP")
    say "sweep-$label at $(elapsed) s: sweep ${opts[*]} -- ${targs[*]}"
    $PY -m dnabert_scaling sweep "${opts[@]}" -- "${targs[@]}" >> "$LOG" 2>&1 || { status=1; say "sweep-$label failed (see $LOG)"; }
    grep -h "median step\|^ws\|^busbw" "$LOG" | tail -12 >&2
    pack "$label"
  done
  first=0
done

if [ "$BENCH" != none ]; then
  case ",$BENCH," in *,train,*) $PY scripts/bench_train.py --json "$OUTDIR/bench_train.json" >> "$LOG" 2>&1 || status=1 ;; esac
  case ",$BENCH," in *,trace,*) $PY scripts/bench_trace.py --configs 8x70,32x70,128x128 \
                                  --json "$OUTDIR/bench-trace.json" >> "$LOG" 2>&1 || status=1 ;; esac
fi
say "done at $(elapsed) s, status $status"
pack_logs
exit $status
