#!/usr/bin/env python3
"""The smallest CUDA program that loses kernels under Score-P 8.4 + CUDA 13: two launching threads.

``--backward`` adds ``.backward()`` to the loop, so PyTorch's autograd thread launches the
backward kernels (an ``Orphan thread`` location in the trace) while the main thread launches the
forward ones: two host threads, one CUDA stream. Without it every launch is on the main thread.
Run it under ``python -m scorep --cuda --mpp=none --thread=pthread --nocompiler --noinstrumenter``
and count with ``scripts/scorep_count.py --step-region ds:lab``.
"""

import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--iterations", type=int, default=3000)
p.add_argument("--size", type=int, default=256)
p.add_argument("--backward", action="store_true")
args = p.parse_args()
x = torch.randn(args.size, args.size, device="cuda", requires_grad=args.backward)
w = torch.randn(args.size, args.size, device="cuda", requires_grad=args.backward)
torch.cuda.synchronize()
try:
    import scorep.user as user
except ImportError:
    user = None
if user:
    user.region_begin("ds:lab")
for _ in range(args.iterations):
    y = (x @ w).relu()
    if args.backward:
        y.sum().backward()
torch.cuda.synchronize()
if user:
    user.region_end("ds:lab")
print("two_threads: done", args)
