"""The report's inputs: result sets loaded from disk (metrics, verdicts, tables) and the small
text helpers every section uses (paths as shown, escaping, number formats, verdict badges)."""

from __future__ import annotations

import functools
import html
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dnabert_scaling import checker
from dnabert_scaling.checker import FAIL, INVALID, NOT_RUN, PASS
from dnabert_scaling.checker.placement import OWN, SHARED, UNKNOWN, gpu_per_rank
from dnabert_scaling.traces.classify import shorten_middle

VERDICT_CLASS = {PASS: "pass", FAIL: "fail", NOT_RUN: "notrun", INVALID: "invalid"}
VERDICT_WORD = {PASS: "confirmed", FAIL: "refuted", NOT_RUN: "not run", INVALID: "invalid"}


def shown(path: Any, root: str | None = None) -> str:
    """A path as the reader should see it: relative to ``root`` (the folder the report was built
    from) when it lies below it (the notebook itself runs elsewhere, so it gets absolute paths)."""
    text = str(path)
    if root and text.startswith(root.rstrip("/") + "/"):
        return text[len(root.rstrip("/")) + 1 :]
    return text


_ABS_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)*[\w.+-]+")


def recorded_paths(text: str) -> str:
    """Absolute paths that do not exist here (the scratch folders of the machine that recorded the
    runs) shortened to their last two parts, marked as such, so no reader looks for them."""

    def short(m: re.Match) -> str:
        path = m.group(0)
        if Path(path).exists():
            return path
        return "…/" + "/".join(Path(path).parts[-2:]) + " (on the recording machine)"

    return _ABS_PATH.sub(short, str(text))


SHIPPED_RESULTS = Path(__file__).resolve().parents[3] / "expected" / "reference-results"


def _sources(metrics: Any) -> tuple[str, ...] | None:
    """The trace folders a results folder's metrics say they were derived from; None where they cannot say."""
    sources = metrics.get("sources") if isinstance(metrics, dict) else None
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
        return None
    return tuple(sources)


@functools.lru_cache(maxsize=1)
def _shipped_sets() -> tuple[tuple[Path, tuple[str, ...] | None], ...]:
    """Each shipped result set (``expected/reference-results/<set>``) with its sources, read once."""
    out = []
    try:
        folders = sorted(d for d in SHIPPED_RESULTS.iterdir() if d.is_dir())
    except OSError:
        return ()
    for folder in folders:
        try:
            metrics = json.loads((folder / "metrics.json").read_text())
        except (OSError, ValueError):
            metrics = None
        out.append((folder, _sources(metrics)))
    return tuple(out)


def _derived_from_shipped(path: Path, metrics: dict | None = None) -> Path | None:
    """The shipped results (``expected/reference-results/<set>``) whose reference traces a results folder
    says it was derived from (by kick-tires, reproduce or a reader's own analyze): its metrics
    (``metrics``, else its metrics.json) name the same trace folders as the shipped copy's, and those lie
    under the shipped ``expected/reference/``. A folder's name decides nothing. None for any other folder.
    This is the metrics' own account of their inputs, like the rest of their provenance; whether the
    results are the shipped ones is :func:`_shipped_copy`'s question."""
    path = Path(path)
    if metrics is None:
        try:
            metrics = json.loads((path / "metrics.json").read_text())
        except (OSError, ValueError):
            return None
    sources = _sources(metrics)
    if sources is None or not all(s.startswith("expected/reference/") for s in sources):
        return None
    for shipped, theirs in _shipped_sets():
        if theirs == sources and shipped.resolve() != path.resolve():
            return shipped
    return None


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=64)
def _same_results(folder: str, shipped: str, _stamps: tuple) -> bool:
    """Whether two results folders hold the same metrics (every world size) and claim verdicts, by
    :func:`compare_results` (``_stamps``: the files' times and sizes, so an edited file is compared again)."""
    from dnabert_scaling.analysis.compare import compare_results
    from dnabert_scaling.errors import ArtifactError

    try:
        return not compare_results(Path(folder), Path(shipped))
    except (ArtifactError, OSError, AttributeError, TypeError, KeyError):
        return False


