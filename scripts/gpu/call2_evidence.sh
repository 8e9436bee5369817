#!/usr/bin/env bash
# GPU call 2 (bash .gpu-run/scripts/gpu/call2_evidence.sh from the device copy's root):
# build the patched Score-P 8.4 with containers/build-scorep.sh in a clean environment (no other
# Score-P on PATH, so its own OTF2/Cube are built), make it /opt/scorep, then: the two-thread
# repro, the evidence sweeps (world size 1, batch 8 and 32, Score-P and torch.profiler, 20
# measured steps), one --scorep-python run. Results under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run; OO=${OUT:-/tmp/out}; O=$OO/c2
mkdir -p "$O"; cd "$R"
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
t0=$(date +%s)
bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-patched --jobs 16 --strip \
   --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu --nvtx2-include "$K/nvtx2" \
   --cuda "$CUDA" --build-dir /tmp/sb > "$O/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - t0 )) s" >> "$O/build.log"; tail -6 "$O/build.log"
ls /opt/scorep-patched/lib | grep -c otf2
rm -rf /opt/scorep && ln -s /opt/scorep-patched /opt/scorep
source "$K/setup-on-gpu.sh" "$K" > "$O/setup.log" 2>&1; tail -3 "$O/setup.log"
export PYTHONPATH=$R/artifact:$PYTHONPATH
SP=(python3 -m scorep --cuda --mpp=none --thread=pthread --nocompiler --noinstrumenter)
SPENV=(SCOREP_ENABLE_TRACING=true SCOREP_ENABLE_PROFILING=false SCOREP_CUDA_ENABLE=driver,kernel,memcpy,references
       SCOREP_CUDA_BUFFER=64M SCOREP_TIMER=clock_gettime SCOREP_TOTAL_MEMORY=256M)
for v in 1thread 2threads; do
  a=(); [ $v = 2threads ] && a=(--backward)
  env "${SPENV[@]}" SCOREP_EXPERIMENT_DIRECTORY=/tmp/lab/$v "${SP[@]}" scripts/scorep_lab/two_threads.py "${a[@]}" > "$O/lab-$v.log" 2>&1
  python3 scripts/scorep_count.py /tmp/lab/$v --step-region ds:lab --json "$O/lab-$v.count.json" > "$O/lab-$v.count.txt" 2>&1
done
E=/tmp/ev; mkdir -p $E
for b in 8 32; do
  for tr in scorep torch; do
    t1=$(date +%s)
    python3 -m dnabert_scaling sweep --gpus 1 --tracer $tr --repeats 0 --no-baseline-no-ddp --no-busbw \
        --out $E/sweep-b$b-$tr -- --model base --batch-size $b --steps 20 --warmup-steps 5 > "$O/sweep-b$b-$tr.log" 2>&1
    echo "sweep rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/sweep-b$b-$tr.log"
  done
  python3 scripts/scorep_count.py $E/sweep-b$b-scorep/ws1-scorep-r0/traces/scorep-rank0 --json "$O/b$b-scorep.count.json" > "$O/b$b-scorep.count.txt" 2>&1
  du -sb $E/sweep-b$b-scorep/ws1-scorep-r0/traces/scorep-rank0 >> "$O/b$b-scorep.count.txt"
done
t1=$(date +%s)
python3 -m dnabert_scaling train --tracer scorep --scorep-python --model base --synthetic --batch-size 8 --steps 10 \
    --warmup-steps 3 --no-progress --out /tmp/pyrun > "$O/python-b8.log" 2>&1
echo "train rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/python-b8.log"
du -sb /tmp/pyrun/traces/scorep-rank0 > "$O/python-b8.size.txt"; ls -la /tmp/pyrun/traces/scorep-rank0 >> "$O/python-b8.size.txt"
cp /tmp/pyrun/rank0/steps.jsonl "$O/python-b8.steps.jsonl" 2>/dev/null; cp /tmp/pyrun/rank0/summary.json "$O/python-b8.summary.json" 2>/dev/null
for f in "$O"/*.count.txt; do echo "== $f"; grep -E '"(launches|kernels|copies|ratio|steps_complete|step_windows|min_step_ratio)"|^[0-9]+' "$f"; done
grep -h "Skipping\|last written\|rc=" "$O"/*.log | sort | uniq -c | head -20; cat "$O/python-b8.size.txt" | head -3
cd $E && tar -cf - . | xz -T0 -6 > /tmp/ev.tar.xz; ls -la /tmp/ev.tar.xz
split -b 15M /tmp/ev.tar.xz "$OO/ev.tar.xz.part-"
tar -C /opt -cf - scorep-patched | xz -T0 -6 > /tmp/patched.tar.xz; split -b 15M /tmp/patched.tar.xz "$OO/scorep-patched.tar.xz.part-"
cd "$OO" && tar -czf c2.tar.gz c2 && rm -rf c2; ls -la "$OO"
