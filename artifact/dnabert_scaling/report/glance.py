"""The first screen's *at a glance*: one paragraph of what the evidence is, said from the sets'
records: the devices (a set whose world sizes record none is "device not recorded", never a GPU),
where the traces were recorded, whether any run had a GPU per rank, and the fallbacks every or some
sets took."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from dnabert_scaling.report.results import ResultSet, is_shipped_reference


def at_a_glance(sets: list[ResultSet]) -> str:
    """The first screen's one paragraph of what the evidence is, from the sets: the devices, whether
    any run had a GPU per rank, the fallbacks every set or some sets took (the verdict table's legend
    says that forecasts are not verdicts)."""
    devices = sorted({_device_name(rs) for rs in sets})
    took: Counter[str] = Counter()
    used: dict[str, set[str]] = {}
    for rs in sets:
        mine = {
            str(f["what"]): str(f.get("used") or "")
            for f in rs.metrics.get("fallbacks") or []
            if isinstance(f, dict) and f.get("what")
        }
        took.update(mine.keys())
        for what, how in mine.items():
            used.setdefault(what, set()).add(how)

    def named(what: str) -> str:
        hows = used[what] - {""}
        return f"{what} ({next(iter(hows))})" if len(hows) == 1 else what

    every = [named(w) for w, n in sorted(took.items()) if n == len(sets)]
    some = [f"{named(w)} in {n} of {len(sets)}" for w, n in sorted(took.items()) if n < len(sets)]
    said = []
    if every:
        said.append(f" Fallbacks in {'all ' + str(len(sets)) + ' sets' if len(sets) > 1 else 'the set'}: {'; '.join(every)}.")
    if some:
        said.append(f" In some sets: {'; '.join(some)}.")
    return (
        f"All evidence here: {', '.join(devices)}"
        + _where_recorded(sets)
        + one_gpu_per_rank_text(sets)
        + ("".join(said) if said else " No fallback taken.")
    )


def _device_name(rs: ResultSet) -> str:
    """What a set ran on, for the first screen: CPU, the GPU's name (or "GPU"), or "device not recorded"
    where no world size records one (never taken for a GPU)."""
    if rs.device == "cpu":
        return "CPU"
    if rs.device == "cuda":
        return str((rs.metrics.get("provenance") or {}).get("gpu_name") or "GPU")
    return "device not recorded"


def _where_recorded(sets: list[ResultSet]) -> str:
    """The end of the first sentence: which sets are the reference traces shipped in expected/ (recorded
    elsewhere, re-analysed for this report) and which come from the results folders given."""
    shipped = [rs.number for rs in sets if is_shipped_reference(Path(rs.path), rs.metrics)]
    if not shipped:
        return "."
    if len(shipped) == len(sets):
        return f", {'all ' + str(len(sets)) + ' sets' if len(sets) > 1 else 'the set'} from the traces shipped in expected/, re-analysed here."
    rest = [rs.number for rs in sets if rs.number not in shipped]
    return (
        f". Set{'s' if len(shipped) > 1 else ''} {_numbers(shipped)}: the traces shipped in expected/, "
        f"re-analysed here; set{'s' if len(rest) > 1 else ''} {_numbers(rest)}: the results folder{'s' if len(rest) > 1 else ''} given."
    )


def _numbers(numbers: list[int]) -> str:
    """``1, 3-5, 8`` from [1, 3, 4, 5, 8]."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def one_gpu_per_rank_text(sets: list[ResultSet]) -> str:
    """Whether any set ran more than one rank, each on a GPU of its own: said from the placements."""
    multi = [n for rs in sets for n in rs.world_sizes if n > 1 and rs.own_gpus(n)]
    unknown = sorted({n for rs in sets for n in rs.world_sizes if rs.placement_unknown(n)})
    if unknown:
        said = f" Multi-GPU runs with one GPU per rank reach world size {max(multi)}." if multi else ""
        return said + (
            f" World size{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))} ran GPU ranks with no recorded "
            "placement: whether each rank had a GPU of its own is unknown, so their times, shares and throughput are "
            "not judged as scaling evidence."
        )
    if multi:
        return f" Multi-GPU runs with one GPU per rank reach world size {max(multi)}."
    if not any(n > 1 for rs in sets for n in rs.world_sizes):
        return " No set ran more than one rank, so none of them measures multi-GPU scaling."
    how = {_multi_rank_how(rs, n) for rs in sets for n in rs.world_sizes if n > 1}
    return (
        f" No set ran more than one rank with a GPU of its own: every multi-rank run here {' or '.join(sorted(how))}, "
        "so none of them measures multi-GPU scaling."
    )


def _multi_rank_how(rs: ResultSet, n: int) -> str:
    """What a multi-rank world size without a GPU per rank was, from its records."""
    if n not in rs.measured:
        return "did not complete"
    if rs.device == "cpu":
        return "ran on CPU"
    return "shared one GPU" if rs.shared_gpu(n) else "ran on a device not recorded"