def _shipped_copy(path: Path, metrics: dict | None = None) -> Path | None:
    """The shipped results a results folder is a copy of, decided by content: it was derived from the
    same reference traces (:func:`_derived_from_shipped`) and its metrics and verdicts are the same as
    the shipped copy's (what ``make kick-tires`` compares). A hand-edited or differently analysed
    folder is not. None for any other folder."""
    path = Path(path)
    shipped = _derived_from_shipped(path, metrics)
    if shipped is None:
        return None
    stamps = tuple(_file_stamp(f / name) for f in (path, shipped) for name in ("metrics.json", "verdicts.json"))
    return shipped if _same_results(str(path.resolve()), str(shipped.resolve()), stamps) else None


def results_folder_note(path: Path, metrics: dict | None = None) -> str:
    """Where a results folder comes from when a fresh clone lacks it: the shipped copy of results
    re-derived from the shipped reference traces, only where its metrics and verdicts are the shipped
    ones (``metrics``: the folder's, where already read)."""
    shipped = _shipped_copy(path, metrics)
    if shipped is None:
        return ""
    return (
        " (the shipped reference traces re-derived, as by <code class='ds'>make kick-tires</code> or "
        f"<code class='ds'>make reproduce</code>; a fresh clone ships the same results as "
        f"<code class='ds'>expected/reference-results/{esc(shipped.name)}</code>)"
    )


def is_shipped_reference(path: Path, metrics: dict | None = None) -> bool:
    """Whether a results folder holds the reference traces shipped in ``expected/`` (re-derived from
    them, as its metrics' sources say, or the shipped copy in ``expected/reference-results/<set>``),
    not a run of the machine the report was made on (``metrics``: the folder's, where already read)."""
    path = Path(path)
    try:
        return _derived_from_shipped(path, metrics) is not None or path.resolve().parent == SHIPPED_RESULTS.resolve()
    except OSError:
        return False


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def short(x: Any, n: int = 48) -> str:
    """At most n characters, cut in the middle so both the family and the specialisation show."""
    return shorten_middle(str(x), n)


def fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if x == 0:
            return "0"
        if abs(x) >= 1e9:  # no measurement of this study is that large: never a page-wide row of digits
            return f"{x:.{digits}e}"
        if abs(x) >= 100:
            return f"{x:,.0f}"
        return f"{x:.{digits}g}"
    return str(x)


def band_text(band: dict | None, no_spread: Any = False) -> str:
    """A forecast band as shown: ``mid [low, high]``, or ``mid (no spread)`` for a band of no width;
    empty for none."""
    if not band:
        return ""
    if no_spread:
        return f"{fmt(band.get('mid'))} (no spread)"
    return f"{fmt(band.get('mid'))} [{fmt(band.get('low'))}, {fmt(band.get('high'))}]"


def ms(stat: Any) -> str:
    if not isinstance(stat, dict) or stat.get("median") is None:
        return "–"
    return f"{stat['median'] * 1e3:.2f}"


def median(stat: Any) -> float | None:
    return stat.get("median") if isinstance(stat, dict) else None


def badge(verdict: str) -> str:
    return f'<span class="ds-badge ds-{VERDICT_CLASS.get(verdict, "notrun")}">{esc(verdict)}</span>'


# ---------------------------------------------------------------------------------------------
# A results folder


FIRST_SET_SECTION = 2  # the report's section of its first result set (section 1: the method)


