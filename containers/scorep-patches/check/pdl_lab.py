#!/usr/bin/env python3
"""Kernels that end inside an earlier kernel of their own stream (the lab of
8.4-cupti-overlap-kept.patch): builds ``pdl_lab.cu`` with nvcc into ``--build-dir`` and runs its
pairs inside the Score-P user region ``ds:lab``. Prints one JSON line: the pairs, and in how many
the device clock saw the secondary end before its primary (``contained``). Run it under
``python -m scorep --cuda --mpp=none --thread=pthread --nocompiler --noinstrumenter`` and count
with ``scripts/scorep_count.py --step-region ds:lab``. Exit status 2: it cannot run here (no nvcc,
no GPU of compute capability 9.0 or newer).
"""

import argparse
import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(out_dir: Path) -> Path:
    lib = out_dir / "libpdl_lab.so"
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit(2)
    cmd = [nvcc, "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", str(lib), str(HERE / "pdl_lab.cu")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"pdl_lab: nvcc failed: {proc.stderr[-1500:]}", file=sys.stderr)
        raise SystemExit(2)
    return lib


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--spin-us", type=int, default=50)
    p.add_argument("--build-dir", type=Path, required=True)
    args = p.parse_args()
    lab = ctypes.CDLL(str(build(args.build_dir)))
    try:
        import scorep.user as user
    except ImportError:
        user = None
    contained = ctypes.c_int(0)
    if user:
        user.region_begin("ds:lab")
    err = lab.pdl_pairs(args.pairs, ctypes.c_ulonglong(args.spin_us * 1000), ctypes.byref(contained))
    if user:
        user.region_end("ds:lab")
    print(json.dumps({"pairs": args.pairs, "contained": contained.value, "cuda_error": err}))
    return 0 if err == 0 else (2 if err in (209, 98) else 1)  # no kernel image / invalid device function


if __name__ == "__main__":
    sys.exit(main())
