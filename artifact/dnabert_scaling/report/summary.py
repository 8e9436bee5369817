"""The report's first screen: one table, claims by result set, that decides the badge.

Per result set (a row, two lines high so that every set fits the first screen): its name, "rehearsal"
for a set whose ranks share GPUs, and one line of the hardware it ran on, the world sizes, tracer and
batch; the placement and transport where the metrics record them, in the row's hover text. Per
claim (a column): the measured verdict from ``verdicts.json`` with the reason it was not run (from
the checks' reason codes: which hardware was missing), and where the set has a forecast
(``predictions.json``), the predicted verdict against the claim's bound for the world sizes not
measured (:func:`dnabert_scaling.checker.predicted.predicted_verdicts`), its band in the hover text.
A reason shared by several cells is written once, as a numbered note, and referred to.

:func:`summary` computes the table as data; :func:`summary_html` renders it with the autoescaping
template ``resources/report/summary.html.j2``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnabert_scaling import checker
from dnabert_scaling.checker import INVALID, NOT_RUN
from dnabert_scaling.checker.placement import not_one_gpu_per_rank, placement_of
from dnabert_scaling.checker.predicted import BLIND_SPOTS, predicted_verdicts
from dnabert_scaling.errors import escape_hidden
from dnabert_scaling.report.html import Markup, render
from dnabert_scaling.report.results import VERDICT_CLASS, Report, ResultSet, band_text


@dataclass
class Notes:
    """Reasons given once and referred to by number."""

    texts: list[str] = field(default_factory=list)

    def ref(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def _sizes(rs: ResultSet) -> str:
    return ", ".join(map(str, rs.world_sizes)) or "none"


def ran(rs: ResultSet) -> str:
    """What the set's world sizes ran on, in the set's unit: "1 GPU", "1, 4, 8 GPUs", "1 CPU rank,
    2 CPU ranks", "1 rank on 1 GPU (rehearsal), 2 ranks on 1 shared GPU"."""
    if not rs.world_sizes:
        return "no measured world size"
    if rs.one_gpu_per_rank:
        return f"{_sizes(rs)} GPU{'s' if rs.world_sizes != [1] else ''}"
    return ", ".join(rs.ranks(n) for n in rs.world_sizes)


def not_run_reason(check: dict, rs: ResultSet) -> str:
    """Why a check was not judged: the checker's own reason (its first clause, the rest being per
    world size) where ``verdicts.json`` gives one, else one made from the reason code and fields;
    then what the set ran, in its unit (GPUs only for one GPU per rank)."""
    code, ws = check.get("code"), check.get("world_size")
    made = {
        "no_world_size": f"no measured world size is >= {check.get('at_least') or 2}",
        "not_measured": f"world size {ws} was not measured",
        "too_few_points": (
            f"a trend needs {(check.get('bounds') or {}).get('min_points') or 2} world sizes with data, "
            f"has {len([k for k in check.get('measured') or {} if str(k).isdigit()])}"
        ),
    }
    if code in made:
        said = str(check.get("reason") or "").split("; ")[0] or made[str(code)]
        return f"{said}; this set has {ran(rs)}"
    if code == "wrong_device":
        return "ran on CPU (a smoke run: no GPU time to measure); the claim needs CUDA GPUs"
    if code == "shared_gpu" and (note := _not_one_gpu_per_rank_note(rs)):
        return note
    if code == "sanity_failed":
        return f"a sanity check failed at world size {ws} (Appendix B)"
    if code == "placement_unknown" and isinstance(ws, int):
        return f"world size {ws} ran {rs.ranks(ws)}: whether each rank had a GPU of its own is unknown"
    if code == "missing_value" and isinstance(ws, int) and str(check.get("metric") or "").startswith("traced.gpu"):
        return f"world size {ws}: {rs.gpu_missing_why(ws)}"
    return str(check.get("reason") or "no reason recorded")


def _not_one_gpu_per_rank_note(rs: ResultSet) -> str | None:
    """One note for every check of a set that the checker marked INVALID because ranks shared a GPU or
    rehearsed: which world sizes ran so and what that means (the checker's reason names the whole placement
    at each world size, which the row's hover text already gives; the set's section gives each check's reason). None
    where the metrics record no such placement."""
    sizes = [n for n in rs.world_sizes if not_one_gpu_per_rank(placement_of(rs.entry(n)))]
    if not sizes:
        return None
    transports = sorted({str(t) for n in sizes for t in (placement_of(rs.entry(n)) or {}).get("transports") or []})
    via = f", NCCL over {', '.join(transports)}" if transports else ""
    return (
        f"world size{'s' if len(sizes) > 1 else ''} {', '.join(map(str, sizes))} ran "
        f"{', '.join(rs.ranks(n) for n in sizes)}{via}: not one GPU per rank, so times, shares and throughput "
        "there are no scaling evidence; the checks that rest on them are INVALID and only structural checks are judged"
    )


