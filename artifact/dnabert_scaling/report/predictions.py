"""The report's prediction section: ``predictions.json`` (``dnabert-scaling predict``) of a results
folder, shown as curves, as predicted-beside-measured with the error, and as a label next to each
claim's verdict. Everything here is labelled a prediction: verdicts come from measurements only.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dnabert_scaling.analysis.predict_replay import FIGURES
from dnabert_scaling.errors import ArtifactError, escape_hidden, read_json_object
from dnabert_scaling.provenance import BUCKET_HOOK_DEVIATION
from dnabert_scaling.report.results import badge, band_text, esc, fmt
from dnabert_scaling.report.figures import NotAvailable, _png, plt

SCHEMA = "dnabert-scaling/predictions/1"
# claim -> (predicted figure, what it shows, scale, unit)
CLAIM_FIGURES = {
    "C2": ("allreduce_share", "AllReduce share of kernel time", 1.0, ""),
    "C3": ("allreduce_kernel_s", "AllReduce kernel time per step", 1e3, " ms"),
    "C4": ("allreduce_to_backward", "AllReduce / backward GPU time", 1.0, ""),
    "C5": ("overlap_ratio", "overlap ratio", 1.0, ""),
    "C6": ("efficiency", "weak-scaling efficiency", 1.0, ""),
}
DEFAULT_SIZES = (2, 4, 8)


def load(rs) -> tuple[dict | None, str]:
    """(predictions, "") or (None, why there are none) for one results folder: a predictions.json
    is shown only where it was made from this set's world-size-1 trace (``not_this_sets``); one
    that is not a valid predictions file is refused (``read_file``, an ArtifactError: the report
    command refuses it before the notebook runs, as it does a bad metrics.json)."""
    path = rs.path / "predictions.json"
    if not path.is_file():
        return None, _why_none(rs)
    data = read_file(path)
    why = not_this_sets(data, rs.metrics, rs.path)
    return (None, why) if why else (data, "")


# the figures every world size's forecast gives as a band (``predict_replay.predict``); shares and ratios lie in 0..1
BAND_FIGURES = (*FIGURES, "efficiency")
SHARES = ("exposed_comm_share", "overlap_ratio", "allreduce_share")
_MISSING = object()


def read_file(path: Path) -> dict:
    """The predictions.json at ``path``, checked as strictly as metrics.json (``metrics_schema``): an
    ArtifactError naming the file and the key for anything ``predict`` cannot have written: another
    schema, a missing part, a number that is NaN, infinite or negative, a share above 1, a band whose
    ends are not low <= mid <= high."""
    data = read_json_object(path, "a JSON object (a predictions.json written by dnabert-scaling predict)")
    if data.get("schema") != SCHEMA:
        raise ArtifactError(f"schema is {data.get('schema')!r}: not a {SCHEMA} file written by dnabert-scaling predict", path)
    _Checker(path).file(data)
    return data


class _Checker:
    def __init__(self, path: Path):
        self.path = path

    def bad(self, key: str, problem: str) -> ArtifactError:
        return ArtifactError(f"{key} {problem}", self.path)

    def obj(self, value: Any, key: str) -> dict:
        if value is _MISSING:
            raise self.bad(key, "is missing")
        if not isinstance(value, dict):
            raise self.bad(key, f"must be an object, not {_short(value)}")
        return value

    def num(self, value: Any, key: str, hi: float | None = None, null: bool = True, signed: bool = False) -> float | None:
        if value is _MISSING:
            raise self.bad(key, "is missing")
        if value is None and null:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise self.bad(key, f"must be a number, not {_short(value)}")
        if not math.isfinite(value):
            raise self.bad(key, f"is {value!r}: not a finite number")
        if value < 0 and not signed:
            raise self.bad(key, f"is {value!r}: negative, which no forecast gives")
        if hi is not None and value > hi + 1e-9:
            raise self.bad(key, f"is {value!r}: a share above {hi:g}")
        return float(value)

    def band(self, value: Any, key: str, hi: float | None = None) -> None:
        b = self.obj(value, key)
        low, mid, high = (self.num(b.get(k, _MISSING), f"{key}.{k}", hi) for k in ("low", "mid", "high"))
        if None not in (low, mid, high) and not low <= mid <= high:  # type: ignore[operator]
            raise self.bad(key, f"has low {low!r}, mid {mid!r}, high {high!r}: not low <= mid <= high")

    def consistent(self, entry: dict, n: int, t1: float | None, where: str) -> None:
        """What the replay gives by construction (``predict_replay.predict``): the entry is its world
        size's; a step takes time; exposed communication is part of the step at each end of the band;
        efficiency is the one-GPU step over the step (its low end over the slow end, its high end over
        the fast one). A forecast that contradicts itself states more than the replay did."""
        if entry.get("world_size", n) != n:
            raise self.bad(f"{where}.world_size", f"is {_short(entry.get('world_size'))}, under the key of world size {n}")
        step, exposed, eff = (entry[k] for k in ("step_time_s", "exposed_comm_s", "efficiency"))
        for end in ("mid", "low", "high"):
            if step[end] is not None and step[end] <= 0:
                raise self.bad(f"{where}.step_time_s.{end}", f"is {step[end]!r}: a step takes time")
            if None not in (step[end], exposed[end]) and exposed[end] > step[end] * (1 + 1e-9):
                raise self.bad(
                    f"{where}.exposed_comm_s.{end}",
                    f"is {exposed[end]!r}, longer than the step's {step[end]!r}: it is part of it",
                )
        for end, of in (("mid", "mid"), ("low", "high"), ("high", "low")):
            want = t1 / step[of] if t1 and step[of] else None
            if (want is None) != (eff[end] is None) or (want is not None and not math.isclose(eff[end], want, rel_tol=1e-9)):
                raise self.bad(
                    f"{where}.efficiency.{end}",
                    f"is {eff[end]!r}, but the one-GPU step over the step's {of} end gives {want!r}",
                )

    def sizes(self, data: dict, part: str) -> dict:
        entries = self.obj(data.get(part, _MISSING), part)
        for n, entry in entries.items():
            if not str(n).isdigit() or int(n) < 2:
                raise self.bad(f"{part}[{n!r}]", "is not a world size from 2 up")
            self.obj(entry, f"{part}[{n!r}]")
        return entries

    def file(self, data: dict) -> None:
        source = self.obj(data.get("source", _MISSING), "source")
        digest = source.get("sha256")
        if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
            raise self.bad("source.sha256", f"must be a sha256 (64 hex digits), not {_short(digest)}")
        model = self.obj(data.get("model", _MISSING), "model")
        if model.get("contention") is not None:
            self.band(model["contention"], "model.contention")
        t1 = self.num(self.obj(data.get("baseline", _MISSING), "baseline").get("step_time_s", _MISSING), "baseline.step_time_s")
        sizes = self.sizes(data, "world_sizes")
        if not sizes:
            raise self.bad("world_sizes", "is empty: no world size forecast")
        for n, entry in sizes.items():
            where = f"world_sizes[{n!r}]"
            for figure in BAND_FIGURES:
                self.band(entry.get(figure, _MISSING), f"{where}.{figure}", 1.0 if figure in SHARES else None)
            self.consistent(entry, int(n), t1, where)
            for part in ("busbw_GBps", "alpha_us"):
                if entry.get(part) is not None:
                    self.band(entry[part], f"{where}.{part}")
            for i, x in enumerate(entry.get("bucket_allreduce_s") or []):
                self.num(x, f"{where}.bucket_allreduce_s[{i}]", null=False)
        for n, row in self.sizes(data, "comparison").items():
            where = f"comparison[{n!r}]"
            for part in ("measured", "predicted"):
                figures = row.get(part)
                if figures is None and part == "predicted":
                    continue
                for figure, x in self.obj(figures if part in row else _MISSING, f"{where}.{part}").items():
                    if figure in BAND_FIGURES or figure == "contention":
                        self.num(x, f"{where}.{part}.{figure}", 1.0 if figure in SHARES else None)
            for k, x in (row.get("error") or {}).items():
                self.num(x, f"{where}.error.{k}", signed=True)
            if row.get("within_goal") not in (True, False, None):
                raise self.bad(f"{where}.within_goal", f"must be true, false or null, not {_short(row['within_goal'])}")
        for k, x in self.obj(data.get("goal", _MISSING), "goal").items():
            self.num(x, f"goal.{k}", null=False)
        fallbacks = data.get("fallbacks", _MISSING)
        if not isinstance(fallbacks, list) or not all(isinstance(f, dict) for f in fallbacks):
            raise self.bad("fallbacks", f"must be a list of objects, not {_short(fallbacks)}")


def _short(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def not_this_sets(data: dict, metrics: dict, folder: Path) -> str:
    """Why the forecast ``data`` is not this set's (empty when it is): it must record the sha256 of
    the trace it replayed, and that must be the world-size-1 trace this set's metrics.json was
    analysed from (``traced.inputs``), as verdicts.json must name the metrics it judged."""
    source = data.get("source") or {}
    redo = f"re-run dnabert-scaling predict {folder.name}"
    made_from = source.get("sha256")
    if not made_from:
        return (
            "predictions.json does not record the sha256 of the trace it replayed (written by an older "
            f"dnabert-scaling predict), so it cannot be tied to this set: {redo}"
        )
    entry = (metrics.get("world_sizes") or {}).get("1") or {}
    inputs = ((entry.get("traced") or {}) if isinstance(entry, dict) else {}).get("inputs") or []
    ours = [i for i in inputs if isinstance(i, dict) and i.get("rank") == 0 and i.get("sha256")]
    if not ours:
        return "this set's metrics.json records no traced world-size-1 trace (its sha256) that predictions.json could be tied to"
    theirs, mine = source.get("format"), (entry.get("traced") or {}).get("format")
    unknown = "format not recorded"
    if made_from != ours[0]["sha256"] or (theirs and mine and theirs != mine):
        return (
            f"predictions.json was made from another trace ({source.get('source')}, {theirs or unknown}, "
            f"sha256 {made_from[:12]}...), not this set's world-size-1 trace ({ours[0].get('path')}, {mine or unknown}, "
            f"sha256 {ours[0]['sha256'][:12]}...): {redo}"
        )
    return ""


def check_file(folder: Path) -> None:
    """Refuse (ArtifactError) a results folder's predictions.json that is not a valid predictions file
    (``read_file``); nothing where there is none. The report command runs it before the notebook."""
    path = Path(folder) / "predictions.json"
    if path.is_file():
        read_file(path)


def _why_none(rs) -> str:
    """Why a results folder has no forecast, from what it holds: the forecast replays the GPU
    kernels of a traced world-size-1 run with DDP bucket ranges."""
    if rs.device == "cpu":
        return (
            "none can be made: this is a CPU run, and the forecast replays the GPU kernels and all-reduce "
            "buckets of a traced one-GPU run"
        )
    if 1 not in rs.world_sizes:
        return "none can be made: this set has no world-size-1 run to replay"
    if not rs.traced(1):
        return "none can be made: the world-size-1 run of this set was not traced"
    if rs.device == "cuda" and not any(str(d).startswith(BUCKET_HOOK_DEVIATION) for d in rs.metrics.get("deviations") or []):
        return (
            "none can be made: this set was recorded without the DDP bucket hook, so its trace has no "
            "ds:bucket ranges for the forecast to replay"
        )
    return (
        "no predictions.json in this results folder (run dnabert-scaling predict "
        f"{rs.path.name}; it needs a world-size-1 trace with ds:bucket ranges and says why when it cannot)"
    )


def _band(entry: dict, key: str, scale: float = 1.0, unit: str = "") -> str:
    b = entry.get(key) or {}
    if b.get("mid") is None:
        return "–"
    return f"{fmt(b['mid'] * scale)}{unit} <span class='ds-small'>[{fmt(b['low'] * scale)}, {fmt(b['high'] * scale)}]</span>"


def _claim_sizes(claim: dict) -> list[int]:
    ws = claim.get("world_sizes")
    return [int(n) for n in ws] if isinstance(ws, list) and ws else list(DEFAULT_SIZES)


def measured_of(rs) -> dict[int, dict]:
    """The set's measured figures per world size > 1 that a forecast is held against (none for
    world sizes whose ranks shared a GPU: the set's placement in the first screen says why)."""
    from dnabert_scaling.analysis.predict_compare import measured_from_metrics
    from dnabert_scaling.metrics_schema import MetricsFile

    try:
        return measured_from_metrics(MetricsFile.from_json(rs.metrics), left_out=[])
    except (KeyError, TypeError, ValueError):
        return {}