@dataclass
class ResultSet:
    index: int
    path: Path
    label: str
    kind: str  # "cpu-smoke" | "reference" | "gpu" | "unknown-device"
    metrics: dict
    verdicts: dict | None
    verdicts_source: str
    _tables: dict = field(default_factory=dict)
    _table_reasons: dict = field(default_factory=dict)
    display_root: str | None = None  # paths below it are shown relative to it (see :func:`shown`)

    @property
    def number(self) -> int:
        """The set's number, which is its section's: the report's section 1 is the method, the sets follow."""
        return self.index + FIRST_SET_SECTION

    @property
    def world_sizes(self) -> list[int]:
        return checker.world_size_entries(self.metrics)

    @property
    def measured(self) -> list[int]:
        """The world sizes with measured steps (``checker.world_sizes_with_steps``); ``world_sizes`` lists every entry,
        a world size whose runs all failed included."""
        return checker.world_sizes_with_steps(self.metrics)

    @property
    def max_ws(self) -> int | None:
        return max(self.world_sizes) if self.world_sizes else None

    def entry(self, ws: int) -> dict:
        return (self.metrics.get("world_sizes") or {}).get(str(ws)) or {}

    def traced(self, ws: int) -> dict:
        return self.entry(ws).get("traced") or {}

    def gpu(self, ws: int) -> dict | None:
        return self.traced(ws).get("gpu") or None

    def gpu_missing_why(self, ws: int) -> str:
        """Why world size ``ws`` has no GPU metrics, without naming the world size."""
        t = self.entry(ws).get("traced")
        if not t:
            return "no traced run"
        return t.get("gpu_not_run_reason") or "GPU analysis not available"

    def gpu_reason(self, ws: int) -> str:
        return f"world size {ws}: {self.gpu_missing_why(ws)}"

    def busy_wait(self, ws: int) -> dict | None:
        g = self.gpu(ws) or {}
        return g.get("busy_wait") or self.entry(ws).get("busy_wait")

    @property
    def device(self) -> str | None:
        devices = {checker.device_of(self.entry(n)) for n in self.world_sizes} - {None}
        if devices == {"cpu"}:
            return "cpu"
        if "cuda" in devices:
            return "cuda"
        return None

    def shared_gpu(self, ws: int) -> bool:
        """Whether the ranks of world size ``ws`` shared GPUs (a rehearsal: not scaling evidence)."""
        p = self.traced(ws).get("placement")
        return gpu_per_rank(p, ws) == SHARED or (isinstance(p, dict) and bool(p.get("rehearsal")))

    def own_gpus(self, ws: int) -> bool:
        """Whether each rank of world size ``ws`` ran on a GPU of its own, as its placement shows (an
        unknown placement is not taken for it): only then is it "N GPUs"."""
        return self.device == "cuda" and not self.shared_gpu(ws) and gpu_per_rank(self.traced(ws).get("placement"), ws) == OWN

    def placement_unknown(self, ws: int) -> bool:
        """Whether several GPU ranks ran at world size ``ws`` with no placement that shows where."""
        return self.device == "cuda" and gpu_per_rank(self.traced(ws).get("placement"), ws) == UNKNOWN

    @property
    def one_gpu_per_rank(self) -> bool:
        """Whether every world size ran on GPUs, one per rank: only then may the report say "N GPUs"."""
        return all(self.own_gpus(n) for n in self.world_sizes) and self.device == "cuda"

    def ranks(self, ws: int) -> str:
        """How the report names world size ``ws``: "8 GPUs" only for one GPU per rank, else what ran:
        "8 ranks on 1 shared GPU", "2 CPU ranks", "2 ranks"."""
        if self.own_gpus(ws):
            return f"{ws} GPU{'s' if ws != 1 else ''}"
        p = self.traced(ws).get("placement")
        p = p if isinstance(p, dict) else {}
        gpus = p.get("gpus")
        if self.shared_gpu(ws):
            shared = "shared " if p.get("shared_gpu") else ""
            where = f"{gpus} {shared}GPU{'s' if gpus != 1 else ''}" if isinstance(gpus, int) else f"{shared}GPUs"
            return f"{ws} rank{'s' if ws != 1 else ''} on {where}" + ("" if shared else " (rehearsal)")
        kind = "CPU " if self.device == "cpu" else ""
        unknown = " (placement not recorded)" if self.placement_unknown(ws) else ""
        return f"{ws} {kind}rank{'s' if ws != 1 else ''}{unknown}"

    @property
    def unit(self) -> str:
        """The plural noun for the set's world sizes on an axis or in a title: "GPUs" or "ranks"."""
        return "GPUs" if self.one_gpu_per_rank else "ranks"

    def table(self, name: str) -> pd.DataFrame | None:
        if name not in self._tables:
            path = self.path / "tables" / f"{name}.csv"
            df = None
            if not path.is_file():
                self._table_reasons[name] = f"tables/{name}.csv is missing"
            else:
                try:
                    df = pd.read_csv(path)
                except pd.errors.EmptyDataError:
                    self._table_reasons[name] = f"tables/{name}.csv is empty"
                except (OSError, ValueError) as exc:
                    self._table_reasons[name] = f"tables/{name}.csv cannot be read: {exc}"
                else:
                    if df.empty:
                        self._table_reasons[name] = f"tables/{name}.csv has no rows"
            self._tables[name] = df
        return self._tables[name]

    def table_reason(self, name: str) -> str | None:
        self.table(name)
        return self._table_reasons.get(name)

    def claim(self, cid: str) -> dict | None:
        for c in (self.verdicts or {}).get("claims", []):
            if c["id"] == cid:
                return c
        return None

    def bound(self, cid: str, check: str, key: str = "lo") -> float | None:
        c = self.claim(cid)
        if not c:
            return None
        b = (c.get("bounds") or {}).get(check) or {}
        return b.get(key)


