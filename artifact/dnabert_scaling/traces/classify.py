"""Naming and classification rules shared by every reader (so OTF2 and Kineto agree).

* Kernel names: demangled when mangled, parameter list dropped, template arguments kept, and
  the ``void`` return type dropped (every ``__global__`` function returns void, so it carries no
  information). ``void at::native::f<4, float>(int, float*)`` -> ``at::native::f<4, float>``.
* Category: ``memory`` for copies and memsets; ``nccl`` for kernels whose name starts with
  ``nccl`` (case-insensitive: ``ncclKernel_*``, ``ncclDevKernel_*``, ``ncclSymkDevKernel_*``);
  ``compute`` for every other kernel.
* Collective of an NCCL kernel: from the name when it says (``ncclKernel_AllReduce_RING_LL_Sum_float``,
  ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``), else from Kineto's ``Collective name`` argument
  (``ncclDevKernel_Generic*`` kernels name no collective), else missing.
* The NCCL kernels of a DDP step, told apart by collective and element type: the gradient sync
  (``AllReduce`` of floating-point buckets, ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``, one per
  bucket; an AllReduce whose name states no type counts as one too), the used-parameter map of
  ``find_unused_parameters`` (an ``AllReduce`` of integers, ``..._Sum_u32_...``, one per step) and
  the buffer broadcast of ``broadcast_buffers`` (``Broadcast``, one per forward). The ranking and
  the kernel classes name the map ``nccl:AllReduce(int)``, so ``nccl:AllReduce`` is the gradient
  sync alone (``nccl_activity``).
* Phases: host ranges named ``ds:<phase>``; Score-P's Python bindings prefix user regions with
  ``user:`` (``user:ds:step``), which is stripped. A DDP bucket's all-reduce call is the range
  ``ds:bucket:<index>:<bytes>`` (``dnabert_scaling.run.train.buckets``); its table name keeps the arguments
  (``bucket:3:26214400``), read back with ``bucket_args``.
* Kernel launches: the CUDA runtime / driver launch entry points (``cuLaunchKernel``,
  ``cuLaunchKernelEx``, ``cudaLaunchKernel``, ``cudaLaunchKernelExC_v11060``, cooperative ...).
* Copies get canonical names ``Memcpy HtoD|DtoH|DtoD|PtoP|HtoH``, memsets ``Memset``: OTF2 records
  copies as RMA operations without a name, so both readers use the direction alone.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pandas as pd

from dnabert_scaling.traces.demangle import demangle, is_mangled
from dnabert_scaling.phases import BUCKET, PHASE_NAMES
from dnabert_scaling.phases import PREFIX as PHASE_PREFIX

USER_REGION_PREFIX = "user:"

_LAUNCH_RE = re.compile(r"^(cu|cuda)Launch(Cooperative)?Kernel(Ex|ExC)?(_v\d+)?(_ptsz|_ptds)?$")
_NCCL_COLLECTIVE_RE = re.compile(r"^nccl[A-Za-z]*Kernel_([A-Za-z]+)", re.IGNORECASE)
_MEMCPY_RE = re.compile(r"^Memcpy\s*([A-Za-z]to[A-Za-z])", re.IGNORECASE)

_COLLECTIVES = {
    "allreduce": "AllReduce",
    "allgather": "AllGather",
    "reducescatter": "ReduceScatter",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "sendrecv": "SendRecv",
    "send": "Send",
    "recv": "Recv",
    "alltoall": "AllToAll",
    "gather": "Gather",
    "scatter": "Scatter",
}
# Order matters for substring matching of free-form names ("_reduce_scatter_base").
_COLLECTIVE_SEARCH = (
    "allreduce",
    "reducescatter",
    "allgather",
    "alltoall",
    "broadcast",
    "sendrecv",
    "send",
    "recv",
    "reduce",
    "gather",
    "scatter",
    "barrier",
)

_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "int": 4,
    "int32": 4,
    "uint32": 4,
    "double": 8,
    "float64": 8,
    "long": 8,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "short": 2,
    "int16": 2,
    "uint16": 2,
    "byte": 1,
    "char": 1,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


def strip_parameters(name: str) -> str:
    """Drop a trailing ``(...)`` parameter list (balanced, so templates with ``(...)`` survive)."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                head = name[:i].rstrip()
                return head if head else name
    return name


@lru_cache(maxsize=65536)
def kernel_display_name(name: str) -> str:
    """The one name a kernel gets in every trace format (see the module docstring)."""
    full = demangle(name) if is_mangled(name) else name
    short = strip_parameters(full.strip())
    if short.startswith("void "):
        short = short[5:].lstrip()
    return short or name