def predicted_rows(rs, pred: dict, claims: list, study_sizes: list[int]) -> list[dict]:
    """Each claim's predicted verdict (``checker.predicted``) beside its measured one, with texts."""
    from dnabert_scaling.checker.predicted import predicted_verdicts
    from dnabert_scaling.report.results import VERDICT_CLASS

    measured = measured_of(rs)
    rows = predicted_verdicts(pred, claims, study_sizes, measured)
    for c in rows:
        claim = rs.claim(c["id"]) or {}
        c["measured"] = claim.get("verdict") or "NOT CHECKED"
        c["measured_cls"] = VERDICT_CLASS.get(c["measured"], "notrun")
        c["cls"] = VERDICT_CLASS.get(c["verdict"], "notrun")
        for r in c["checks"]:
            band = r.get("band") or {}
            r["cls"] = VERDICT_CLASS.get(r["verdict"], "notrun")
            r["band_text"] = band_text(band, r.get("no_spread")) or "–"
            r["measured_is_num"] = "measured" in r
            r["measured_text"] = fmt(r.get("measured")) if "measured" in r else _not_compared(rs, r.get("world_size"))
            r["error_text"] = f"{r['error']:+.3g}" if isinstance(r.get("error"), float) else "–"
    return rows


def _not_compared(rs, ws) -> str:
    """Why a forecast has no measured figure beside it: nothing ran at that world size, it ran
    with ranks sharing a GPU (the checker's INVALID: magnitudes not those of one GPU per rank), or
    where its ranks ran is not recorded (``predict_compare.UNKNOWN_PLACEMENT``)."""
    if ws not in rs.world_sizes:
        return "not measured"
    if rs.shared_gpu(ws):
        return f"measured on a shared GPU ({rs.ranks(ws)}: INVALID), not compared"
    if rs.gpu(ws) and rs.placement_unknown(ws):
        return "measured, placement not recorded (one GPU per rank unknown), not compared"
    return "measured, no figure to compare"


