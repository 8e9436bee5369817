"""docs/design.md stays true: the columns of every table `analyze` writes, every module of the
package in the package map, and the run and sweep folder files against `dnabert_scaling.layout`."""

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from conftest import PYTHON, ROOT
from dnabert_scaling import layout
from dnabert_scaling.layout import RunLayout, SweepLayout

DESIGN = ROOT / "docs" / "design.md"
PACKAGE = ROOT / "artifact" / "dnabert_scaling"
SHIPPED = ROOT / "expected" / "reference-results"
CELL_SPLIT = re.compile(r"(?<!\\)\|")  # cells are split at pipes that are not escaped (\| inside a cell)


def _section(heading: str, level: str = "###") -> str:
    """The text of design.md from the heading that starts with ``heading`` to the next heading of the same level or above."""
    text = DESIGN.read_text()
    start = text.find(f"\n{level} {heading}")
    assert start >= 0, f"docs/design.md has no section '{level} {heading}'"
    body = text[start + 1 :]
    stops = [m.start() for m in re.finditer(r"^#{1,%d} " % len(level), body, flags=re.M) if m.start() > 0]
    return body[: stops[0]] if stops else body


def _first_cells(block: str) -> list[str]:
    """The first cell of every row of the markdown tables in ``block`` (header and rule rows left out), backticks removed."""
    rows = [line for line in block.splitlines() if line.startswith("|")]
    cells = [CELL_SPLIT.split(line)[1].strip() for line in rows]
    return [c.strip("`") for c in cells if c and not set(c) <= set("-:") and c not in ("column", "path", "module")]


def documented_tables() -> dict[str, list[str]]:
    """Table name -> the columns design.md documents for it, from the ``#### `tables/<name>.csv``` subsections."""
    results = _section("Results folder")
    parts = re.split(r"^#### `tables/([a-z_]+)\.csv`\s*$", results, flags=re.M)
    return {name: _first_cells(body) for name, body in zip(parts[1::2], parts[2::2])}


def _compare(where: str, table: str, columns: list[str], documented: dict[str, list[str]]) -> list[str]:
    if table not in documented:
        return [f"{where}: table {table}.csv is not documented in docs/design.md (Results folder)"]
    doc = documented[table]
    out = [f"{where}: {table}.csv column {c!r} is not documented" for c in columns if c not in doc]
    out += [f"{where}: {table}.csv has no column {c!r} that docs/design.md documents" for c in doc if c not in columns]
    return out


def test_every_documented_column_has_unit_and_meaning():
    documented = documented_tables()
    assert len(documented) >= 9, sorted(documented)
    results = _section("Results folder")
    for name in documented:
        body = re.split(rf"^#### `tables/{name}\.csv`\s*$", results, flags=re.M)[1].split("\n#### ")[0]
        for line in (row for row in body.splitlines() if row.startswith("| `")):
            cells = [c.strip() for c in CELL_SPLIT.split(line)[1:-1]]
            assert len(cells) == 3 and all(cells), f"{name}.csv: row {line!r} needs column | unit | meaning"
        names = _first_cells(body)
        assert len(names) == len(set(names)), f"{name}.csv: a column is documented twice"


def test_shipped_tables_have_exactly_the_documented_columns():
    documented = documented_tables()
    problems, seen = [], set()
    for csv in sorted(SHIPPED.glob("*/tables/*.csv")):
        seen.add(csv.stem)
        header = csv.read_text().splitlines()[:1]
        if not header or not header[0].strip():  # a table without rows: analyze writes no header either
            continue
        problems += _compare(str(csv.relative_to(ROOT)), csv.stem, header[0].split(","), documented)
    problems += [f"docs/design.md documents tables/{t}.csv, which no shipped result set has" for t in documented if t not in seen]
    assert problems == []


def test_a_fresh_analyze_writes_exactly_the_documented_columns(tmp_path):
    out = tmp_path / "results"
    src = ROOT / "expected" / "reference" / "h200-scorep-b8-torch"
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "analyze", str(src), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    documented = documented_tables()
    written = {p.stem: p for p in (out / "tables").glob("*.csv")}
    assert sorted(written) == sorted(documented), "tables analyze writes vs. tables design.md documents"
    problems = []
    for name, path in sorted(written.items()):
        df = pd.read_csv(path)
        assert len(df), f"{name}.csv is empty for {src.name}: the test would check nothing"
        problems += _compare(f"analyze {src.name}", name, list(df.columns), documented)
    assert problems == []


def test_compare_names_missing_and_extra_columns():
    doc = {"t": ["a", "b"]}
    assert _compare("x", "t", ["a", "b"], doc) == []
    assert _compare("x", "t", ["a", "c"], doc) == [
        "x: t.csv column 'c' is not documented",
        "x: t.csv has no column 'b' that docs/design.md documents",
    ]
    assert _compare("x", "u", ["a"], doc) == ["x: table u.csv is not documented in docs/design.md (Results folder)"]


