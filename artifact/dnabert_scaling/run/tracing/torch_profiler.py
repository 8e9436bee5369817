"""torch.profiler (Kineto/CUPTI) tracing of the measured steps of one rank.

Two modes:

- ``cuda`` (the default): CUDA activity (kernels, copies, memsets, the runtime/driver launch calls
  with their correlation ids) plus the *user-scope* ranges only: the ``ds:*`` phase marks and the
  few ``record_function`` ranges of DDP and the optimizer. ``torch.profiler.profile`` offers no
  such mode: with CPU activity it records every operator (which dilated a launch-bound step
  about 1.5-2.5x on an H200), and without it Kineto drops the ``record_function`` ranges, so the
  phases would be lost. The profiler's own ``_enable_profiler`` takes a set of RecordFunction
  scopes; this module passes ``{USER_SCOPE}``.
- ``cuda+cpu`` (``--trace-cpu-ops``): every host operator as well, as a plain torch.profiler does.

The warm-up steps are not recorded: the profiler is prepared (CUPTI initialised, as
torch.profiler's own warm-up step does) at the start of the last warm-up step and enabled at the
first measured step, and the trace is written after the last measured step, as one Chrome-trace
``.json.gz`` per rank with ``distributedInfo`` (backend, rank, world size).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
from torch.autograd import profiler as autograd_profiler


class _ScopedProfile(autograd_profiler.profile):
    """``torch.autograd.profiler.profile`` that records only the given RecordFunction scopes."""

    def __init__(self, *args, scopes=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._scopes = scopes

    def _start_trace(self):
        if self._scopes is None:
            return super()._start_trace()
        self.entered = True
        torch._C._autograd._enable_profiler(self.config(create_trace_id=False), self.kineto_activities, self._scopes)
        self.profiling_start_time_ns = __import__("time").perf_counter_ns()


class TorchProfilerTracer:
    name = "torch"

    def __init__(
        self,
        path: Path,
        warmup_steps: int,
        measured_steps: int,
        device_type: str,
        cpu_ops: bool = False,
        rank: int = 0,
        world_size: int = 1,
        backend: str | None = None,
    ):
        self.path = Path(path)
        self.warmup_steps = warmup_steps
        self.last_step = warmup_steps + measured_steps - 1
        self.cuda = device_type == "cuda"
        self.cpu_ops = cpu_ops
        self.mode = ("cuda" if self.cuda else "cpu") + ("+cpu-ops" if cpu_ops else "")
        self.dist_info = {"backend": backend, "rank": rank, "world_size": world_size}
        scopes = None if cpu_ops else {torch._C._profiler.RecordScope.USER_SCOPE}
        self._prof = _ScopedProfile(
            use_device="cuda" if self.cuda else None,
            record_shapes=False,
            profile_memory=False,
            with_stack=False,
            use_kineto=True,
            scopes=scopes,
        )
        self._prepared = self._enabled = False
        self.exported = False

    def __enter__(self):
        return self

    def step_begin(self, step: int) -> None:
        if not self._prepared and step >= max(self.warmup_steps - 1, 0):
            self._prof._prepare_trace()
            self._prepared = True
        if not self._enabled and step == self.warmup_steps:
            self._prof._start_trace()
            torch.autograd._add_metadata_json("distributedInfo", json.dumps(self.dist_info))
            self._enabled = True

    def step_end(self, step: int) -> None:
        if self._enabled and step == self.last_step:
            self._stop_and_export()

    def _stop_and_export(self) -> None:
        self._prof.__exit__(None, None, None)  # synchronizes the device, then disables
        self._enabled = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".json", dir=self.path.parent)
        os.close(fd)
        try:
            self._prof.kineto_results.save(tmp)
            with open(tmp, "rb") as src, gzip.open(self.path, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        finally:
            os.unlink(tmp)
        self.exported = True

    def __exit__(self, exc_type, *rest):
        if self._enabled:  # an error inside the measured steps: stop the profiler, write nothing
            torch._C._autograd._disable_profiler()
            self._enabled = False
        if exc_type is None and not self.exported:
            raise RuntimeError(f"torch profiler wrote no trace to {self.path} (the measured steps never ended)")
        return False