def short_name(rs: ResultSet) -> str:
    """The set's folder name (``h200-b8`` for ``expected/reference-results/h200-b8`` or
    ``kick-tires/reference-h200-b8/results``): the first screen's row label; the set's full label
    heads its section."""
    folder = Path(rs.path)
    name = folder.parent.name if folder.name == "results" else folder.name
    return name.removeprefix("reference-") or rs.label


def hardware(rs: ResultSet) -> dict[str, Any]:
    """What the set ran on, as the first screen's row shows it: the node (``device``), whether it rehearsed
    (``rehearsal``), one line of node, world sizes, tracer and per-rank batch (``line``) and the hover text of
    them all with the placement (``title``)."""
    prov = rs.metrics.get("provenance") or {}
    if rs.device == "cpu":
        device = f"node: CPU only ({prov.get('cpu_count', '?')} cores)"
    elif rs.device is None:
        device = "device not recorded"
    else:
        count = prov.get("gpu_count")
        device = f"node: {count}x {prov.get('gpu_name') or 'GPU'}" if count else str(prov.get("gpu_name") or "GPU")
    tracers = sorted({str(rs.traced(n).get("tracer")) for n in rs.world_sizes if rs.traced(n).get("tracer")})
    recorded = [p for n in rs.world_sizes if isinstance(p := rs.traced(n).get("placement"), dict)]
    rehearsal = any(isinstance(f, dict) and f.get("kind") == "rehearsal" for f in rs.metrics.get("fallbacks") or [])
    rehearsal = rehearsal or any(p.get("rehearsal") for p in recorded)
    sizes = _sizes(rs)
    tracer = ", ".join(tracers) or ("tracer not recorded" if any(rs.traced(n) for n in rs.world_sizes) else "untraced")
    batch = prov.get("batch_size_per_rank")
    runs = f"world size{'s' if ',' in sizes else ''} {sizes}; {tracer}" + (f"; batch {batch}/rank" if batch else "")
    placement = placement_line(rs)
    return {
        "device": device,
        "rehearsal": rehearsal,
        # the row shows one line (the GPU's maker left out); its hover text has it all, the placement included
        "line": f"{device.removeprefix('node: ').replace('NVIDIA ', '')}; {runs}",
        "title": "\n".join(
            [rs.label, f"{device}; {runs}", *placement, *(["rehearsal: never scaling evidence"] if rehearsal else [])]
        ),
    }


def placement_line(rs: ResultSet) -> list[str]:
    """Where the metrics carry it (``traced.placement``, read with .get): one line for the set, e.g.
    "1, 2, 4, 8 ranks on 1 GPU of 1 host; ranks share a GPU at 2, 4, 8; via NET/Socket"."""
    recorded = [(n, p) for n in rs.world_sizes if isinstance(p := rs.traced(n).get("placement"), dict)]
    unrecorded = [str(n) for n in rs.world_sizes if n > 1 and rs.placement_unknown(n) and not rs.traced(n).get("placement")]
    if not recorded:
        return [f"placement not recorded at {', '.join(unrecorded)}"] if unrecorded else []
    ranks = ", ".join(str(p.get("ranks", "?")) for _, p in recorded)
    bits = [f"{ranks} rank{'s' if ranks != '1' else ''}"]
    gpus = sorted({p["gpus"] for _, p in recorded if p.get("gpus") is not None})
    hosts = sorted({p["hosts"] for _, p in recorded if p.get("hosts") is not None})
    if gpus:
        bits.append(f"on {'/'.join(map(str, gpus))} GPU{'s' if gpus != [1] else ''}")
    if hosts:
        bits.append(f"of {'/'.join(map(str, hosts))} host{'s' if hosts != [1] else ''}")
    text = " ".join(bits)
    shared = [str(n) for n, p in recorded if p.get("shared_gpu")]
    if shared:
        text += f"; ranks share a GPU at {', '.join(shared)}"
    transports = sorted({str(t) for _, p in recorded for t in p.get("transports") or []})
    if transports:
        text += "; via " + ", ".join(transports)
    if rs.device != "cpu" and any(p.get("identity") == "unknown" for _, p in recorded):  # a CPU run has no GPU to know
        text += " (GPU identity unknown)"
    if unrecorded:
        text += f"; placement not recorded at {', '.join(unrecorded)}"
    return [text]


def placements(rs: ResultSet) -> list[str]:
    """Where the metrics carry it (``traced.placement``, read with .get), each world size's placement."""
    return [_placement_text(n, p, rs.device) for n in rs.world_sizes if isinstance(p := rs.traced(n).get("placement"), dict)]


def _placement_text(ws: int, p: dict, device: str | None = None) -> str:
    """e.g. "4: 4 ranks on 2 GPUs of 1 host (shared GPU), via SHM, P2P" (unknown parts left out)."""
    bits = [f"{p.get('ranks', '?')} rank{'' if p.get('ranks') == 1 else 's'}"]
    if p.get("gpus") is not None:
        bits.append(f"on {p['gpus']} GPU{'s' if p['gpus'] != 1 else ''}")
    if p.get("hosts") is not None:
        bits.append(f"of {p['hosts']} host{'s' if p['hosts'] != 1 else ''}")
    text = f"{ws}: " + " ".join(bits)
    if p.get("shared_gpu"):
        text += " (ranks share a GPU)"
    if p.get("transports"):
        text += ", via " + ", ".join(map(str, p["transports"]))
    if p.get("identity") == "unknown" and device != "cpu":
        text += " (GPU identity unknown)"
    return text