def claims_html(rs, pred: dict, claims: list | None = None, study_sizes: list[int] | None = None) -> str:
    """Each claim's verdict (from measurements) beside its prediction held against the claim's bound
    (labelled, never a verdict); without the claims file, the predicted figures alone."""
    if not claims:
        return _figures_html(rs, pred)
    from dnabert_scaling.checker.predicted import BLIND_SPOTS
    from dnabert_scaling.report.html import render

    rows = predicted_rows(rs, pred, claims, study_sizes or list(DEFAULT_SIZES))
    return str(render("predicted_bounds.html.j2", rows=rows, blind_spots=BLIND_SPOTS))


def _figures_html(rs, pred: dict) -> str:
    """Each claim's verdict (from measurements) beside its prediction (labelled, never a verdict)."""
    rows = []
    for cid, (key, what, scale, unit) in CLAIM_FIGURES.items():
        claim = rs.claim(cid) or {"id": cid, "verdict": "NOT RUN", "title": ""}
        parts = []
        for n in _claim_sizes(claim):
            entry = pred["world_sizes"].get(str(n))
            if entry and n > 1:
                parts.append(f"N={n}: {_band(entry, key, scale, unit)}")
        text = "; ".join(parts) or "no prediction at the claim's world sizes"
        rows.append(
            f"<tr><td><b>{esc(cid)}</b> {esc(claim.get('title') or '')}</td><td>{badge(claim['verdict'])}</td>"
            f"<td><span class='ds-ind'>prediction</span> {esc(what)}: {text}</td></tr>"
        )
    return (
        "<table class='ds-table'><tr><th>claim</th><th>verdict (measured)</th>"
        "<th>prediction from the one-GPU trace (not a verdict; band in brackets)</th></tr>" + "".join(rows) + "</table>"
    )


