"""The metric paths a claim may name: the tree of one world size's entry in ``metrics.json``.

A leaf is None; a STAT is {"median", "p10", "p90", "min", "max", "n"} and must be named down to
one of its fields.
"""

from __future__ import annotations

from typing import Any

from dnabert_scaling.checker.names import SANITY_ITEMS

_STAT = {k: None for k in ("median", "p10", "p90", "min", "max", "n")}
_GPU_STATS = (
    "step_time_s",
    "compute_s",
    "exposed_comm_s",
    "exposed_memcpy_s",
    "idle_s",
    "nccl_kernels_per_step",
    "nccl_kernel_sum_s",
    "nccl_union_s",
    "overlap_ratio",
    "exposed_comm_share",
    "allreduce_kernel_s",
    "allreduce_kernels_per_step",
    "allreduce_share",
    "forward_gpu_s",
    "backward_gpu_s",
    "optimizer_gpu_s",
    "allreduce_to_backward",
    "kernels_per_step",
    "idle_host_wait_s",
    "idle_kernel_wait_s",
    "idle_other_s",
    "launches_per_step",
    "launch_call_s",
    "host_s_per_launch",
)
_BUSY_WAIT = {
    k: None for k in ("allreduce_kernel_s", "transfer_s_at_measured_busbw", "ratio", "busbw_GBps", "gradient_bytes", "buckets")
}
METRIC_TREE: dict[str, Any] = {
    "world_size": None,
    "traced": {
        "run": None,
        "tracer": None,
        "format": None,
        "trace_mode": None,
        "device_type": None,
        "ranks": None,
        "measured_steps": None,
        "gpu_not_run_reason": None,
        "sanity": {k: None for k in SANITY_ITEMS},
        "gpu": {
            **{k: _STAT for k in _GPU_STATS},
            "allreduce_streams": None,
            "compute_streams": None,
            "allreduce_own_stream": None,
            "ranking": None,
            "kernel_classes": None,
            "phase_method": None,
            "timeline_step": None,
            "per_rank": None,
            "rank_skew": {
                "allreduce_start_skew_s": _STAT,
                "clock": None,
                "late_rank_share": None,
                "buckets": None,
                "steps_skipped": None,
            },
            "busy_wait": _BUSY_WAIT,
        },
    },
    "throughput": {
        "source": None,
        "runs": None,
        "global_batch": None,
        "device_type": None,
        "samples_per_s": _STAT,
        "step_time_s": _STAT,
    },
    "throughput_noddp": {"runs": None, "samples_per_s": _STAT},
    "efficiency": None,
    "efficiency_vs_noddp": None,
    "efficiency_baseline": None,
    "dilation": None,
    "efficiency_spread": {"min": None, "max": None, "runs_n": None, "baseline_runs_n": None},
    "dilation_kind": None,
    "busy_wait": _BUSY_WAIT,
}


def _metric_node(path: str) -> tuple[bool, str]:
    """(is a leaf, problem) for a dotted metric path; problem is '' when the path is known."""
    node: Any = METRIC_TREE
    parts = path.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            where = ".".join(parts[:i]) or "a world size's entry"
            options = ", ".join(sorted(node)) if isinstance(node, dict) else "nothing (it is a value)"
            return False, f"unknown metric path {path!r}: {where} has no {part!r} (it has: {options})"
        node = node[part]
    if isinstance(node, dict):
        return False, f"metric path {path!r} names a group, not a value: add one of {', '.join(node)}"
    return True, ""