def _package_map() -> dict[str, str]:
    """First cell of each package-map row (a module, or a sub-package ending in /) -> the row's text."""
    rows = {}
    for line in _section("Package map", "##").splitlines():
        if line.startswith("| `"):
            cells = CELL_SPLIT.split(line)
            rows[cells[1].strip().strip("`")] = line
    return rows


def test_every_module_is_in_the_package_map():
    rows = _package_map()
    text = "\n".join(rows.values())
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" or "__pycache__" in rel:
            continue
        top, _, rest = rel.partition("/")
        if not rest:  # a top-level module: its own row, or named in another row (``__main__.py`` in cli's)
            found = rel in rows or f"`{rel}`" in text
        else:  # in a sub-package: named (by its path below it, or its file name) in the sub-package's row
            row = rows.get(f"{top}/", "")
            found = f"`{rest}`" in row or f"`{path.name}`" in row
        if not found:
            missing.append(rel)
    assert missing == [], f"modules not named in docs/design.md's package map: {missing}"


# placeholders: the layout is asked for rank 7, world size 5, repeat 3, and the names are written back with them
R, N, K = 7, 5, 3


def _placeholders(rel: str) -> str:
    rel = rel.replace(f"rank{R}", "rank<R>").replace(f"ws{N}", "ws<N>")
    return rel.replace(f"ws<N>-torch-r{K}", "ws<N>-<tracer>-r<k>[-<variant>]")


def _documented_paths(heading: str) -> set[str]:
    return {c for c in _first_cells(_section(heading)) if c}


def _rel(path: Path, root: Path, is_dir: bool) -> str:
    return _placeholders(path.relative_to(root).as_posix()) + ("/" if is_dir else "")


def layout_run_paths() -> set[str]:
    root = Path("/run")
    run = RunLayout(root)
    files = [run.summary, run.manifest, run.config, run.launcher_log, run.steps(R), run.rank_summary(R), run.rank_error(R)]
    files += [run.kineto_trace(R), run.nccl_log(R)]
    dirs = [run.traces, run.logs, run.scorep_dir(R), root / layout.SYNTHETIC_DATA]
    return {_rel(p, root, False) for p in files} | {_rel(p, root, True) for p in dirs}


def layout_sweep_paths() -> set[str]:
    root = Path("/sweep")
    sweep = SweepLayout(root)
    files = [sweep.sweep, sweep.busbw(N), sweep.busbw_log(N)]
    dirs = [sweep.run(N, "torch", K).root, sweep.busbw_dir(N), sweep.slurm, layout.slurm_job_dir(sweep.slurm, N)]
    return {_rel(p, root, False) for p in files} | {_rel(p, root, True) for p in dirs}


# documented files that layout.py does not spell: each must still be named by the package's code
NOT_IN_LAYOUT = {
    "Run directory": {},
    "Sweep folder": {
        "ws<N>-<tracer>-r<k>[-<variant>].failed-<time>/": ".failed-",
        "synthetic-data/<task>/": "SYNTHETIC_DATA",
        "scorep-preflight.json": "scorep-preflight.json",
    },
}


@pytest.mark.parametrize("heading, derived", [("Run directory", layout_run_paths), ("Sweep folder", layout_sweep_paths)])
def test_folder_lists_match_the_layout(heading, derived):
    doc, ours = _documented_paths(heading), derived()
    extra = NOT_IN_LAYOUT[heading]
    assert sorted(ours - doc) == [], f"docs/design.md ({heading}) does not list these paths of dnabert_scaling.layout"
    assert sorted(doc - ours - set(extra)) == [], f"docs/design.md ({heading}) lists paths dnabert_scaling.layout does not spell"
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    assert [p for p, needle in extra.items() if needle not in source] == []


def test_shipped_run_folders_hold_only_documented_files():
    """Every file of the shipped reference runs (real sweeps, imported) is a documented path of its run folder."""
    doc = _documented_paths("Run directory")
    unknown = set()
    for sweep in sorted((ROOT / "expected" / "reference").glob("*/sweep.json")):
        for run in SweepLayout(sweep.parent).run_dirs():
            for path in (p for p in run.rglob("*") if p.is_file()):
                rel = re.sub(r"rank\d+", "rank<R>", path.relative_to(run).as_posix())
                scorep = "traces/scorep-rank<R>/"
                if (scorep if rel.startswith(scorep) else rel) not in doc:
                    unknown.add(rel)
    assert sorted(unknown) == []


def test_metrics_section_is_the_schema():
    """The records of metrics_schema are the one definition of metrics.json: design.md shows them as
    generated, so a field added to a record and not to the document (or the reverse) fails here."""
    from dnabert_scaling.metrics_schema import markdown

    text = DESIGN.read_text()
    begin, end = "<!-- metrics-schema:begin -->\n", "<!-- metrics-schema:end -->"
    assert begin in text and end in text, "docs/design.md lacks the metrics-schema markers"
    shown = text[text.index(begin) + len(begin) : text.index(end)]
    assert shown == markdown(), "docs/design.md's metrics tables differ from metrics_schema.markdown(): paste its output"
