#!/usr/bin/env bash
# GPU call 3: the two-thread repro and the evidence sweeps with the patched Score-P; --tracer auto
# through the preflight. Results under $OUT.
set -uo pipefail
source "$PWD/.gpu-run/scripts/gpu/common.sh"
O=$OO/c3; mkdir -p "$O" /tmp/lab
SP=(python3 -m scorep --cuda --mpp=none --thread=pthread --nocompiler --noinstrumenter)
SPENV=(SCOREP_ENABLE_TRACING=true SCOREP_ENABLE_PROFILING=false SCOREP_CUDA_ENABLE=driver,kernel,memcpy,references
       SCOREP_CUDA_BUFFER=64M SCOREP_TIMER=clock_gettime SCOREP_TOTAL_MEMORY=256M)
for v in 1thread 2threads; do
  a=(); [ $v = 2threads ] && a=(--backward)
  env "${SPENV[@]}" SCOREP_EXPERIMENT_DIRECTORY=/tmp/lab/$v "${SP[@]}" containers/scorep-patches/check/two_threads.py "${a[@]}" > "$O/lab-$v.log" 2>&1
  python3 scripts/scorep_count.py /tmp/lab/$v --step-region ds:lab --json "$O/lab-$v.count.json" > "$O/lab-$v.count.txt" 2>&1
done
E=/tmp/ev; mkdir -p $E
for b in 8 32; do
  for tr in scorep torch; do
    t1=$(date +%s)
    python3 -m dnabert_scaling sweep --gpus 1 --tracer $tr --repeats 1 --no-baseline-no-ddp --no-busbw \
        --out $E/h200-scorep-b$b/$tr -- --model base --batch-size $b --steps 20 --warmup-steps 5 > "$O/sweep-b$b-$tr.log" 2>&1
    echo "sweep rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/sweep-b$b-$tr.log"
  done
  x=$E/h200-scorep-b$b/scorep/ws1-scorep-r0/traces/scorep-rank0
  python3 scripts/scorep_count.py $x --json "$O/b$b-scorep.count.json" > "$O/b$b-scorep.count.txt" 2>&1; du -sb $x >> "$O/b$b-scorep.count.txt"
done
t1=$(date +%s)
python3 -m dnabert_scaling sweep --gpus 1 --tracer auto --repeats 1 --no-baseline-no-ddp --no-busbw \
    --out /tmp/auto -- --model base --batch-size 8 --steps 5 --warmup-steps 2 > "$O/sweep-auto.log" 2>&1
echo "sweep rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/sweep-auto.log"
cp /tmp/auto/scorep-preflight.json /tmp/auto/sweep.json "$O/" 2>/dev/null; ls /tmp/auto >> "$O/sweep-auto.log"
for f in "$O"/*.count.txt; do echo "== $f"; grep -E '"(launches|kernels|copies|ratio|steps_complete|step_windows|min_step_ratio|host_enters)"|^[0-9]+' "$f"; done
grep -h "Skipping\|last written\|rc=\|median step\|auto ->" "$O"/*.log | sort | uniq -c | head -30
grep -h '"status"\|"ratio"\|"launches"' "$O/scorep-preflight.json"
rm -rf $E/*/*/synthetic-data/*/*.csv
cd $E && tar -cf - . | xz -T0 -6 > /tmp/ev.tar.xz; ls -la /tmp/ev.tar.xz; split -b 15M /tmp/ev.tar.xz "$OO/ev.tar.xz.part-"
cd "$OO" && tar -czf c3.tar.gz c3 && rm -rf c3; ls -la "$OO"