def is_nccl(name: str) -> bool:
    return name[:4].lower() == "nccl"


def kernel_category(name: str) -> str:
    return "nccl" if is_nccl(name) else "compute"


def normalize_collective(value) -> str | None:
    """Canonical collective name (``AllReduce``, ...) from a free-form label, or None."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    key = text.lower().replace("_", "").replace(" ", "").replace("-", "")
    if key in _COLLECTIVES:
        return _COLLECTIVES[key]
    for k in _COLLECTIVE_SEARCH:
        if k in key:
            return _COLLECTIVES.get(k, k.capitalize())
    return text


@lru_cache(maxsize=4096)
def collective_from_name(name: str) -> str | None:
    """The collective an NCCL kernel name states, or None (``ncclDevKernel_Generic``)."""
    m = _NCCL_COLLECTIVE_RE.match(name)
    if not m:
        return None
    token = m.group(1).lower()
    return _COLLECTIVES.get(token)


# Integer element types as NCCL kernel names spell them (``_u32_``, ``_i64_``; older releases:
# ``_uint32_t``, ``_int8_t``); floating-point ones (f32, f16, bf16, f64, f8*) are the gradients'.
_INT_DTYPE_RE = re.compile(r"_(u8|i8|u32|i32|u64|i64|u?int(8|32|64)_t)(_|$)", re.IGNORECASE)
NCCL_INT_ALLREDUCE = "AllReduce(int)"
NCCL_ROLES = {
    "AllReduce": "gradient sync (DDP's per-bucket all-reduce of the gradients)",
    NCCL_INT_ALLREDUCE: "used-parameter map (find_unused_parameters: one integer all-reduce per step)",
    "Broadcast": "buffer broadcast (broadcast_buffers: the model's buffers from rank 0, each forward)",
}


def is_integer_collective(name: str) -> bool:
    """Whether an NCCL kernel's name says it reduces integers (``..._Sum_u32_RING_LL``)."""
    return bool(_INT_DTYPE_RE.search(name))


def nccl_activity(name: str, collective) -> str:
    """The ranking's name of an NCCL kernel: ``nccl:<Collective>``, with the integer AllReduce of
    ``find_unused_parameters`` apart (``nccl:AllReduce(int)``); ``nccl:unknown`` without a collective."""
    if not isinstance(collective, str) or not collective:
        return "nccl:unknown"
    if collective == "AllReduce" and is_integer_collective(name):
        return "nccl:" + NCCL_INT_ALLREDUCE
    return "nccl:" + collective


def dtype_bytes(dtype) -> int | None:
    """Element size of a torch dtype label as Kineto writes it (``Float``, ``BFloat16``, ...)."""
    if dtype is None:
        return None
    key = str(dtype).strip().lower().replace("torch.", "")
    if key.startswith("float8"):
        return 1
    return _DTYPE_BYTES.get(key)


_BUCKET_RE = re.compile(r"^bucket:(\d+):(\d+)$")


def phase_name(region: str) -> str | None:
    """``step``/``warmup``/``forward``/``backward``/``optimizer`` for a phase range,
    ``bucket:<index>:<bytes>`` for a bucket range, else None."""
    if region.startswith(USER_REGION_PREFIX):
        region = region[len(USER_REGION_PREFIX) :]
    if not region.startswith(PHASE_PREFIX):
        return None
    p = region[len(PHASE_PREFIX) :]
    if _BUCKET_RE.match(p):
        return p
    return p if p in PHASE_NAMES and p != BUCKET else None


UNREADABLE_BUCKET = "a bucket mark that does not read as ds:bucket:<index>:<bytes> of whole numbers"  # both readers say it


def unreadable_bucket_mark(region: str) -> bool:
    """Whether ``region`` is named as a bucket mark (``ds:bucket:...``, under Score-P ``user:ds:bucket:...``) but does
    not read as ``ds:bucket:<index>:<bytes>`` of whole numbers: a reader refuses it, since a mark left out would drop
    its bucket's all-reduce from what the analysis and the forecast see."""
    bare = region[len(USER_REGION_PREFIX) :] if region.startswith(USER_REGION_PREFIX) else region
    return bare.startswith(PHASE_PREFIX + "bucket:") and phase_name(region) is None


def bucket_args(name: str) -> tuple[int, int] | None:
    """(bucket index, bytes) of a host table name ``bucket:<index>:<bytes>``, else None."""
    m = _BUCKET_RE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_launch_api(name: str) -> bool:
    return bool(_LAUNCH_RE.match(name))


