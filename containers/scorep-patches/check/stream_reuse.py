#!/usr/bin/env python3
"""The stream-reuse lab of 8.4-cupti-stream-ref-cache.patch: streams made and destroyed in turn.

Each of ``--streams`` iterations creates a CUDA stream with ``cuStreamCreate``, launches 1 to 3
PyTorch kernels on it (through ``torch.cuda.ExternalStream``), waits for them and destroys the
stream. The driver tends to give a new stream the handle of the one destroyed before it, while
CUPTI gives it a new stream id, so Score-P makes a new stream location for it. A stream
reference cache that outlived the destruction would point the new stream's launches at the old
stream's location: the launches that refer to a GPU location and the kernels on it would then
differ in number. The lab prints how many distinct handles its streams had; with none reused
the cache's forgetting was not exercised.

Run it under ``python -m scorep --cuda ...`` (``check_patches.py`` does).
"""

import argparse
import ctypes
import json

import torch

p = argparse.ArgumentParser()
p.add_argument("--streams", type=int, default=24)
args = p.parse_args()
cuda = ctypes.CDLL("libcuda.so.1")
x = torch.zeros(1024, device="cuda")
torch.cuda.synchronize()
try:
    import scorep.user as user
except ImportError:
    user = None
if user:
    user.region_begin("ds:lab")
handles, launches = [], 0
for i in range(args.streams):
    s = ctypes.c_void_p()
    rc = cuda.cuStreamCreate(ctypes.byref(s), 1)  # CU_STREAM_NON_BLOCKING
    if rc != 0:
        raise SystemExit(f"stream_reuse: cuStreamCreate failed with CUresult {rc}")
    handles.append(s.value)
    stream = torch.cuda.ExternalStream(s.value)
    with torch.cuda.stream(stream):
        for _ in range(1 + i % 3):
            x.add_(1)
            launches += 1
    stream.synchronize()
    rc = cuda.cuStreamDestroy_v2(s)
    if rc != 0:
        raise SystemExit(f"stream_reuse: cuStreamDestroy failed with CUresult {rc}")
torch.cuda.synchronize()
if user:
    user.region_end("ds:lab")
print(json.dumps({"lab": "stream_reuse", "streams": args.streams, "distinct_handles": len(set(handles)), "launches": launches}))
