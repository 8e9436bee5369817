"""torch.profiler (Kineto/CUPTI) tracing of the measured steps of one rank.

The schedule skips the warm-up steps and records exactly the measured ones; the trace is written
as one Chrome-trace ``.json.gz`` per rank (Kineto adds ``distributedInfo`` with the rank when the
process group is up). The default records CUDA activity only (kernels, copies, runtime launch
calls, and the ``ds:*`` phase ranges): host operator events would dilate launch-bound steps the
most, exactly the regime of the official batch size. ``cpu_ops=True`` adds them.
"""

from __future__ import annotations

from pathlib import Path

import torch


class TorchProfilerTracer:
    name = "torch"

    def __init__(self, path: Path, warmup_steps: int, measured_steps: int, device_type: str, cpu_ops: bool = False):
        self.path = Path(path)
        self.warmup_steps = warmup_steps
        self.measured_steps = measured_steps
        activities = []
        if device_type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        if cpu_ops or device_type != "cuda":
            activities.append(torch.profiler.ProfilerActivity.CPU)
        self.activities = activities
        self.cpu_ops = cpu_ops or device_type != "cuda"
        self._prof = None
        self.exported = False

    def _export(self, prof) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(self.path))
        self.exported = True

    def __enter__(self):
        schedule = torch.profiler.schedule(
            wait=max(self.warmup_steps - 1, 0),
            warmup=1 if self.warmup_steps >= 1 else 0,
            active=self.measured_steps,
            repeat=1,
        )
        self._prof = torch.profiler.profile(
            activities=self.activities,
            schedule=schedule,
            on_trace_ready=self._export,
            record_shapes=False,
            profile_memory=False,
            with_stack=False,
        )
        self._prof.__enter__()
        return self

    def step(self) -> None:
        self._prof.step()

    def __exit__(self, *exc):
        self._prof.__exit__(*exc)
        if exc[0] is None and not self.exported:
            raise RuntimeError(f"torch.profiler wrote no trace to {self.path} (schedule never reached its end)")
        return False