def _measured_cell(claim: dict | None, rs: ResultSet, notes: Notes) -> dict[str, Any]:
    if rs.verdicts is None:
        return {"verdict": "NOT CHECKED", "cls": "notrun", "notes": [notes.ref(f"claims not checked: {rs.verdicts_source}")]}
    if claim is None:
        return {"verdict": "ABSENT", "cls": "notrun", "notes": [notes.ref("this claim is not in the set's verdicts.json")]}
    verdict = claim.get("verdict")
    refs: list[int] = []
    if verdict in (NOT_RUN, INVALID):
        for ch in claim.get("checks") or []:
            if ch.get("verdict") in (NOT_RUN, INVALID):
                n = notes.ref(not_run_reason(ch, rs))
                if n not in refs:
                    refs.append(n)
    return {"verdict": verdict, "cls": VERDICT_CLASS.get(str(verdict), "notrun"), "notes": sorted(refs)}


def _deciding_check(pred: dict) -> dict | None:
    """The check row that decides a predicted verdict (a FAIL first, then an undecided band)."""
    rows = sorted((r for r in pred["checks"] if r.get("band")), key=lambda r: -r["world_size"])  # the largest first
    for verdict in (pred["verdict"], "UNDECIDED", "PASS"):
        for r in rows:
            if r["verdict"] == verdict:
                return r
    return None


def _predicted_cell(pred: dict | None, rs: ResultSet) -> dict[str, Any] | None:
    if pred is None or pred["verdict"] == "NOT PREDICTED":
        return None
    unmeasured = [n for n in pred["world_sizes"] if n not in rs.world_sizes]
    if not unmeasured:
        return None
    row = _deciding_check(pred)
    band = row["band"] if row else None
    return {
        "verdict": pred["verdict"],
        "cls": VERDICT_CLASS.get(pred["verdict"], "notrun"),
        "world_size": row["world_size"] if row else None,
        "figure": row["figure"] if row else None,
        "band": band_text(band, row and row.get("no_spread")),
        "bound": row["bounds_text"] if row else "",
        # a band of no spread decides nothing: its figures go to the hover text only, keeping the row short
        "brief": bool(row and row.get("no_spread")),
        "modelled": pred.get("modelled", ""),
    }


def _predictions(rs: ResultSet, claims: list | None, study: list[int]) -> dict[str, dict]:
    from dnabert_scaling.report import predictions as P

    data, _ = P.load(rs)
    if data is None or not claims:
        return {}
    measured = P.measured_of(rs)
    # what the forecast modelled, for the hover text: the node layout it took and the GPU whose kernel times it replayed
    node = ((data.get("model") or {}).get("node") or {}).get("name")
    gpu = (data.get("source") or {}).get("gpu_name")
    modelled = f"node layout {node}" if isinstance(node, str) else "a modelled node"
    if isinstance(gpu, str) and gpu.strip():
        modelled += f", kernel times of the {gpu.strip()}"
    return {p["id"]: {**p, "modelled": escape_hidden(modelled)} for p in predicted_verdicts(data, claims, study, measured)}


def load_claim_file(path: str | None) -> list | None:
    """The claims of the report's claims file, or None without one (then nothing is predicted)."""
    if not path or not Path(path).is_file():
        return None
    return checker.load_claims(path)


def summary(report: Report, claims_path: str | None, study_world_sizes: list[int]) -> dict[str, Any]:
    """The first-screen table as data: claim columns, one row per set, the numbered notes."""
    claims = load_claim_file(claims_path)
    ids = [c.id for c in claims] if claims else []
    titles = {c.id: c.title for c in claims} if claims else {}
    for rs in report.sets:
        for c in (rs.verdicts or {}).get("claims") or []:
            if c.get("id") not in titles:
                ids.append(str(c.get("id")))
                titles[str(c.get("id"))] = str(c.get("title") or "")
    notes = Notes()
    rows: list[dict[str, Any]] = []
    for rs in report.sets:
        preds = _predictions(rs, claims, study_world_sizes)
        cells = [
            {"measured": _measured_cell(rs.claim(cid), rs, notes), "predicted": _predicted_cell(preds.get(cid), rs)}
            for cid in ids
        ]
        rows.append({"number": rs.number, "label": rs.label, "name": short_name(rs), "hardware": hardware(rs), "cells": cells})
    predicted_any = any(c["predicted"] for r in rows for c in r["cells"])
    return {
        "claims": [{"id": cid, "title": titles.get(cid, "")} for cid in ids],
        "rows": rows,
        "notes": notes.texts,
        "blind_spots": list(BLIND_SPOTS) if predicted_any else [],
    }


def summary_html(report: Report, study_world_sizes: list[int]) -> Markup:
    return render("summary.html.j2", s=summary(report, report.params.get("claims"), study_world_sizes))
