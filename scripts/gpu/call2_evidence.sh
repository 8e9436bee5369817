#!/usr/bin/env bash
# GPU call 2 (bash .gpu-run/scripts/gpu/call2_evidence.sh from the device copy's root):
# build the patched Score-P 8.4 with containers/build-scorep.sh in a clean environment (no other
# Score-P on PATH, so its own OTF2/Cube are built; 215 s on the H200 machine), make it
# /opt/scorep, one --scorep-python run, and bring the install back (carried into calls 3 and 4).
# (As run, this call also held the repro and the evidence sweeps, which failed on two script
# mistakes, --repeats 0 and a missing /tmp/lab; they were redone in call 3 and are left out here.)
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
t1=$(date +%s)
python3 -m dnabert_scaling train --tracer scorep --scorep-python --model base --synthetic --batch-size 8 --steps 10 \
    --warmup-steps 3 --no-progress --out /tmp/pyrun > "$O/python-b8.log" 2>&1
echo "train rc=$? wall $(( $(date +%s) - t1 )) s" >> "$O/python-b8.log"
du -sb /tmp/pyrun/traces/scorep-rank0 > "$O/python-b8.size.txt"; ls -la /tmp/pyrun/traces/scorep-rank0 >> "$O/python-b8.size.txt"
cp /tmp/pyrun/rank0/steps.jsonl "$O/python-b8.steps.jsonl" 2>/dev/null; cp /tmp/pyrun/rank0/summary.json "$O/python-b8.summary.json" 2>/dev/null
grep -h "rc=" "$O"/*.log; head -3 "$O/python-b8.size.txt"
tar -C /opt -cf - scorep-patched | xz -T0 -6 > /tmp/patched.tar.xz; split -b 15M /tmp/patched.tar.xz "$OO/scorep-patched.tar.xz.part-"
cd "$OO" && tar -czf c2.tar.gz c2 && rm -rf c2; ls -la "$OO"