def _kind(metrics: dict, path: Path) -> str:
    devices = {checker.device_of(e) for e in (metrics.get("world_sizes") or {}).values() if isinstance(e, dict)} - {None}
    if devices == {"cpu"}:
        return "cpu-smoke"
    if not devices:  # no world size records its device: never taken for GPUs
        return "unknown-device"
    # the shipped reference traces, by what the metrics say they were derived from: a word in a
    # folder's name (``reference-run/``) decides nothing
    return "reference" if is_shipped_reference(path, metrics) else "gpu"


def default_label(metrics: dict, path: Path) -> str:
    """e.g. "Reference traces: H200, world sizes 1, 4, tracer torch" or "CPU smoke run on this machine: ..."."""
    kind = _kind(metrics, path)
    prefix = {
        "cpu-smoke": "CPU smoke run on this machine",
        "reference": "Reference traces",
        "gpu": "GPU runs",
        "unknown-device": "Runs on a device not recorded",
    }[kind]
    sizes = checker.world_size_entries(metrics)
    measured = checker.world_sizes_with_steps(metrics)
    entries = [e for e in (metrics.get("world_sizes") or {}).values() if isinstance(e, dict)]
    tracers = sorted({(e.get("traced") or {}).get("tracer") for e in entries} - {None})
    parts = []
    gpu = (metrics.get("provenance") or {}).get("gpu_name")
    if kind not in ("cpu-smoke", "unknown-device") and gpu:
        parts.append(str(gpu).replace("NVIDIA ", ""))
    if sizes:
        unmeasured = f" (measured: {', '.join(map(str, measured)) or 'none'})" if measured != sizes else ""
        parts.append(f"world size{'s' if len(sizes) > 1 else ''} {', '.join(map(str, sizes))}{unmeasured}")
    if tracers:
        parts.append(f"tracer {', '.join(tracers)}")
    return f"{prefix}: {', '.join(parts)}" if parts else f"{prefix} ({path.name})"


def distinct_labels(items: list[tuple[dict, Path]]) -> list[str]:
    """Default labels, made distinct where two sets would read the same (batch size, then source)."""
    labels = [default_label(m, p) for m, p in items]
    for extra in (
        lambda m, p: (
            f"batch {(m.get('provenance') or {}).get('batch_size_per_rank')} per rank"
            if (m.get("provenance") or {}).get("batch_size_per_rank")
            else None
        ),
        lambda m, p: Path(str((m.get("sources") or [p])[0])).name or p.name,
        lambda m, p: str(p),
    ):
        dup = {x for x in labels if labels.count(x) > 1}
        if not dup:
            break
        for i, (m, p) in enumerate(items):
            add = extra(m, p)
            if labels[i] in dup and add:
                labels[i] = f"{labels[i]}, {add}"
    return labels


def load_set(index: int, path: str | Path, label: str | None = None, claims: str | Path | None = None) -> ResultSet:
    """One results folder: its metrics and its current verdicts.json, read as they are (never evaluated
    here: without current verdicts the claims are shown as not checked, with the reason)."""
    path = Path(path)
    metrics, metrics_path = checker.load_metrics(path)
    path = metrics_path.parent
    verdicts, why = checker.read_verdicts(path, metrics, claims)
    source = (
        "verdicts.json (written by dnabert-scaling check)"
        if verdicts is not None
        else f"{why}: run dnabert-scaling check on this folder (the report command does so before the notebook runs)"
    )
    return ResultSet(index, path, label or default_label(metrics, path), _kind(metrics, path), metrics, verdicts, source)


@dataclass
class Report:
    sets: list[ResultSet]
    params: dict

    @classmethod
    def load(cls, results: list[dict], params: dict | None = None) -> "Report":
        params = dict(params or {})
        sets = [load_set(i, r["path"], r.get("label"), params.get("claims")) for i, r in enumerate(results)]
        for rs in sets:
            rs.display_root = params.get("cwd")
        return cls(sets, params)

    @property
    def display_root(self) -> str | None:
        """The working directory of ``report``: paths below it are shown relative to it."""
        return self.params.get("cwd")
