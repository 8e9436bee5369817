"""Bucket readiness in every trace: a DDP communication hook that marks each bucket's all-reduce.

DDP hands a gradient bucket to its communication hook as soon as every gradient in it is ready
during backward; the hook returns a future and the reducer waits for it at the end of backward.
``BucketHook`` calls PyTorch's own ``allreduce_hook`` (divide by the world size, then all_reduce
with sum: the same arithmetic as DDP's built-in reduction; at world size 1 and at power-of-two
world sizes the division is exact, so parameters stay bitwise identical) inside a range named
``ds:bucket:<index>:<bytes>`` (``PhaseMarker.bucket``: a ``record_function`` + NVTX range under
torch.profiler, a Score-P user region under Score-P). DDP calls the hook at every world size,
world size 1 included, where NCCL launches no kernel: so a one-GPU trace already says when
each bucket becomes ready and how large it is, which is what ``dnabert_scaling.analysis.predict``
needs.

The hook also keeps the byte size and the number of gradient tensors of every bucket it saw (by
index; the last ones, i.e. after DDP's bucket rebuild in the first iteration), for the run
summary.
"""

from __future__ import annotations

from typing import Any

HOOK_NAME = "ds:bucket + torch allreduce_hook"


class BucketHook:
    """A DDP comm hook that marks each bucket and records its size: ``BucketHook(marker).register(ddp)``."""

    def __init__(self, marker, process_group=None):
        self.marker = marker
        self.process_group = process_group
        self.sizes: dict[int, int] = {}
        self.tensors: dict[int, int] = {}
        self.calls = 0

    def hook(self, state, bucket):
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        buf = bucket.buffer()
        index, nbytes = bucket.index(), buf.numel() * buf.element_size()
        if self.sizes.get(index) != nbytes:  # first sight, or DDP rebuilt its buckets
            self.sizes[index] = nbytes
            self.tensors[index] = len(bucket.parameters())
        self.calls += 1
        with self.marker.bucket(index, nbytes):
            return allreduce_hook(self.process_group, bucket)

    def register(self, ddp_model) -> "BucketHook":
        # DDP's state argument is unused: the hook keeps what it needs on itself.
        ddp_model.register_comm_hook(None, self.hook)
        return self

    def summary(self, bucket_cap_mb: float) -> dict[str, Any]:
        """What the run summary records about DDP's buckets."""
        import torch.distributed as dist

        sizes = [self.sizes[i] for i in sorted(self.sizes)]
        return {
            "comm_hook": HOOK_NAME,
            "bucket_cap_mb": bucket_cap_mb,
            "first_bucket_cap_bytes": int(getattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES", 1024 * 1024)),
            "buckets": len(sizes),
            "bucket_bytes": sizes,
            "bucket_tensors": [self.tensors[i] for i in sorted(self.sizes)],
            "gradient_bytes": sum(sizes),
            "hook_calls": self.calls,
        }
