"""The GPU and host trace tables of one OTF2 location, from the events ``otf2_lowlevel`` kept.

Ticks become integer nanoseconds (``ticks_to_ns``), nested Enter/Leave records become regions
(``pair_enter_leave``), RMA records become copies, and attribute records fill the stream,
correlation, collective and message-size columns. Regions that are never closed, copies that never
complete and flush regions on the host threads are reported in the rank's warnings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dnabert_scaling.traces import classify
from dnabert_scaling.traces import otf2_lowlevel as ll
from dnabert_scaling.traces.model import (
    CATEGORIES,
    CATEGORY_DTYPE,
    GPU_KIND_DTYPE,
    GPU_SCHEMA,
    HOST_KIND_DTYPE,
    HOST_SCHEMA,
    STR,
    make_frame,
)
from dnabert_scaling.traces.otf2_defs import _STREAM_NAME_RE, _Regions


def ticks_to_ns(ticks: np.ndarray, resolution: int) -> np.ndarray:
    """Exact floor(ticks * 1e9 / resolution) as int64, without overflowing 64 bits."""
    t = np.asarray(ticks, dtype=np.uint64)
    if t.size and int(t.max()) >= 2**63:
        raise ValueError("timestamp beyond int64")
    res = int(resolution)
    if res == 10**9:
        return t.astype(np.int64)
    if res <= 0:
        raise ValueError(f"invalid timer resolution {res}")
    if res <= 18 * 10**9:
        q = t // np.uint64(res)
        r = t % np.uint64(res)
        ns = q * np.uint64(10**9) + (r * np.uint64(10**9)) // np.uint64(res)
        return ns.astype(np.int64)
    return np.array([(int(x) * 10**9) // res for x in t], dtype=np.int64)  # pragma: no cover


def pair_enter_leave(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Match nested Enter/Leave records of one location, vectorised.

    ``codes`` holds the region ref for an Enter and ``~ref`` (negative) for a Leave, in record
    order. The nesting depth after each record is a cumulative sum; an Enter that brings the
    depth to d is closed by the next Leave that starts at depth d, so after a stable sort by
    that level the records of each level alternate Enter, Leave. Returns the positions of the
    Enters, of their Leaves, and the number of regions left open at the end (dropped).
    Raises ValueError on a Leave without Enter or a Leave of another region.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = codes.size
    if n == 0:
        e = np.empty(0, np.int64)
        return e, e, 0
    is_enter = codes >= 0
    depth = np.cumsum(np.where(is_enter, 1, -1))
    if depth.min() < 0:
        i = int(np.argmax(depth < 0))
        raise ValueError(f"record {i}: Leave without a matching Enter")
    level = np.where(is_enter, depth, depth + 1)
    order = np.argsort(level, kind="stable")
    unclosed = int(depth[-1])
    if unclosed:
        # The last record of each level 1..unclosed is an Enter that is never left: drop it.
        lv = level[order]
        last_of_level = np.flatnonzero(np.r_[lv[1:] != lv[:-1], True])
        drop = last_of_level[lv[last_of_level] <= unclosed]
        if not np.all(is_enter[order[drop]]):
            raise ValueError("unbalanced Enter/Leave records")
        keep = np.ones(order.size, dtype=bool)
        keep[drop] = False
        order = order[keep]
    ent = order[0::2]
    lea = order[1::2]
    if ent.size != lea.size or not np.all(is_enter[ent]) or np.any(is_enter[lea]):
        raise ValueError("unbalanced Enter/Leave records")
    bad = codes[ent] != ~codes[lea]
    if np.any(bad):
        k = int(np.argmax(bad))
        raise ValueError(f"record {int(lea[k])}: Leave of region {int(~codes[lea[k]])} inside region {int(codes[ent[k]])}")
    return ent, lea, unclosed


def _attr_rows(sink: ll.LocationEvents, row_of_kept: np.ndarray):
    """(rows, stream refs, correlations, collective string refs, bytes) of the kept rows that
    carried attributes (values -1 where absent), or None."""
    if not sink.attr_index:
        return None
    rows = row_of_kept[np.asarray(sink.attr_index, dtype=np.int64)]
    ok = rows >= 0
    names = ("stream reference", "correlation id", "collective name", "byte count")
    columns = (sink.attr_stream, sink.attr_corr, sink.attr_coll, sink.attr_bytes)
    cols = [_int64_column(c, name)[ok] for c, name in zip(columns, names)]
    return rows[ok], cols


OTF2_UNDEFINED_UINT64 = 2**64 - 1  # OTF2's "undefined" for a uint64 attribute: absent


def _int64_column(values: list, what: str) -> np.ndarray:
    """Attribute values as int64 (-1 where absent); OTF2's undefined value is absent too, and any
    other value beyond int64 is no id or size a tracer writes (ValueError, named by ``what``)."""
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:
        pass
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v == OTF2_UNDEFINED_UINT64:
            v = -1
        elif v > np.iinfo(np.int64).max:
            raise ValueError(f"a {what} attribute of {v}: beyond any id or size a tracer writes")
        out[i] = v
    return out


def _nullable_from(values: np.ndarray, n: int, rows: np.ndarray):
    out = np.zeros(n, np.int64)
    na = np.ones(n, bool)
    have = values >= 0
    out[rows[have]] = values[have]
    na[rows[have]] = False
    return out, na


def _gpu_rows(sink, loc, rank, dev_stream, regions: _Regions, strings, defs, resolution, excluded, warnings):
    device, stream = dev_stream
    parts = []
    codes = np.asarray(sink.kept_codes, dtype=np.int64)
    if codes.size:
        times = ticks_to_ns(np.asarray(sink.kept_times, dtype=np.uint64), resolution)
        ent, lea, unclosed = pair_enter_leave(codes)
        if unclosed:
            warnings.append(f"location {loc.name!r}: {unclosed} region(s) never left (ignored)")
        reg = codes[ent]
        kind = regions.kind_code[reg]
        skip = kind == regions.KIND_CODES["excluded"]
        if skip.any():
            refs, counts = np.unique(reg[skip], return_counts=True)
            for r, c in zip(refs, counts):
                excluded[regions.name.get(int(r), "?")] += int(c)
        keep = ~skip
        if keep.any():
            ent_k, lea_k, reg_k = ent[keep], lea[keep], reg[keep]
            n = reg_k.size
            cat_codes = regions.cat_code[reg_k]
            coll = regions.coll_of[reg_k].copy()
            corr = (np.zeros(n, np.int64), np.ones(n, bool))
            msg = (np.zeros(n, np.int64), np.ones(n, bool))
            row_of_kept = np.full(codes.size, -1, dtype=np.int64)
            row_of_kept[ent_k] = np.arange(n)
            got = _attr_rows(sink, row_of_kept)
            if got is not None:
                rows, (_stream, c, cl, nb) = got
                corr = _nullable_from(c, n, rows)
                msg = _nullable_from(nb, n, rows)
                nccl = CATEGORIES.index("nccl")
                for i, sref in zip(rows[cl >= 0].tolist(), cl[cl >= 0].tolist()):
                    if cat_codes[i] == nccl and not isinstance(coll[i], str):
                        coll[i] = classify.normalize_collective(strings.get(int(sref))) or np.nan
            names = pd.array(regions.names[regions.gpu_name_idx[reg_k]], dtype=STR)
            parts.append(
                make_frame(
                    {
                        "rank": rank,
                        "device": device,
                        "stream": stream,
                        "kind": pd.Categorical.from_codes(kind[keep], dtype=GPU_KIND_DTYPE),
                        "name": names,
                        "start_ns": times[ent_k],
                        "end_ns": times[lea_k],
                        "category": pd.Categorical.from_codes(cat_codes, dtype=CATEGORY_DTYPE),
                        "collective": coll,
                        "msg_bytes": msg,
                        "correlation": corr,
                    },
                    GPU_SCHEMA,
                )
            )
    if sink.rma_ops or sink.rma_done:
        parts.append(_memcpy_rows(sink, loc, rank, device, stream, defs, resolution, warnings))
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True)


def _memcpy_rows(sink, loc, rank, device, stream, defs, resolution, warnings):
    """Copies: an RmaGet/RmaPut opens the copy, the matching RmaOpCompleteBlocking closes it.

    Pairing is first-in first-out per (window, matching id): Score-P reuses one matching id for
    every copy of a stream, and copies on one stream complete in order.
    """
    import otf2

    ops = pd.DataFrame(sink.rma_ops, columns=["t", "put", "win", "remote", "bytes", "match", "corr"])
    done = pd.DataFrame(sink.rma_done, columns=["t", "win", "match"])
    ops["nth"] = ops.groupby(["win", "match"]).cumcount()
    done["nth"] = done.groupby(["win", "match"]).cumcount()
    m = ops.merge(done, on=["win", "match", "nth"], how="left", suffixes=("", "_done"), sort=False)
    missing = m["t_done"].isna()
    if missing.any():
        warnings.append(f"location {loc.name!r}: {int(missing.sum())} copy operation(s) never completed (ignored)")
        m = m[~missing]
    extra = len(done) - len(m)
    if extra > 0:
        warnings.append(f"location {loc.name!r}: {extra} copy completion(s) without an operation (ignored)")
    if len(m) == 0:
        return None
    t0 = m["t"].to_numpy(np.uint64)
    t1 = m["t_done"].to_numpy().astype(np.uint64)
    if np.any(t1 < t0):
        raise ValueError("a copy completes before it starts")
    # Direction from the remote end: a CPU location is the host, this stream is the same device.
    wins = {w._ref: w for w in defs.rma_wins}
    names = []
    for put, win, remote in zip(m["put"].to_numpy(), m["win"].to_numpy(), m["remote"].to_numpy()):
        direction = None
        w = wins.get(int(win))
        other = None
        if w is not None:
            try:
                other = w.comm.group.members[int(remote)]
            except Exception:
                other = None
        if other is not None:
            if other.type == otf2.LocationType.CPU_THREAD:
                direction = "DtoH" if put else "HtoD"
            elif other.type == otf2.LocationType.GPU:
                direction = "DtoD" if other._ref == loc._ref or _same_device(other, loc) else "PtoP"
        names.append(classify.memcpy_name(direction))
    corr_v = _int64_column(m["corr"].tolist(), "correlation id")
    corr_na = corr_v < 0
    corr_v = np.where(corr_na, 0, corr_v)
    return make_frame(
        {
            "rank": rank,
            "device": device,
            "stream": stream,
            "kind": "memcpy",
            "name": names,
            "start_ns": ticks_to_ns(t0, resolution),
            "end_ns": ticks_to_ns(t1, resolution),
            "category": "memory",
            "collective": None,
            "msg_bytes": (_int64_column(m["bytes"].tolist(), "byte count"), np.zeros(len(m), bool)),
            "correlation": (corr_v, corr_na),
        },
        GPU_SCHEMA,
    )


def _same_device(a, b) -> bool:
    ma, mb = _STREAM_NAME_RE.match(a.name or ""), _STREAM_NAME_RE.match(b.name or "")
    return bool(ma and mb and ma.group(1) == mb.group(1))


def _flush_warnings(regions: _Regions, reg: np.ndarray, dur_ns: np.ndarray, where: str, warnings: list[str]) -> None:
    """Say what each kind of flush region on a host thread means (see ``HOST_FLUSH_REGIONS``)."""
    cupti = regions.cupti_flush_mask[reg]
    trace = regions.flush_mask[reg] & ~cupti
    if trace.any():
        warnings.append(
            f"location {where!r}: {int(trace.sum())} TRACE BUFFER FLUSH region(s) "
            f"({dur_ns[trace].sum() / 1e6:.3f} ms): Score-P's trace buffer ran full and was written "
            "out mid-run, timing perturbed; raise SCOREP_TOTAL_MEMORY"
        )
    if cupti.any():
        warnings.append(
            f"location {where!r}: {int(cupti.sum())} CUDA BUFFER FLUSH region(s) "
            f"({dur_ns[cupti].sum() / 1e6:.3f} ms, longest {dur_ns[cupti].max() / 1e6:.3f} ms): Score-P "
            "converting CUPTI activity buffers into trace records (host time inside the measurement; "
            "not a trace-buffer overflow, SCOREP_TOTAL_MEMORY is not the cause)"
        )


def _host_rows(sink, loc, rank, regions: _Regions, stream_of_location, resolution, warnings):
    codes = np.asarray(sink.kept_codes, dtype=np.int64)
    if codes.size == 0:
        return None
    times = ticks_to_ns(np.asarray(sink.kept_times, dtype=np.uint64), resolution)
    ent, lea, unclosed = pair_enter_leave(codes)
    if unclosed:
        warnings.append(f"location {loc.name!r}: {unclosed} host region(s) never left (ignored)")
    reg = codes[ent]
    _flush_warnings(regions, reg, times[lea] - times[ent], loc.name, warnings)
    is_phase = regions.phase_mask[reg]
    sel = is_phase | regions.launch_mask[reg]
    if not sel.any():
        return None
    ent_s, lea_s, reg_s = ent[sel], lea[sel], reg[sel]
    n = ent_s.size
    stream = (np.zeros(n, np.int64), np.ones(n, bool))
    corr = (np.zeros(n, np.int64), np.ones(n, bool))
    row_of_kept = np.full(codes.size, -1, dtype=np.int64)
    row_of_kept[ent_s] = np.arange(n)
    got = _attr_rows(sink, row_of_kept)
    if got is not None:
        rows, (srefs, c, _cl, _nb) = got
        refs = np.array(sorted(stream_of_location), dtype=np.int64)  # stream location refs
        sid = np.full(srefs.size, -1, dtype=np.int64)
        if refs.size:
            ids = np.array([stream_of_location[r][1] for r in refs.tolist()], dtype=np.int64)
            pos = np.searchsorted(refs, srefs).clip(0, refs.size - 1)
            found = (srefs >= 0) & (refs[pos] == srefs)
            sid[found] = ids[pos[found]]
        stream = _nullable_from(sid, n, rows)
        corr = _nullable_from(c, n, rows)
    kind = pd.Categorical.from_codes(
        np.where(is_phase[sel], HOST_KIND_DTYPE.categories.get_loc("phase"), HOST_KIND_DTYPE.categories.get_loc("launch")).astype(
            np.int8
        ),
        dtype=HOST_KIND_DTYPE,
    )
    return make_frame(
        {
            "rank": rank,
            "thread": loc.name,
            "kind": kind,
            "name": pd.array(regions.names[regions.host_name_idx[reg_s]], dtype=STR),
            "start_ns": times[ent_s],
            "end_ns": times[lea_s],
            "stream": stream,
            "correlation": corr,
        },
        HOST_SCHEMA,
    )
