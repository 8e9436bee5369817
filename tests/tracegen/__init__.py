"""Hand-built OTF2 archives in the Score-P 9 layout with a known ground truth, for the tests.

``write_ground_truth(dir)`` writes one rank whose every summary figure was computed by hand
(below, in nanoseconds); the archive uses a 2 GHz timer (ticks = 2 x ns) so that the tick
conversion is exercised, and holds what a real Score-P 9 CUDA trace holds around the kernels:
a ``COMPUTE IDLE`` region on the first stream (excluded from busy time), launch calls with
``CUDA_STREAM_REF``, ``user:ds:*`` phases nested with Python-function regions, copies as RMA
operations, and a METRIC location that the reader must skip with a note, not silently.

Ground truth (ns):

    stream 7 (compute): A [100,300)  B [400,700)  C [1000,1200)   idle region [700,1000)
    stream 9 (compute): D [250,450)
    stream 13 (nccl):   N1 AllReduce [500,800)   N2 Broadcast [1300,1400)
    stream 7 copies:    HtoD [0,100) 4096 B, DtoH [1150,1250) 8 B;  memset [1500,1510)

    U compute = [100,700) + [1000,1200)            = 800
    U nccl    = [500,800) + [1300,1400)            = 400;  kernel sum 400
    overlap   = [500,700)                          = 200;  ratio 0.5
    exposed comm   = [700,800) + [1300,1400)       = 200
    exposed memory = [0,100) + [1200,1250) + [1500,1510) = 160
    total = 1510 - 0 = 1510;  U all = 1160;  idle = 350
    800 + 200 + 160 + 350 = 1510
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dnabert_scaling.traces.otf2_writer import (
    NO_VALUE,
    OP_DONE,
    OP_ENTER,
    OP_GET,
    OP_LEAVE,
    OP_PUT,
    ScoreP9Writer,
)
from dnabert_scaling.traces.otf2_reader import ATTR_STREAM_REF

RES = 2_000_000_000  # ticks per second: 2 ticks per ns

EXPECTED = {
    "kernel_count": 6,
    "nccl_kernel_count": 2,
    "memcpy_count": 2,
    "memset_count": 1,
    "ns": {
        "first_start": 0,
        "last_end": 1510,
        "total": 1510,
        "busy": 1160,
        "compute": 800,
        "nccl": 400,
        "nccl_kernel_sum": 400,
        "overlap": 200,
        "exposed_comm": 200,
        "exposed_memcpy": 160,
        "idle": 350,
    },
    "overlap_ratio": 0.5,
}

KERNELS = [  # (stream, name, start, end)
    (7, "void at::native::vectorized_elementwise_kernel<4, float>(int, float*)", 100, 300),
    (7, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 400, 700),
    (7, "void at::native::vectorized_elementwise_kernel<4, float>(int, float*)", 1000, 1200),
    (9, "at::native::reduce_kernel<512, 1>", 250, 450),
    (13, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 500, 800),
    (13, "ncclKernel_Broadcast_RING_LL_Sum_int8_t", 1300, 1400),
]
PHASES = [("step", 0, 1600), ("forward", 50, 600), ("backward", 600, 1450), ("optimizer", 1450, 1590)]
LAUNCH_STREAMS = [7, 9, 13, 7, 13, 7]
LAUNCHES = [(60, 90), (200, 240), (450, 490), (900, 950), (1250, 1280), (1460, 1490)]  # within phases


def t(ns):
    return np.asarray(ns, dtype=np.int64) * 2


def write_ground_truth(directory, *, with_metric: bool = True) -> Path:
    """Write the archive described in the module docstring; returns the experiment directory."""
    d = Path(directory)
    with ScoreP9Writer(d, creator="Score-P 9.0", timer_resolution=RES) as w:
        main = w.thread("Master thread")
        autograd = w.thread("Pthread thread 1")
        s7, s9, s13 = w.stream(0, 7), w.stream(0, 9), w.stream(0, 13)
        win = w.cuda_window("Master thread")
        if with_metric:
            import otf2

            w.defs.location("metric location", type=otf2.LocationType.METRIC, group=w.process)
        import otf2

        idle_region = w.defs.region("COMPUTE IDLE", region_role=otf2.RegionRole.ARTIFICIAL, paradigm=otf2.Paradigm.CUDA)
        memset = w.region("Memset", "memset")
        kref = {name: w.region(name, "kernel")._ref for _, name, _, _ in KERNELS}
        # stream 7: HtoD copy, A, B, idle, C with the DtoH copy overlapping C, memset.
        host_rank = w.window_rank(main)
        ev7 = [
            (0, OP_GET, win._ref, host_rank, 4096, 1),
            (100, OP_DONE, win._ref, 0, 0, 1),
            (100, OP_ENTER, kref[KERNELS[0][1]], 0, 0, 0),
            (300, OP_LEAVE, kref[KERNELS[0][1]], 0, 0, 0),
            (400, OP_ENTER, kref[KERNELS[1][1]], 0, 0, 0),
            (700, OP_LEAVE, kref[KERNELS[1][1]], 0, 0, 0),
            (700, OP_ENTER, idle_region._ref, 0, 0, 0),
            (1000, OP_LEAVE, idle_region._ref, 0, 0, 0),
            (1000, OP_ENTER, kref[KERNELS[2][1]], 0, 0, 0),
            (1150, OP_PUT, win._ref, host_rank, 8, 2),
            (1200, OP_LEAVE, kref[KERNELS[2][1]], 0, 0, 0),
            (1250, OP_DONE, win._ref, 0, 0, 2),
            (1500, OP_ENTER, memset._ref, 0, 0, 0),
            (1510, OP_LEAVE, memset._ref, 0, 0, 0),
        ]
        _write(w, s7, ev7)
        _write(w, s9, [(250, OP_ENTER, kref[KERNELS[3][1]], 0, 0, 0), (450, OP_LEAVE, kref[KERNELS[3][1]], 0, 0, 0)])
        _write(
            w,
            s13,
            [
                (500, OP_ENTER, kref[KERNELS[4][1]], 0, 0, 0),
                (800, OP_LEAVE, kref[KERNELS[4][1]], 0, 0, 0),
                (1300, OP_ENTER, kref[KERNELS[5][1]], 0, 0, 0),
                (1400, OP_LEAVE, kref[KERNELS[5][1]], 0, 0, 0),
            ],
        )
        # Main thread: phases, Python-function noise, launches with CUDA_STREAM_REF.
        phase_ref = {p: w.region(f"user:ds:{p}", "user")._ref for p, _, _ in PHASES}
        launch = w.region("cuLaunchKernel", "launch")._ref
        fn = w.region("torch.nn.modules.module:_call_impl", "function")._ref
        streams = {7: s7._ref, 9: s9._ref, 13: s13._ref}
        main_ev = [
            (0, OP_ENTER, phase_ref["step"], NO_VALUE),
            (50, OP_ENTER, phase_ref["forward"], NO_VALUE),
            (55, OP_ENTER, fn, NO_VALUE),
        ]
        for (ls, le), st in zip(LAUNCHES[:3], LAUNCH_STREAMS[:3]):
            main_ev += [(ls, OP_ENTER, launch, streams[st]), (le, OP_LEAVE, launch, NO_VALUE)]
        main_ev += [
            (500, OP_LEAVE, fn, NO_VALUE),
            (600, OP_LEAVE, phase_ref["forward"], NO_VALUE),
            (600, OP_ENTER, phase_ref["backward"], NO_VALUE),
            (1450, OP_LEAVE, phase_ref["backward"], NO_VALUE),
            (1450, OP_ENTER, phase_ref["optimizer"], NO_VALUE),
            (LAUNCHES[5][0], OP_ENTER, launch, streams[7]),
            (LAUNCHES[5][1], OP_LEAVE, launch, NO_VALUE),
            (1590, OP_LEAVE, phase_ref["optimizer"], NO_VALUE),
            (1600, OP_LEAVE, phase_ref["step"], NO_VALUE),
        ]
        _write_host(w, main, main_ev)
        ag = []
        for (ls, le), st in zip(LAUNCHES[3:5], LAUNCH_STREAMS[3:5]):
            ag += [
                (ls - 2, OP_ENTER, fn, NO_VALUE),
                (ls, OP_ENTER, launch, streams[st]),
                (le, OP_LEAVE, launch, NO_VALUE),
                (le + 2, OP_LEAVE, fn, NO_VALUE),
            ]
        _write_host(w, autograd, ag)
    return d


def _write(w, loc, events):
    ts, op, a, b, c, dd = zip(*events)
    w.write_events(loc, t(ts), op, a, b, c, dd)


def _write_host(w, loc, events):
    ts, op, a, sref = zip(*events)
    w.write_events(loc, t(ts), op, a, attrs={ATTR_STREAM_REF: np.array(sref, dtype=np.int64)})
