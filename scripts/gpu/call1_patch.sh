#!/usr/bin/env bash
# GPU call 1 (run from the device copy's root: bash .gpu-run/scripts/gpu/call1_patch.sh):
# Score-P 8.4 as shipped vs rebuilt by containers/build-scorep.sh with the stream-order patch.
# Stock runs go while the build runs (counts only, no timing). Results under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run; O=${OUT:-/tmp/out}/c1
mkdir -p "$O"; cd "$R"
source "$K/setup-on-gpu.sh" "$K" > "$O/setup.log" 2>&1
export PYTHONPATH=$R/artifact:$PYTHONPATH
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
{ nvidia-smi --query-gpu=name,driver_version --format=csv; grep -h "define CUPTI_API_VERSION" "$CUDA"/include/cupti_version.h;
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; cat "$R/REVISION"; } > "$O/machine.txt" 2>&1
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
B=(--source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-patched --jobs 12 --strip
   --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu --nvtx2-include "$K/nvtx2")
( start=$(date +%s)
  bash containers/build-scorep.sh "${B[@]}" --cuda "$CUDA" --build-dir /tmp/sb1 > "$O/build.log" 2>&1 \
  || { echo "=== recipe with --with-libcupti failed: again on the extras/CUPTI view /tmp/cuda" >> "$O/build.log"
       bash containers/build-scorep.sh "${B[@]}" --cuda /tmp/cuda --build-dir /tmp/sb2 >> "$O/build.log" 2>&1; }
  echo "build rc=$? in $(( $(date +%s) - start )) s" >> "$O/build.log" ) &
BUILD=$!
SP=(python3 -m scorep --cuda --mpp=none --thread=pthread --nocompiler --noinstrumenter)
SPENV=(SCOREP_ENABLE_TRACING=true SCOREP_ENABLE_PROFILING=false SCOREP_CUDA_ENABLE=driver,kernel,memcpy,references
       SCOREP_CUDA_BUFFER=64M SCOREP_TIMER=clock_gettime SCOREP_TOTAL_MEMORY=256M)
lab() {  # lab NAME [VAR=VALUE...] -- ARGS of two_threads.py
  local name=$1; shift; local pre=(); while [ "$1" != -- ]; do pre+=("$1"); shift; done; shift
  env "${SPENV[@]}" "${pre[@]}" SCOREP_EXPERIMENT_DIRECTORY=/tmp/lab/$name "${SP[@]}" containers/scorep-patches/check/two_threads.py "$@" > "$O/$name.log" 2>&1
  python3 scripts/scorep_count.py /tmp/lab/$name --step-region ds:lab --json "$O/$name.count.json" > "$O/$name.count.txt" 2>&1
}
trainrun() {  # trainrun NAME BATCH
  local name=$1 b=$2; local t0=$(date +%s)
  python3 -m dnabert_scaling train --tracer scorep --model base --synthetic --batch-size "$b" --steps 20 \
      --warmup-steps 5 --no-progress --out /tmp/runs/$name > "$O/$name.log" 2>&1
  echo "train rc=$? wall $(( $(date +%s) - t0 )) s" >> "$O/$name.log"
  python3 scripts/scorep_count.py /tmp/runs/$name/traces/scorep-rank0 --json "$O/$name.count.json" > "$O/$name.count.txt" 2>&1
  du -sb /tmp/runs/$name/traces/scorep-rank0 >> "$O/$name.count.txt"
}
mkdir -p /tmp/lab /tmp/runs
gcc -shared -fPIC -o /tmp/libshim.so containers/scorep-patches/check/cupti_shared_buffers.c -I"$CUDA/include" \
    -L"$CUDA/targets/x86_64-linux/lib" -lcupti -ldl > "$O/shim-build.log" 2>&1
if [ -z "${SKIP_STOCK:-}" ]; then
  lab stock-1thread --
  lab stock-2threads -- --backward
  lab stock-2threads-shim LD_PRELOAD=/tmp/libshim.so -- --backward
  trainrun stock-b8 8
fi
wait $BUILD
if [ -x /opt/scorep-patched/bin/scorep ]; then
  mv /opt/scorep /opt/scorep-stock && ln -s /opt/scorep-patched /opt/scorep
  lab patched-1thread --
  lab patched-2threads -- --backward
  trainrun patched-b8 8
  trainrun patched-b32 32
  tar -C /opt -cf - scorep-patched | xz -T0 -6 > /tmp/patched.tar.xz
  split -b 15M /tmp/patched.tar.xz "${OUT:-/tmp/out}/scorep-8.4-patched.tar.xz.part-"
  ls -la "${OUT:-/tmp/out}"
fi
tail -5 "$O/build.log"; cat "$O/machine.txt"; grep -h "PER_THREAD" "$O"/*.log
for f in "$O"/*.count.txt; do echo "== $f"; grep -E '"(launches|kernels|copies|ratio|steps_complete|step_windows|min_step_ratio)"|^[0-9]+' "$f"; done
grep -h "Skipping\|last written\|train rc" "$O"/*.log | sort | uniq -c | head -20
cd "${OUT:-/tmp/out}" && tar -czf c1.tar.gz c1 && rm -rf c1
