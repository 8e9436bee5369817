"""The figures of README.md, ARTIFACT.md and expected/README.md come from the shipped files.

`python -m dnabert_scaling.tools docs --check` must find every generated part current (else the
diff is the failure message); it must see a stale figure, refuse a marker it does not know, and
list a set recorded later with whatever keys it has.
"""

import json
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools.docfacts import Facts
from dnabert_scaling.tools.docs import DOCUMENTS, render

KICK_TIRES = "<!-- generated:timing:kick-tires:begin -->"


def tools(*args, cwd=ROOT):
    return subprocess.run(
        [PYTHON, "-m", "dnabert_scaling.tools", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def shadow_root(tmp_path, documents=("README.md",)):
    """A repository root whose shipped files are the real ones (links) and whose documents are copies."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("expected", "tests", "Makefile", "pyproject.toml"):
        (root / name).symlink_to(ROOT / name)
    (root / "docs").mkdir()
    (root / "docs" / "timings").symlink_to(ROOT / "docs" / "timings")
    for doc in documents:
        (root / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / doc, root / doc)
    return root


def test_the_documents_are_current():
    proc = tools("docs", "--check")
    assert proc.returncode == 0, f"a document is stale: run `make docs`\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"
    assert proc.stdout.strip().startswith("current: ")


def test_every_document_has_generated_parts():
    for doc in DOCUMENTS:
        assert "<!-- generated:" in (ROOT / doc).read_text(), f"{doc} quotes no generated figure"


def test_check_sees_a_stale_figure_and_docs_rewrites_it(tmp_path):
    root = shadow_root(tmp_path)
    readme = root / "README.md"
    text = readme.read_text()
    start = text.index(KICK_TIRES) + len(KICK_TIRES)
    readme.write_text(text[:start] + "17 s (quoted from memory)" + text[text.index("<!--", start) :])
    check = tools("docs", "--check", "--root", root, "README.md")
    assert check.returncode == 1, check.stdout + check.stderr
    diff = check.stdout.splitlines()
    assert any(line.startswith("-") and "17 s (quoted from memory)" in line for line in diff), check.stdout
    assert any(line.startswith("+") and "docs/timings/kick-tires.json" in line for line in diff), check.stdout
    assert "stale: README.md" in check.stdout
    assert "17 s (quoted from memory)" in readme.read_text(), "--check must not write"
    write = tools("docs", "--root", root, "README.md")
    assert write.returncode == 0, write.stderr
    assert readme.read_text() == (ROOT / "README.md").read_text()


@pytest.mark.parametrize(
    "marker, problem",
    [
        ("<!-- generated:no-such-part:begin --><!-- generated:no-such-part:end -->", "no generated part named 'no-such-part'"),
        ("<!-- generated:sets-table:begin -->\nnever closed\n", "has no <!-- generated:sets-table:end -->"),
        ("<!-- generated:gpu-compute:begin --><!-- generated:gpu-compute:end -->", "needs a set"),
        ("<!-- generated:Sets-Table:begin --><!-- generated:Sets-Table:end -->", "is not part of a"),
        ("<!-- generated:sets-table:end -->", "is not part of a"),
    ],
)
def test_a_bad_marker_is_refused_naming_file_and_line(tmp_path, marker, problem):
    root = shadow_root(tmp_path)
    readme = root / "README.md"
    before = readme.read_text() + "\n" + marker + "\n"
    readme.write_text(before)
    proc = tools("docs", "--root", root, "README.md")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    line = before[: before.index(marker)].count("\n") + 1
    assert f"README.md: line {line}: " in proc.stderr and problem in proc.stderr, proc.stderr
    assert readme.read_text() == before, "nothing is written when a marker is bad"


def test_a_set_recorded_later_is_listed_with_what_it_has(tmp_path):
    """Sets come and go (a rehearsal set, re-recorded Score-P sets, new metrics keys): each is listed."""
    root = tmp_path / "repo"
    (root / "expected" / "reference-results").mkdir(parents=True)
    (root / "expected" / "reference").mkdir()
    shutil.copy(ROOT / "expected" / "claims.toml", root / "expected" / "claims.toml")
    shutil.copytree(ROOT / "expected" / "reference-results" / "h200-b8", root / "expected" / "reference-results" / "h200-b8")
    sparse = root / "expected" / "reference-results" / "h200-rehearsal"
    sparse.mkdir()
    sparse_metrics = {"world_sizes": {"1": {"traced": {"tracer": "torch", "placement": {"gpus": [0]}}}}}
    (sparse / "metrics.json").write_text(json.dumps(sparse_metrics))
    unrefreshed = root / "expected" / "reference" / "h200-new" / "ws1-torch-r0"
    unrefreshed.mkdir(parents=True)
    doc = "<!-- generated:sets-table:begin -->\n<!-- generated:sets-table:end -->\n"
    table = render(doc, Facts(root), root / "doc.md")
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| `")}
    assert set(rows) == {"`h200-b8`", "`h200-rehearsal`", "`h200-new`"}
    assert "PASS" in rows["`h200-b8`"] and "complete 99.92%" in rows["`h200-b8`"]
    assert "| torch |" in rows["`h200-rehearsal`"] and "PASS" not in rows["`h200-rehearsal`"]
    assert "no shipped results" in rows["`h200-new`"]


def test_a_timing_not_measured_says_so(tmp_path):
    root = tmp_path / "repo"
    (root / "docs" / "timings").mkdir(parents=True)
    doc = "took <!-- generated:timing:make-test:begin -->9 s<!-- generated:timing:make-test:end -->."
    assert "not measured yet" in render(doc, Facts(root), root / "doc.md")
    (root / "docs" / "timings" / "make-test.json").write_text(json.dumps({"measured": False, "note": "placeholder"}))
    assert "not measured yet" in render(doc, Facts(root), root / "doc.md")
    measured = {
        "measured": True,
        "median_s": 412.3,
        "min_s": 400.0,
        "max_s": 431.0,
        "repeats": 3,
        "date": "2026-12-03",
        "git_revision": "177675d77f128cd7bfe40f76ca91654df3e429f9",
        "machine": {"cores": 2, "memory_gib": 23.5, "cpu_model": "AMD EPYC"},
    }
    (root / "docs" / "timings" / "make-test.json").write_text(json.dumps(measured))
    out = render(doc, Facts(root), root / "doc.md")
    assert "412 s (median of 3, range 400-431 s; 2 cores, 23.5 GiB, AMD EPYC; 2026-12-03, revision 177675d;" in out
    # one run is called one run, not a median with a range of one value
    (root / "docs" / "timings" / "make-test.json").write_text(
        json.dumps(measured | {"repeats": 1, "min_s": 412.3, "max_s": 412.3})
    )
    out = render(doc, Facts(root), root / "doc.md")
    assert "412 s (one run; 2 cores" in out and "median of 1" not in out


def test_the_bench_read_table_counts_each_method_s_runs(tmp_path):
    root = tmp_path / "repo"
    bench = root / "expected" / "reference" / "cpu-bench"
    bench.mkdir(parents=True)
    shutil.copy(ROOT / "expected" / "reference" / "cpu-bench" / "bench-read.txt", bench / "bench-read.txt")
    out = render("<!-- generated:bench-read:begin -->\n<!-- generated:bench-read:end -->\n", Facts(root), root / "d.md")
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in out.splitlines() if "(1 process)" in line}
    assert rows["plain otf2 loop (1 process)"][3] == "1"  # a single run, not a median
    assert rows["read_run_traces + summarize (1 process)"][3] == "3"


def test_a_damaged_metrics_file_names_the_file(tmp_path):
    root = tmp_path / "repo"
    bad = root / "expected" / "reference-results" / "h200-x"
    bad.mkdir(parents=True)
    (bad / "metrics.json").write_text("{not json")
    shutil.copy(ROOT / "expected" / "claims.toml", root / "expected" / "claims.toml")
    with pytest.raises(ArtifactError, match="h200-x/metrics.json: not valid JSON"):
        render("<!-- generated:sets-table:begin -->\n<!-- generated:sets-table:end -->\n", Facts(root), root / "d.md")


def test_the_make_help_block_is_what_make_help_prints():
    if shutil.which("make") is None:
        pytest.skip("no make here")
    printed = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    targets = [line.strip() for line in printed.splitlines() if line.startswith("  make ")]
    text = (ROOT / "README.md").read_text()
    block = text[text.index("<!-- generated:make-help:begin -->") : text.index("<!-- generated:make-help:end -->")]
    shown = [line.strip() for line in block.splitlines() if line.startswith("make ")]
    assert shown == targets


def test_bench_timing_refuses_a_bad_repeat_count():
    proc = subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "bench_timing.py"), "kick-tires", "--repeats", "0"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "--repeats must be at least 1" in proc.stderr and "Traceback" not in proc.stderr


def test_a_set_predict_refuses_is_reported_not_fatal(tmp_path):
    """A set recorded with the bucket hook whose trace predict cannot read: the document says why."""
    root = tmp_path / "repo"
    results = root / "expected" / "reference-results" / "h200-x"
    results.mkdir(parents=True)
    shutil.copy(ROOT / "expected" / "claims.toml", root / "expected" / "claims.toml")
    metrics = json.loads((ROOT / "expected" / "reference-results" / "h200-buckets-b8" / "metrics.json").read_text())
    metrics["sources"] = ["expected/reference/h200-x"]
    (results / "metrics.json").write_text(json.dumps(metrics))
    run = root / "expected" / "reference" / "h200-x" / "ws1-torch-r0"
    run.mkdir(parents=True)
    summary = json.loads((ROOT / "expected" / "reference" / "h200-buckets-b8" / "ws1-torch-r0" / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps(summary))  # the summary, but no trace
    doc = "<!-- generated:bucket-prediction:begin -->\n<!-- generated:bucket-prediction:end -->\n"
    out = render(doc, Facts(root), root / "doc.md")
    assert "- `h200-x`: `predict` refused it: " in out, out


def test_the_shipped_benchmark_printouts_are_parsed():
    """The bench-hook and bench-read printouts are text: every shipped one gives a full row (a format change fails here)."""
    from dnabert_scaling.tools.docblocks import bench_hook, bench_read

    facts = Facts(ROOT)
    hooks = sorted(p for f in facts.bench_folders for p in f.glob("bench-hook*.txt"))
    table = bench_hook(facts, None)
    assert hooks and len([row for row in table.splitlines() if row.startswith("| `")]) == len(hooks)
    assert " - |" not in table and "| - " not in table, table
    reads = sorted(p for f in facts.bench_folders for p in f.glob("bench-read*.txt"))
    table = bench_read(facts, None)
    methods = [line for p in reads for line in p.read_text().splitlines() if " summarize " in line or "plain otf2" in line]
    assert reads and len([row for row in table.splitlines() if row.startswith("| ") and "x |" in row]) == len(methods)


def test_design_md_documents_every_key_of_the_timing_files():
    text = (ROOT / "docs" / "design.md").read_text()
    section = text[text.index("`docs/timings/<name>.json` (written by") :].split("\n\n", 2)[1]
    documented = {k.strip().strip("`") for row in section.splitlines()[2:] for k in row.split("|")[1].split(",")}
    for path in sorted((ROOT / "docs" / "timings").glob("*.json")):
        keys = set(json.loads(path.read_text()))
        assert keys <= documented, f"{path.name}: keys not in docs/design.md: {sorted(keys - documented)}"


def test_the_phase_validation_block_says_what_stream_order_placed_itself(tmp_path):
    """A set whose analysis recorded what stream order placed itself is quoted with it; one from an older
    analysis (no share recorded) says so; a set without validation (Score-P: no exact answer) is not listed."""
    root = tmp_path / "repo"
    results = root / "expected" / "reference-results"
    (root / "expected" / "reference").mkdir(parents=True)
    gpu_new = {"phase_validation": {"stream-order": {"time": 0.999, "placed": 0.997}, "time-window": {"time": 0.193}}}
    gpu_old = {"phase_validation": {"stream-order": {"time": 0.193}}}
    for name, gpu in (("new", gpu_new), ("old", gpu_old), ("scorep", {"phase_validation": None})):
        (results / name).mkdir(parents=True)
        (results / name / "metrics.json").write_text(json.dumps({"world_sizes": {"2": {"traced": {"gpu": gpu}}}}))
    doc = "<!-- generated:phase-validation:begin -->\n<!-- generated:phase-validation:end -->\n"
    out = render(doc, Facts(root), root / "doc.md")
    assert "- `new`: world size 2: 99.9% of GPU time (placed 99.7% itself), the time window 19.3%" in out
    assert "- `old`: world size 2: 19.3% of GPU time (what it placed itself: not recorded)" in out
    assert "`scorep`" not in out


def test_c1s_verdict_stands_only_beside_the_world_size_it_judged():
    """C1 is judged at world size 1: a rehearsal's world sizes 2 and 4 hold NCCL kernels, and 'C1 PASS'
    beside them would read as a claim of none."""
    from dnabert_scaling.tools.docblocks import scorep_completeness

    lines = scorep_completeness(Facts(ROOT), None).splitlines()
    multi = [line for line in lines if "world size" in line and "world size 1:" not in line]
    assert multi and not any("C1" in line for line in multi), multi
    assert all("C1 PASS" in line for line in lines if line not in multi), lines


def test_design_md_names_every_reason_code():
    from dnabert_scaling.checker import REASON_CODES

    design = (ROOT / "docs" / "design.md").read_text()
    start = design.index("`checker.REASON_CODES`:")
    listed = set(re.findall(r"`([a-z_]+)`", design[start : design.index(")", start)]))
    assert set(REASON_CODES) <= listed, f"docs/design.md does not name {sorted(set(REASON_CODES) - listed)}"
