"""Kernel classes: GPU time grouped by what the kernels do, next to the by-name ranking of C3.

The study ranks GPU activities by name (Vampir's function summary): AllReduce summed over all
gradient buckets against each compute kernel on its own. The classes below put compute kernels
of one kind together so the comparison is like for like. Each activity gets the first class
whose rule matches (the rules read the demangled name of ``traces.classify``):

1. ``nccl:<Collective>``: NCCL kernels (category ``nccl``), by collective (``nccl:unknown``
   when neither the name nor the trace says which); the three of a DDP step are
   ``nccl:AllReduce`` (the gradient sync, one per bucket), ``nccl:AllReduce(int)`` (the
   used-parameter map of ``find_unused_parameters``) and ``nccl:Broadcast`` (``broadcast_buffers``),
   see ``traces.classify.NCCL_ROLES``.
2. ``copy/memset``: copies and memsets (kind ``memcpy`` / ``memset``).
3. ``optimizer``: compute kernels launched during the optimizer phase (``ds:optimizer``: the
   update, gradient clipping, zeroing), and anywhere the fused/foreach optimizer kernels
   (``multi_tensor_apply``, ``adam``, ``sgd`` in the name).
4. ``attention``: ``flash``, ``fmha``, ``sdpa``, ``attention`` in the name, and cuDNN's fused
   attention helpers (``cudnn::fusion::compute_dot_do_o``, ``convert_dq``).
5. ``GEMM``: ``gemm``, ``nvjet`` (cuBLAS on Hopper), ``cutlass``, ``cublas``, ``xmma``, ``wgmma``,
   ``matmul`` in the name.
6. ``normalisation``: ``layer_norm``, ``layernorm``, ``GammaBeta``, ``batch_norm``, ``group_norm``,
   ``rms_norm`` in the name.
7. ``reduction/softmax``: ``reduce_kernel``, ``softmax``, ``nll_loss``, ``cross_entropy``,
   ``lpnorm`` in the name.
8. ``elementwise``: ``elementwise``, ``dropout``, ``fill``, ``copy``, ``cat``, ``gather``,
   ``scatter``, ``index`` in the name (pointwise maths and data movement inside kernels).
9. ``other``: everything else (named in ``other_examples`` of the metrics so the rule can grow).

Matching is case-insensitive on the name; ``embedding_backward`` and the like fall to ``other``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dnabert_scaling.analysis.attribution import PHASE_CODES, Attribution
from dnabert_scaling.traces.classify import nccl_activity

RULE_SUMMARY = (
    "first match wins, case-insensitive on the demangled name: NCCL kernels by collective (nccl:AllReduce the "
    "gradient sync, nccl:AllReduce(int) the used-parameter map of find_unused_parameters, nccl:Broadcast the "
    "buffer broadcast); copies and memsets; "
    "optimizer: compute kernels launched in the optimizer phase and multi_tensor_apply/adam/sgd kernels; attention: "
    "flash, fmha, sdpa, attention, cuDNN fused-attention helpers; GEMM: gemm, nvjet, cutlass, cublas, xmma, wgmma, "
    "matmul; normalisation: layer/batch/group/RMS norm, GammaBeta; reduction/softmax: reduce_kernel, softmax, "
    "nll_loss, cross_entropy, lpnorm; elementwise: elementwise, dropout, fill, copy, cat, gather, scatter, index; "
    "else other"
)
_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(rx, re.IGNORECASE))
    for name, rx in (
        ("optimizer", r"multi_tensor_apply|adam|\bsgd|_sgd"),
        ("attention", r"flash|fmha|sdpa|attention|cudnn::fusion::(compute_dot_do_o|convert_dq)"),
        ("GEMM", r"gemm|nvjet|cutlass|cublas|xmma|wgmma|matmul"),
        ("normalisation", r"layer_?norm|gammabeta|batch_?norm|group_?norm|rms_?norm"),
        ("reduction/softmax", r"reduce_kernel|softmax|nll_loss|cross_entropy|lpnorm"),
        ("elementwise", r"elementwise|dropout|fill|copy|\bcat|cat_|catarray|gather|scatter|index"),
    )
)


def name_class(name: str) -> str:
    """The class of a compute kernel by its name alone (rules 3-9 without the phase)."""
    for cls, rx in _RULES:
        if rx.search(name):
            return cls
    return "other"


def classify(gpu: pd.DataFrame, att: Attribution | None = None) -> np.ndarray:
    """Class of every row of one rank's gpu table (see the module docstring)."""
    names = gpu["name"].astype(str).to_numpy()
    cat = gpu["category"].astype(str).to_numpy()
    kind = gpu["kind"].astype(str).to_numpy()
    coll = gpu["collective"].astype(object).to_numpy()
    cache: dict[str, str] = {}
    out = np.empty(len(gpu), dtype=object)
    for i, n in enumerate(names):
        c = cache.get(n)
        if c is None:
            c = cache[n] = name_class(n)
        out[i] = c
    if att is not None:
        out[(cat == "compute") & (att.phase == PHASE_CODES["optimizer"])] = "optimizer"
    out[kind != "kernel"] = "copy/memset"
    nccl = cat == "nccl"
    out[nccl] = [nccl_activity(n, c) for n, c in zip(names[nccl], coll[nccl])]
    return out


def rank_class_sums(gpu: pd.DataFrame, att: Attribution) -> pd.DataFrame:
    """Summed GPU time (ns) and count per class over this rank's measured steps."""
    sel = att.step >= 0
    dur = (gpu["end_ns"].to_numpy(np.int64) - gpu["start_ns"].to_numpy(np.int64))[sel]
    frame = pd.DataFrame({"class": classify(gpu, att)[sel], "sum_ns": dur, "name": gpu["name"].astype(str).to_numpy()[sel]})
    return (
        frame.groupby("class", sort=False)
        .agg(sum_ns=("sum_ns", "sum"), count=("sum_ns", "size"), top=("name", _top_name))
        .reset_index()
    )


def _top_name(names: pd.Series) -> str:
    return str(names.value_counts().index[0]) if len(names) else ""


def class_table(per_rank: list[pd.DataFrame], samples: int) -> pd.DataFrame:
    """Classes over all ranks: sum_s_per_step (per (rank, step) sample), count_per_step, share."""
    if not per_rank:
        return pd.DataFrame(columns=["class", "sum_s_per_step", "count_per_step", "share"])
    allr = pd.concat(per_rank, ignore_index=True)
    out = allr.groupby("class").agg(sum_ns=("sum_ns", "sum"), count=("count", "sum"), top=("top", "first")).reset_index()
    total = out["sum_ns"].sum() or 1
    samples = max(1, samples)
    out["sum_s_per_step"] = out["sum_ns"] * 1e-9 / samples
    out["count_per_step"] = out["count"] / samples
    out["share"] = out["sum_ns"] / total
    return out.sort_values("sum_ns", ascending=False).reset_index(drop=True)
