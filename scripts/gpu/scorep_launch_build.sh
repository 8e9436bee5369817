#!/usr/bin/env bash
# GPU call (issue 24, 1 of 2), from the device copy's root: bash .gpu-run-scorep/scripts/gpu/scorep_launch_build.sh
# Rebuilds Score-P 8.4 with every containers/scorep-patches/8.4-*.patch (stream order + launch-only
# driver callbacks, the latter a candidate of series-8.4) into /opt/scorep-launch, verifies the launch-only mode on a short train run
# and on the two-thread lab (kernel completeness, trace size, stream references), packs the
# install into $OUT in <16 MiB parts. The install stays in /opt for the next call on a warm machine.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run-scorep; O=${OUT:-/tmp/out}
mkdir -p "$O/c1"; cd "$R"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; cat REVISION; } > "$O/c1/machine.txt" 2>&1
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
[ -x /opt/scorep-launch/bin/scorep ] || bash containers/build-scorep.sh --source "$K/scorep-8.4-src.tar.xz" --prefix /opt/scorep-launch --jobs 16 --strip --candidate-patches \
  --libbfd-include /tmp/bfd/usr/include --libbfd-lib /tmp/bfd/usr/lib/x86_64-linux-gnu --nvtx2-include "$K/nvtx2" \
  --cuda "$CUDA" --build-dir /tmp/sb > "$O/c1/build.log" 2>&1
rc=$?; el "build rc=$rc"; tail -5 "$O/c1/build.log"
[ -x /opt/scorep-launch/bin/scorep ] || { grep -n "error" "$O/c1/build.log" | tail -30; exit 1; }
cat /opt/scorep-launch/share/scorep-patches.txt
# the kit's prebuilt install is not carried (size): the bindings are built against the new one
rm -rf /opt/scorep && ln -s /opt/scorep-launch /opt/scorep
( tar -C /opt -cf - scorep-launch | xz -T8 -6 > /tmp/scorep-launch.tar.xz
  split -b 15M /tmp/scorep-launch.tar.xz "$O/scorep-launch.tar.xz.part-"; sha256sum /tmp/scorep-launch.tar.xz > "$O/scorep-launch.sha256" ) &
PACK=$!
source "$K/setup-on-gpu.sh" "$K" > "$O/c1/setup.log" 2>&1; el setup; tail -2 "$O/c1/setup.log"
export PYTHONPATH=$R/artifact:$PYTHONPATH
/opt/scorep/bin/scorep-info config-vars --full 2>/dev/null | grep -A3 "DRIVER_CALLBACKS" | head -8
trainrun() {  # trainrun NAME MODE BATCH (MODE: what the artifact should choose by itself)
  local n=$1 m=$2 b=$3; local t=$(date +%s)
  python3 -m dnabert_scaling train --tracer scorep --model base --synthetic --batch-size "$b" \
      --steps 15 --warmup-steps 5 --no-progress --out /tmp/runs/$n > "$O/c1/$n.log" 2>&1
  echo "train rc=$? wall $(( $(date +%s) - t )) s" >> "$O/c1/$n.log"
  local x=/tmp/runs/$n/traces/scorep-rank0
  python3 scripts/scorep_count.py $x --json "$O/c1/$n.count.json" > /dev/null 2>&1
  grep -h "DRIVER_CALLBACKS\|CUDA_ENABLE" $x/scorep.cfg >> "$O/c1/$n.log"
  du -sb $x >> "$O/c1/$n.log"
  python3 -m dnabert_scaling analyze /tmp/runs/$n --out /tmp/an/$n > "$O/c1/$n.analyze.log" 2>&1
  cp /tmp/an/$n/metrics.json "$O/c1/$n.metrics.json" 2>/dev/null
  el "$n: $(tail -3 "$O/c1/$n.log" | tr '\n' ' ')"
  python3 - "$O/c1/$n.count.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); print({k: c.get(k) for k in ("launches", "kernels", "steps_complete", "step_windows", "min_step_ratio", "host_enters")})
PY
}
mkdir -p /tmp/runs /tmp/an
trainrun launch-b8 launch 8

SP=(python3 -m scorep --cuda --mpp=none --thread=pthread --nocompiler --noinstrumenter)
for m in launch; do
  env SCOREP_ENABLE_TRACING=true SCOREP_CUDA_ENABLE=driver,kernel,memcpy,references SCOREP_CUDA_BUFFER=64M \
      SCOREP_TIMER=clock_gettime SCOREP_CUDA_DRIVER_CALLBACKS=$m SCOREP_EXPERIMENT_DIRECTORY=/tmp/lab-$m \
      "${SP[@]}" containers/scorep-patches/check/two_threads.py --backward > "$O/c1/lab-$m.log" 2>&1
  python3 scripts/scorep_count.py /tmp/lab-$m --step-region ds:lab --json "$O/c1/lab-$m.count.json" > /dev/null 2>&1
  el "lab $m: $(grep -o '"launches": [0-9]*\|"kernels": [0-9]*' "$O/c1/lab-$m.count.json" | tr '\n' ' ')"
done
(cd "$O" && tar -czf c1.tar.gz c1 && rm -rf c1)
wait $PACK; cat "$O/scorep-launch.sha256"
el done; ls -la "$O"