def _num(x, scale: float = 1.0) -> str:
    """A number from predictions.json, scaled and formatted; anything else as it is (escaped later)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return fmt(x * scale)
    return "–" if x is None else str(x)


def _band_of(entry: dict, key: str, scale: float = 1.0) -> dict | None:
    b = entry.get(key)
    if not isinstance(b, dict) or b.get("mid") is None:
        return None
    return {k: _num(b.get(k), scale) for k in ("mid", "low", "high")}


def _signed(x, pattern: str) -> str:
    return pattern.format(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else "–"


def _comparison_rows(pred: dict) -> list[dict]:
    rows = []
    for n, c in sorted((pred.get("comparison") or {}).items(), key=lambda kv: str(kv[0]).zfill(8)):
        m, p, e = c.get("measured") or {}, c.get("predicted") or {}, c.get("error") or {}
        st = e.get("step_time_rel")
        rows.append(
            {
                "n": n,
                "measured_ms": _num(m.get("step_time_s"), 1e3),
                "predicted_ms": _num(p.get("step_time_s"), 1e3),
                "step_error": _signed(100 * st if isinstance(st, (int, float)) else None, "{:+.1f}%"),
                "measured_overlap": _num(m.get("overlap_ratio")),
                "predicted_overlap": _num(p.get("overlap_ratio")),
                "overlap_error": _signed(e.get("overlap_ratio_abs"), "{:+.3f}"),
                "goal": {True: "yes", False: "no"}.get(c.get("within_goal"), "–"),
                "by": c.get("note") or m.get("source") or "",
            }
        )
    return rows


def _size_rows(pred: dict) -> list[dict]:
    rows = []
    for n, e in sorted(pred["world_sizes"].items(), key=lambda kv: str(kv[0]).zfill(8)):
        bw = e.get("busbw_GBps") or {}
        rows.append(
            {
                "n": n,
                "nodes": _num(e.get("nodes")),
                "busbw": f"{e.get('busbw')} {_num(bw.get('mid'))}{' GB/s' if bw else ''}",
                "step": _band_of(e, "step_time_s", 1e3),
                "exposed": _band_of(e, "exposed_comm_s", 1e3),
                "overlap": _band_of(e, "overlap_ratio"),
                "allreduce": _band_of(e, "allreduce_kernel_s", 1e3),
                "efficiency": _band_of(e, "efficiency"),
            }
        )
    return rows


def section_html(rs, claims: list | None = None, study_sizes: list[int] | None = None) -> str:
    """The prediction subsection (``resources/report/prediction.html.j2``), or why there is none."""
    from dnabert_scaling.report.html import Markup, render

    pred, why = load(rs)
    if pred is None:
        return str(render("not_available.html.j2", what="No prediction", why=why))
    src, model = pred.get("source") or {}, pred.get("model") or {}
    cont = model.get("contention") or {}
    grad = src.get("gradient_bytes")
    goal = pred.get("goal") or {}
    return str(
        render(
            "prediction.html.j2",
            src={
                "source": escape_hidden(src["source"]) if isinstance(src.get("source"), str) else src.get("source"),
                "buckets": _num(src.get("buckets_per_step")),
                "mib": _num(grad / 2**20 if isinstance(grad, (int, float)) else 0),
                "readiness": src.get("readiness_method"),
            },
            node={k: (model.get("node") or {}).get(k) for k in ("name", "description")},
            contention={k: _num(cont.get(k)) for k in ("mid", "low", "high")} if cont else None,
            contention_source=cont.get("source"),
            all_reduce=model.get("all_reduce"),
            claims=Markup(claims_html(rs, pred, claims, study_sizes)),
            comparison=_comparison_rows(pred),
            goal_step=_num(
                100 * goal.get("step_time_rel", 0.1) if isinstance(goal.get("step_time_rel", 0.1), (int, float)) else None
            ),
            goal_overlap=_num(goal.get("overlap_ratio_abs", 0.1)),
            sizes=_size_rows(pred),
            fallbacks=[
                {k: f.get(k) for k in ("what", "used", "why")} for f in pred.get("fallbacks") or [] if isinstance(f, dict)
            ],
            # what the replay of the source trace approximated (predictions.json source.notes)
            # (the notes quote names from records and traces: their control and bidi characters shown as escapes)
            source_notes=[escape_hidden(n) for n in src.get("notes") or [] if isinstance(n, str)],
        )
    )


def curves(rs):
    """Predicted step time and efficiency against N (bands shaded), measured points on top."""
    pred, why = load(rs)
    if pred is None:
        return NotAvailable(why)
    sizes = sorted(int(n) for n in pred["world_sizes"])
    entries = [pred["world_sizes"][str(n)] for n in sizes]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key, scale, label in (
        (axes[0], "step_time_s", 1e3, "step time (ms)"),
        (axes[1], "efficiency", 1.0, "weak-scaling efficiency"),
    ):
        mid = [(e[key]["mid"] or float("nan")) * scale for e in entries]
        lo = [(e[key]["low"] or float("nan")) * scale for e in entries]
        hi = [(e[key]["high"] or float("nan")) * scale for e in entries]
        ax.fill_between(sizes, lo, hi, color="#3b6fb6", alpha=0.2, label="prediction band")
        ax.plot(sizes, mid, "-o", color="#3b6fb6", ms=3, label="prediction")
        measured = [
            (int(n), c["measured"].get(key if key != "efficiency" else "step_time_s"))
            for n, c in (pred.get("comparison") or {}).items()
            if c.get("measured")
        ]
        if key == "efficiency":
            t1 = (pred.get("baseline") or {}).get("step_time_s")
            measured = [(n, t1 / v) for n, v in measured if v and t1]
        measured = [(n, v * scale) for n, v in measured if v is not None]
        if measured:
            ax.plot(*zip(*sorted(measured)), "s", color="#d1495b", label="measured")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs (N)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[1].axhline(1.0, color="grey", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    return _png(fig, "predicted step time and efficiency against the number of GPUs, with measured points")