# Case-sensitive on purpose: ``cuMemSetAccess`` (virtual-memory access rights) is no memset.
_COPY_API_RE = re.compile(r"^(cu|cuda)Mem(cpy|set)")
_MEMSET_API_RE = re.compile(r"^(cu|cuda)Memset")


def is_copy_api(name: str) -> bool:
    """Runtime/driver calls that enqueue a copy or memset (``cudaMemcpyAsync``, ``cuMemsetD32Async``, ...).

    Kineto correlates the copy with its call like a kernel with its launch, so the analysis
    places copies exactly too; stream-order matching uses kernel launches only."""
    return bool(_COPY_API_RE.match(name))


def launched_kind(name: str) -> str | None:
    """The kind of GPU activity a host call enqueues: ``kernel``, ``memcpy``, ``memset``, or None."""
    if _LAUNCH_RE.match(name):
        return "kernel"
    if _MEMSET_API_RE.match(name):
        return "memset"
    if _COPY_API_RE.match(name):
        return "memcpy"
    return None


# the class of a launched kind or an activity kind: a launch pairs with activities of its class only
KIND_CLASS = {"kernel": "kernel", "memcpy": "copy", "memset": "copy"}


def launch_class(name: str) -> str | None:
    """``kernel`` for a kernel launch, ``copy`` for a copy or memset call, None for any other call."""
    return KIND_CLASS.get(launched_kind(name) or "")


def activity_class(kind: str) -> str | None:
    """``kernel`` for a kernel, ``copy`` for a copy or memset, None for any other activity kind."""
    return KIND_CLASS.get(kind)


def launch_classes(names) -> np.ndarray:
    """:func:`launch_class` of each call name of a column (a pandas Series), each distinct name classified once."""
    return _per_distinct(names, launch_class)


def activity_classes(kinds) -> np.ndarray:
    """:func:`activity_class` of each activity kind of a column (a pandas Series), each distinct kind once."""
    return _per_distinct(kinds, activity_class)


def _per_distinct(values, rule) -> np.ndarray:
    """``rule(str(value))`` per row as an object array, the rule applied once per distinct value (a trace has a
    handful of launch names over 10^5 rows); a missing value reads as its text, as ``astype(str)`` gives it."""
    codes, distinct = pd.factorize(values, use_na_sentinel=False)
    return np.array([rule(str(v)) for v in distinct], dtype=object)[codes] if len(codes) else np.array([], dtype=object)


_CALL_DIRECTION_RE = re.compile(r"^(?:cu|cuda)Memcpy(?:2D|3D)?(HtoD|DtoH|DtoD|HtoH|Peer)")


def call_copy_direction(name: str) -> str | None:
    """The direction a copy call's name states (``cuMemcpyDtoDAsync_v2`` -> ``DtoD``; ``Peer`` ->
    ``PtoP``), None for the calls whose direction only their arguments tell (``cuMemcpyAsync``)."""
    m = _CALL_DIRECTION_RE.match(name)
    if not m:
        return None
    return "PtoP" if m.group(1) == "Peer" else m.group(1)


def memcpy_name(direction: str | None) -> str:
    """``Memcpy HtoD`` etc.; ``Memcpy`` when the direction is unknown."""
    return f"Memcpy {direction}" if direction else "Memcpy"


def memcpy_direction(kineto_name: str) -> str | None:
    """``HtoD`` from ``Memcpy HtoD (Pageable -> Device)``; None when the name does not say."""
    m = _MEMCPY_RE.match(kineto_name)
    if not m:
        return None
    d = m.group(1)
    return d[0].upper() + "to" + d[-1].upper()


MEMSET_NAME = "Memset"


def shorten_middle(name: str, n: int, mark: str = "…") -> str:
    """At most ``n`` characters, cut in the middle (two thirds head, one third tail) so both the
    kernel family and its specialisation show."""
    s = str(name)
    if len(s) <= n:
        return s
    keep = max(2, n - len(mark))
    head = keep * 2 // 3
    return s[:head] + mark + s[len(s) - (keep - head) :]


def distinct_short(names: list[str], n: int, mark: str = "…") -> list[str]:
    """``shorten_middle`` of each name, widened where two different names would read the same."""
    out = [shorten_middle(x, n, mark) for x in names]
    width = n
    while len(set(out)) < len(set(names)) and width < max(map(len, names), default=0):
        width += 8
        seen: dict[str, int] = {}
        for s in out:
            seen[s] = seen.get(s, 0) + 1
        out = [shorten_middle(x, width, mark) if seen[s] > 1 else s for x, s in zip(names, out)]
    return out
