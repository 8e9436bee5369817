"""What one rank writes about its run: the per-step log ``rank<R>/steps.jsonl`` and the summaries.

Timing adds no synchronisation inside the step: on CUDA each step records two CUDA events on the
compute stream, read back later with a non-blocking ``query()`` (and a final synchronize after the
last step). The step time is the GPU-timeline distance between consecutive step starts, so it
includes the gaps in which the GPU waits for the host. Losses stay on the device until the end.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any


class StepTimer:
    """Per-step times without a sync inside the step; completed steps are flushed to JSON lines."""

    def __init__(self, device_type: str, log_path: Path):
        import torch

        self.cuda = device_type == "cuda"
        self.torch = torch
        self.log = log_path.open("w", buffering=1)
        self.pending: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []

    def start(self, step: int, measured: bool) -> dict[str, Any]:
        rec: dict[str, Any] = {"step": step, "measured": measured, "host_start": time.perf_counter()}
        if self.cuda:
            rec["ev_start"] = self.torch.cuda.Event(enable_timing=True)
            rec["ev_start"].record()
        return rec

    def end(self, rec: dict[str, Any], loss, lr: float, host_phases: dict[str, float]) -> None:
        rec["host_end"] = time.perf_counter()
        if self.cuda:
            # A 4-byte asynchronous copy into pinned memory: readable without a stall once the
            # step's end event has completed (``.item()`` here would synchronise the stream).
            rec["loss_host"] = self.torch.empty((), dtype=self.torch.float32, pin_memory=True)
            rec["loss_host"].copy_(loss.detach().float(), non_blocking=True)
        else:
            rec["loss_host"] = loss.detach().float()
        rec["lr"] = lr
        rec["host_phase_s"] = host_phases
        if self.cuda:
            rec["ev_end"] = self.torch.cuda.Event(enable_timing=True)
            rec["ev_end"].record()
        self.pending.append(rec)
        self._flush(final=False)

    def _flush(self, final: bool) -> None:
        # A step is complete once the next step's start (or, for the last step, its own end) ran.
        while self.pending:
            rec = self.pending[0]
            nxt = self.pending[1] if len(self.pending) > 1 else None
            if self.cuda:
                marker = nxt["ev_start"] if nxt is not None else (rec["ev_end"] if final else None)
                if marker is None or not marker.query():
                    return
                step_ms = rec["ev_start"].elapsed_time(marker)
                busy_ms = rec["ev_start"].elapsed_time(rec["ev_end"])
                step_s, busy_s = step_ms / 1e3, busy_ms / 1e3
            else:
                if nxt is None and not final:
                    return
                step_s = (nxt["host_start"] if nxt is not None else rec["host_end"]) - rec["host_start"]
                busy_s = rec["host_end"] - rec["host_start"]
            self.pending.pop(0)
            out = {
                "step": rec["step"],
                "measured": rec["measured"],
                "step_time_s": step_s,
                "step_busy_s": busy_s,
                "host_step_s": rec["host_end"] - rec["host_start"],
                "host_phase_s": rec["host_phase_s"],
                "loss": float(rec["loss_host"]),
                "lr": rec["lr"],
                "timing": "cuda-events" if self.cuda else "host-clock",
            }
            self.records.append(out)
            self.log.write(json.dumps(out) + "\n")

    def finish(self) -> list[dict[str, Any]]:
        if self.cuda:
            self.torch.cuda.synchronize()
        self._flush(final=True)
        self.log.close()
        return self.records


def median(values: list[float]) -> float | None:
    """The median of the finite values; None when there are none."""
    vals = sorted(v for v in values if v is not None and math.isfinite(v))
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])


def param_fingerprint(model) -> str:
    """sha256 of every parameter (names and fp32 values): equal on all ranks of a consistent DDP run."""
    import hashlib

    h = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        h.update(name.encode())
        h.update(param.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


# --- summaries -----------------------------------------------------------------------------------


def rank_summary(
    records: list[dict[str, Any]],
    *,
    info,
    device,
    wall_measured_s: float,
    accuracy,
    param_sha256,
    trace,
    provenance,
    placement: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """This rank's ``rank<R>/summary.json`` from its step records (``StepTimer.finish``)."""
    measured = [r for r in records if r["measured"]]
    losses = [r["loss"] for r in records]
    return {
        "status": "ok",
        "rank": info.rank,
        "local_rank": info.local_rank,
        "device": str(device),
        "placement": placement,
        "measured_steps": len(measured),
        "median_step_time_s": median([r["step_time_s"] for r in measured]),
        "median_step_busy_s": median([r["step_busy_s"] for r in measured]),
        "wall_measured_s": wall_measured_s,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "finite_loss": all(math.isfinite(x) for x in losses),
        "dev_accuracy": accuracy,
        "param_sha256": param_sha256,
        "trace": trace,
        "provenance": provenance,
    }


def gather_rank_summaries(mine: dict[str, Any], info) -> list[dict[str, Any]]:
    """Every rank's summary (without its provenance, which rank 0's stands for), in rank order."""
    import torch.distributed as dist

    gathered: list[Any] = [mine]
    if dist.is_initialized() and info.world_size > 1:
        gathered = [None] * info.world_size
        light = {k: v for k, v in mine.items() if k != "provenance"}
        dist.all_gather_object(gathered, light)
    return gathered


def run_summary(config: dict[str, Any], gathered: list[dict[str, Any]], *, accuracy, fallbacks, deviations, provenance):
    """The run's ``summary.json`` (rank 0): ``config`` (the run's set-up, with ``global_batch`` and
    ``seq_len_tokens``), then the throughput of the slowest rank's median step and every rank's summary."""
    medians = [g["median_step_time_s"] for g in gathered if g.get("median_step_time_s")]
    slowest = max(medians) if len(medians) == len(gathered) else None  # a rank without a timed step: no throughput
    global_batch, seq_len = config["global_batch"], config["seq_len_tokens"]
    return {
        "status": "ok",
        **config,
        "median_step_time_s": slowest,
        "samples_per_s": global_batch / slowest if slowest else None,
        "tokens_per_s": global_batch * seq_len / slowest if slowest else None,
        "finite_loss": all(g["finite_loss"] for g in gathered),
        "dev_accuracy": accuracy,
        "ranks": gathered,
        "fallbacks": fallbacks,
        "deviations": deviations,
        "provenance": provenance,
    }


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    path.write_text(json.dumps(summary, indent=2) + "\n")


def result_line(summary: dict[str, Any], mine: dict[str, Any]) -> str:
    """The one line rank 0 prints at the end: median step, throughput, its loss, dev accuracy."""
    slowest, accuracy = summary["median_step_time_s"], summary["dev_accuracy"]
    speed = f"median step {slowest * 1e3:.2f} ms, {summary['samples_per_s']:.1f} samples/s" if slowest else "no timed step"
    return (
        f"ws={summary['world_size']} {summary['device_type']} tracer={summary['tracer']}: {speed}, "
        f"loss {mine['loss_first']:.4f} -> {mine['loss_last']:.4f}"
        + (f", dev accuracy {accuracy:.3f}" if accuracy is not None else "")
    )
