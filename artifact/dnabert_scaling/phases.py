"""Phase annotations that every tracer sees.

The training loop marks ``step`` (or ``warmup``), ``forward``, ``backward`` and ``optimizer``
through one interface, and the DDP comm hook (``dnabert_scaling.run.train.buckets``) marks each gradient
bucket's all-reduce call as ``ds:bucket:<index>:<bytes>``. Under Score-P the marks are Score-P user regions (``ds:<name>``); otherwise
they are ``torch.profiler.record_function`` ranges (what Kineto records as ``user_annotation``)
plus NVTX ranges on CUDA (what Nsight Systems shows). The untraced runs keep the same marks, so
traced and untraced runs execute the same host code and the tracing dilation is the tracer's alone.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from typing import Any, Iterator

# The one list of phase names: the training loop marks them, every reader and analysis uses them.
PREFIX = "ds:"
STEP_PHASES = ("forward", "backward", "optimizer")  # inside each step, in this order
PHASES = ("step", "warmup", *STEP_PHASES)  # what PhaseMarker.phase() marks
BUCKET = "bucket"  # the DDP comm hook's range, ``ds:bucket:<index>:<bytes>``
PHASE_NAMES = (*PHASES, BUCKET)  # host range names in the trace tables
STEP_RANGES = (PREFIX + "warmup", PREFIX + "step")  # the ranges that delimit one step each


class PhaseMarker:
    """``with marker.phase("forward"): ...`` emits a range named ``ds:forward``."""

    def __init__(self, backend: str, cuda: bool = False) -> None:
        if backend not in ("scorep", "torch"):
            raise ValueError(f"unknown phase backend {backend!r}")
        self.backend = backend
        self._nvtx: Any = None  # torch.cuda.nvtx when marking NVTX ranges too
        if backend == "scorep":
            import scorep.user  # available under `python -m scorep`

            self._begin, self._end = scorep.user.region_begin, scorep.user.region_end
        else:
            import torch

            self._record = torch.profiler.record_function
            if cuda:
                self._nvtx = torch.cuda.nvtx

    def phase(self, name: str) -> AbstractContextManager[None]:
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}")
        return self._range(PREFIX + name)

    def bucket(self, index: int, nbytes: int) -> AbstractContextManager[None]:
        """``ds:bucket:<index>:<bytes>``: one DDP bucket handed to its all-reduce (the arguments
        are in the name, the one field both Kineto's ``user_annotation`` and a Score-P region keep)."""
        return self._range(f"{PREFIX}{BUCKET}:{int(index)}:{int(nbytes)}")

    @contextmanager
    def _range(self, label: str) -> Iterator[None]:
        if self.backend == "scorep":
            self._begin(label)
            try:
                yield
            finally:
                self._end(label)
            return
        if self._nvtx is not None:
            self._nvtx.range_push(label)
        try:
            with self._record(label):
                yield
        finally:
            if self._nvtx is not None:
                self._nvtx.range_pop()
