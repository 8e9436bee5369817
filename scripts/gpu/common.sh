# sourced by the GPU call scripts: Score-P 8.4 with the stream-order patch (the install that
# containers/build-scorep.sh made in call 2, carried in .gpu-kit) as /opt/scorep, the bindings
# built against it, the snapshot's code on PYTHONPATH.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD; K=$ROOT/.gpu-kit; R=$ROOT/.gpu-run; OO=${OUT:-/tmp/out}
cat "$K"/scorep-patched.tar.xz.part-* | xz -d | tar -x -C /opt
rm -rf /opt/scorep && ln -s /opt/scorep-patched /opt/scorep
mkdir -p /tmp/bfd; for d in "$K"/debs/*.deb; do dpkg -x "$d" /tmp/bfd; done
source "$K/setup-on-gpu.sh" "$K" > "$OO/setup.log" 2>&1; tail -2 "$OO/setup.log"
export PYTHONPATH=$R/artifact:$PYTHONPATH
cd "$R"
