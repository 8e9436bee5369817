"""One optimisation step (forward, backward, AdamW) with its phase marks, and its optimizer.

Shared by the training loop and the benchmarks (``scripts/bench_train.py``,
``scripts/bench_bucket_hook.py``), so both run the same host code.
"""

from __future__ import annotations

import time
from typing import Any


def build_optimizer(model, args, device_type: str):
    import torch

    decay, no_decay = [], []
    for name, param in model.named_parameters():
        # As the HF Trainer: no weight decay on biases and LayerNorm weights.
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layernorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kwargs: dict[str, Any] = {}
    if args.optimizer_impl == "fused":
        kwargs["fused"] = True
    elif args.optimizer_impl == "foreach":
        kwargs["foreach"] = True
    return torch.optim.AdamW(groups, lr=args.lr, **kwargs)


def linear_schedule(optimizer, warmup: int, total: int):
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return float(step + 1) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class TrainStep:
    """One optimisation step with its phase marks: forward, backward, optimizer.

    Shared by the training loop and the benchmarks, so both run the same host code. Returns the
    loss (a device tensor: nothing here waits for the GPU) and the host time of each phase.
    """

    def __init__(self, train_model, model, optimizer, scheduler, autocast, scaler, max_grad_norm, marker):
        self.train_model, self.model = train_model, model
        self.optimizer, self.scheduler = optimizer, scheduler
        self.autocast, self.scaler = autocast, scaler
        self.max_grad_norm = max_grad_norm
        self.marker = marker
        self.params = [p for p in model.parameters() if p.requires_grad]

    def __call__(self, ids, mask, labels, measured: bool = True, inject_fault: str | None = None):
        import torch

        marker, scaler, optimizer = self.marker, self.scaler, self.optimizer
        with marker.phase("step" if measured else "warmup"):
            t0 = time.perf_counter()
            with marker.phase("forward"):
                with self.autocast:
                    loss = self.train_model(ids, mask, labels).loss
            t1 = time.perf_counter()
            if inject_fault:
                raise RuntimeError(inject_fault)
            with marker.phase("backward"):
                (scaler.scale(loss) if scaler else loss).backward()
            t2 = time.perf_counter()
            with marker.phase("optimizer"):
                if scaler:
                    scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
                if scaler:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                self.scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            t3 = time.perf_counter()
        return loss, {"forward": t1 - t0, "backward": t2 - t1, "optimizer": t3 - t2}
