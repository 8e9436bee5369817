"""The report: built from hand-made results folders (a GPU sweep, and a CPU smoke run whose GPU
part is NOT RUN), checked as files, and rendered in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import PYTHON

from dnabert_scaling import checker
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.report import build, content, figures
from reportfixtures import IMAGES_JS, Chromium, chromium_binary, cpu_results, gpu_results, write_results

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_FILE = ROOT / "expected" / "claims.toml"
GPU_LABEL = "reference traces: 8x A100 (hand-made)"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    gpu = write_results(base / "gpu", *gpu_results((1, 4, 8), tracer="torch"))
    checker.write_verdicts(checker.check_results(gpu, CLAIMS_FILE), gpu)  # as `check` leaves it
    cpu = write_results(base / "cpu", *cpu_results((1, 2)))  # no verdicts.json: the report runs check on it
    return gpu, cpu


@pytest.fixture(scope="module")
def built(folders, tmp_path_factory):
    gpu, cpu = folders
    out = tmp_path_factory.mktemp("report")
    t0 = time.monotonic()
    res = build.build_report([gpu, cpu], out, labels=[GPU_LABEL], claims=CLAIMS_FILE)
    res["wall"] = time.monotonic() - t0
    res["text"] = res["html"].read_text(encoding="utf-8")
    return res


# ---- the built files -------------------------------------------------------------------------


def test_report_files_and_speed(built):
    assert built["html"].is_file() and built["notebook"].is_file()
    assert built["html"].parent == built["notebook"].parent
    # 2 cores shared with others: the brief's budget is 30 s for a small folder; allow for load
    assert built["wall"] < 45, f"report build took {built['wall']:.1f} s"


def test_executed_notebook_with_injected_parameters(built, folders):
    nb = nbformat.read(built["notebook"], as_version=4)
    first = nb.cells[0]
    assert "parameters" in first.metadata["tags"]
    assert str(folders[0]) in first.source and str(folders[1]) in first.source and GPU_LABEL in first.source
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "every code cell ran"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert any(o.get("data", {}).get("text/html", "").count("data:image/png;base64,") for c in code for o in c.outputs)
    # the kernel was this interpreter (Appendix D records the kernel's sys.executable, relative to
    # the folder the report was built from when it lies below it)
    from dnabert_scaling.report.content import shown

    assert f"{shown(sys.executable, str(Path.cwd().resolve()))} (" in built["text"]


def test_html_is_self_contained_and_code_is_hidden(built):
    html = built["text"]
    assert not re.search(r"<script[^>]+src=", html), "no script is fetched"
    assert not re.search(r"<link[^>]+href=\"https?:", html), "no stylesheet is fetched"
    assert "cdnjs.cloudflare.com/ajax/libs/require" not in html and "mathjax" not in html.lower()
    imgs = re.findall(r"<img[^>]*>", html)
    assert len(imgs) >= 7 and all('src="data:image/png;base64,' in i for i in imgs)
    assert "highlight hl-ipython3" not in html, "code cells are excluded"
    assert "Report.load" not in re.sub(r"<[^>]+>", "", html)


def test_sections_labels_and_verdicts(built, folders):
    html = built["text"]
    assert "<h1>Where does GPU time go when DNABERT-2 fine-tuning scales over GPUs?</h1>" in html
    assert f"2 Results: {GPU_LABEL}" in html
    assert "3 Results: CPU smoke run on this machine: world sizes 1, 2, tracer torch" in html
    for heading in ("Abstract", "1 Method", "4 Caveats", "5 How to reproduce", "Appendix A", "Appendix B"):
        assert heading in html
    # the first screen from the verdicts: confirmed on the GPU set, not run on the CPU one, with the reason
    first = html.split('id="ds-summary"')[1].split("</table>")[0]
    gpu_row, cpu_row = first.split("<tr>")[2:4]
    assert gpu_row.count(">PASS<") == 6 and ">NOT RUN<" not in gpu_row
    assert cpu_row.count(">NOT RUN<") == 6 and ">PASS<" not in cpu_row
    notes = html.split('id="ds-summary"')[1].split("</ol>")[0]
    assert "ran on CPU (a smoke run: no GPU time to measure); the claim needs CUDA GPUs" in notes
    assert html.count("ds-badge ds-pass") >= 6 and html.count("ds-badge ds-notrun") >= 6
    assert "verdicts.json (written by dnabert-scaling check)" in html
    # the CPU folder had none: the report command ran check on it, which wrote both files
    cpu = folders[1]
    assert (cpu / "verdicts.json").is_file() and (cpu / "verdicts.txt").is_file()
    assert "make kick-tires" in html and "make reproduce" in html and "apptainer run" in html
    assert "|U compute ∩ U nccl| / |U nccl|" in html


def test_fallbacks_are_prominent(built):
    html = built["text"]
    box = html.split("3 Results: CPU smoke run")[1].split("ds-warn")[1].split("</ul>")[0]
    for phrase in (
        "No GPU: CPU smoke run",
        "Random weights",
        "Synthetic data",
        "torch.profiler (Kineto) traces instead of Score-P",
    ):
        assert phrase in box, phrase
    gpu_box = html.split(f"2 Results: {GPU_LABEL}")[1].split("</ul>")[0]
    assert "torch.profiler (Kineto) traces instead of Score-P" in gpu_box
    assert "Measured steps" in gpu_box  # 12 steps, not the study's 50


def test_missing_figures_are_notes_not_empty_axes(built):
    cpu = built["text"].split("3 Results: CPU smoke run")[1].split("4 Caveats")[0]
    # the five GPU figures missing for one reason: one note naming them, the reason once
    notes = re.findall(r"Not available here \(([^)]*)\):</b> ([^<]+)", cpu)
    assert len(notes) == 1, notes
    names, why = notes[0]
    assert names.split("; ") == [
        "GPU time per step",
        "AllReduce against backward",
        "one-step timeline",
        "overlap per step",
        "per-step distributions",
    ]
    assert "CPU run (gloo, no GPU)" in why
    assert "Figure 3.1." in cpu and "Figure 3.2" not in cpu, "throughput is measured on CPU too, and shown"
    assert "it is not a scaling measurement" in cpu


def test_figure_numbers_are_never_used_twice(built):
    numbers = re.findall(r"<b>Figure (\d+\.\d+)\.</b>", built["text"])
    assert numbers and len(numbers) == len(set(numbers)), numbers


def test_idle_causes_and_kernel_classes_are_shown(built):
    gpu = built["text"].split(f"2 Results: {GPU_LABEL}")[1].split("3 Results")[0]
    assert "Why the GPU is idle" in gpu
    # the fixture's idle time is 80% host wait at every world size
    assert re.search(
        r"World size 8: the GPU is idle \d+% of the median step and 80% of that idle time is host wait; "
        r"the step is launch-bound",
        gpu,
    )
    assert "GPU time by kernel class at world size 8" in gpu
    for cls in ("nccl:AllReduce", ">GEMM<", ">elementwise<", ">reduction/softmax<", ">copy/memset<"):
        assert cls in gpu, cls
    assert "Class rule: first match wins" in gpu
    cpu = built["text"].split("3 Results: CPU smoke run")[1].split("4 Caveats")[0]
    assert "Why the GPU is idle" not in cpu and "GPU time by kernel class" not in cpu
    assert "The breakdown comes from the traced run" in built["text"]
    # ranks: the fixture's rank 1 starts its buckets last
    assert re.search(r"<td>8</td><td class=.num.>12\.0</td>.*?<td>common</td><td>rank 1 \(75% of buckets\)</td>", gpu)


def test_results_without_idle_causes_show_plain_idle(tmp_path):
    m, t = gpu_results((1, 4))
    for e in m["world_sizes"].values():
        for k in ("idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s", "kernel_classes"):
            e["traced"]["gpu"].pop(k)
    rs = _set(tmp_path, (m, t), "old")
    assert "unknown for these traces" in content.idle_html(rs) and "<table" not in content.idle_html(rs)
    assert content.kernel_classes_html(rs) == ""
    assert isinstance(figures.breakdown(rs), figures.Figure)


# ---- units: no kernel needed -------------------------------------------------------------------


def _set(tmp_path, metrics_tables, name="s"):
    folder = write_results(tmp_path / name, *metrics_tables)
    checker.write_verdicts(checker.check_results(folder, CLAIMS_FILE), folder)  # as `check` leaves it
    return content.load_set(0, folder)


def test_figures_are_pngs_or_reasons(tmp_path):
    gpu = _set(tmp_path, gpu_results((1, 2, 4)), "gpu")
    for fn in (
        figures.breakdown,
        figures.allreduce_vs_backward,
        figures.timeline,
        figures.overlap,
        figures.throughput,
        figures.busy_wait,
        figures.distributions,
    ):
        fig = fn(gpu)
        assert isinstance(fig, figures.Figure), fn.__name__
        assert fig.png.startswith(b"\x89PNG") and len(fig.png) > 5000 and fig.alt
    cpu = _set(tmp_path, cpu_results((1, 2)), "cpu")
    for fn in (
        figures.breakdown,
        figures.allreduce_vs_backward,
        figures.timeline,
        figures.overlap,
        figures.busy_wait,
        figures.distributions,
    ):
        fig = fn(cpu)
        assert isinstance(fig, figures.NotAvailable) and len(fig.reason) > 20, fn.__name__
    assert "world sizes 1, 2: CPU run (gloo, no GPU)" in figures.breakdown(cpu).reason
    html = content.figure_html(figures.overlap(cpu), "9.9", "caption")
    assert "Figure 9.9 not available:</b>" in html and "<img" not in html


def test_one_gpu_reference_set(tmp_path):
    rs = _set(tmp_path, gpu_results((1,), busy_wait=False), "ref")
    assert isinstance(figures.overlap(rs), figures.NotAvailable)
    assert "only defined where NCCL kernels ran" in figures.overlap(rs).reason
    assert isinstance(figures.breakdown(rs), figures.Figure)
    assert "World sizes</b> measured: 1" in " ".join(content.fallback_items(rs))


def test_labels(tmp_path):
    m, t = gpu_results((1, 4), gpu="NVIDIA H200")
    folder = write_results(tmp_path / "expected" / "reference" / "h200", m, t)
    # a folder's path says nothing of where its traces came from: the metrics' sources do
    assert content.default_label(m, folder) == "GPU runs: H200, world sizes 1, 4, tracer scorep"
    m["sources"] = ["expected/reference/h200-b8"]  # the shipped traces of one set
    assert content.default_label(m, folder) == "Reference traces: H200, world sizes 1, 4, tracer scorep"
    m, _ = cpu_results((1, 2))
    assert content.default_label(m, tmp_path).startswith("CPU smoke run on this machine: world sizes 1, 2")


def test_kernel_spec_is_this_interpreter_whatever_jupyter_path_says(tmp_path, monkeypatch):
    bogus = tmp_path / "kernels" / "python3"
    bogus.mkdir(parents=True)
    (bogus / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "other",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    from jupyter_client.kernelspec import KernelSpecManager

    assert KernelSpecManager().get_kernel_spec("python3").argv[0] == "/nonexistent/python"  # the trap is set
    km = build._kernel_manager_class()(kernel_name="python3")
    assert km.kernel_spec.argv[0] == sys.executable


def test_cli_errors(tmp_path, capsys):
    assert cli_main(["report", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2
    assert "nothing: does not exist" in capsys.readouterr().err
    folder = write_results(tmp_path / "r", *cpu_results((1,)))
    with pytest.raises(ArtifactError, match="2 --label given for 1 results folder"):
        build.build_report([folder], tmp_path / "out", labels=["a", "b"])


@pytest.mark.slow
def test_a_failing_notebook_is_a_clear_error(tmp_path):
    m, t = gpu_results((1, 4))
    m["provenance"]["packages"] = "broken"  # provenance is free-form: the schema check leaves it alone
    folder = write_results(tmp_path / "r", m, t)
    with pytest.raises(ArtifactError, match="the report notebook failed") as err:
        build.build_report([folder], tmp_path / "out", claims=CLAIMS_FILE)
    assert "partly executed notebook" in str(err.value)
    # the partial notebook lies beside the last report, never over it
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.failed.ipynb"]


# ---- a real browser ---------------------------------------------------------------------------


@pytest.mark.chromium
def test_report_renders_in_headless_chromium(built, tmp_path):
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run installs it in CI)")
    with Chromium(binary) as browser:
        browser.open(built["html"].resolve().as_uri())
        page = browser.evaluate(IMAGES_JS)
        zoom = browser.evaluate(ZOOM_JS)
        shot = browser.screenshot(Path(os.environ.get("DNABERT_REPORT_SCREENSHOT", tmp_path / "report.png")))
    assert page["ready"] == "complete"
    assert page["h1"] == "Where does GPU time go when DNABERT-2 fine-tuning scales over GPUs?"
    assert page["title"].startswith("DNABERT-2 DDP scaling")
    n_img = len(re.findall(r"<img", built["text"]))
    assert len(page["images"]) == n_img >= 7
    broken = [i for i in page["images"] if not (i["w"] > 0 and i["h"] > 0)]
    assert not broken, f"images that did not load: {broken}"
    assert page["external"] == [], "the page must not fetch anything"
    assert any(s.startswith(f"2 Results: {GPU_LABEL}") for s in page["sections"])
    assert any(s.startswith("3 Results: CPU smoke run") for s in page["sections"])
    assert page["text"] > 5000
    assert shot.stat().st_size > 50_000
    assert zoom["before"] and zoom["after"] != zoom["before"], zoom  # the wheel zoomed the inline timeline
    assert float(zoom["after"].split()[2]) < float(zoom["before"].split()[2])
    assert zoom["range"].endswith(" ms") and zoom["bars"] > 100


ZOOM_JS = """(() => { const svg = document.querySelector('svg[id^=ds-zoom-]');
  if (!svg) return {before: null};
  const before = svg.getAttribute('viewBox'); const r = svg.getBoundingClientRect();
  svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: r.left + r.width / 2, clientY: r.top + 5,
                                               bubbles: true, cancelable: true}));
  return {before: before, after: svg.getAttribute('viewBox'), bars: svg.querySelectorAll('rect').length,
          range: document.getElementById(svg.id + '-range').textContent}; })()"""


def test_labels_are_made_distinct(tmp_path):
    a, _ = gpu_results((1,), gpu="NVIDIA H200")
    b = json.loads(json.dumps(a))
    b["provenance"]["batch_size_per_rank"] = 8
    a["sources"] = b["sources"] = ["expected/reference/h200-b8"]
    labels = content.distinct_labels([(a, tmp_path / "x"), (b, tmp_path / "y")])
    assert labels == [
        "Reference traces: H200, world size 1, tracer scorep, batch 32 per rank",
        "Reference traces: H200, world size 1, tracer scorep, batch 8 per rank",
    ]
    same = content.distinct_labels([(a, tmp_path / "one"), (a, tmp_path / "two")])
    assert len(set(same)) == 2


def _agreement_section(tmp_path, names):
    sets = [ROOT / "expected" / "reference-results" / n for n in names]
    shipped = {p: p.read_bytes() for d in sets for p in sorted(d.rglob("*")) if p.is_file()}
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "report", *map(str, sets), "--out", str(tmp_path / "rep")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the shipped verdicts are tied to their metrics and claims (sha256): nothing re-checked, nothing rewritten
    assert "ran `dnabert-scaling check`" not in proc.stderr
    assert {p: p.read_bytes() for d in sets for p in sorted(d.rglob("*")) if p.is_file()} == shipped
    page = (tmp_path / "rep" / "report.html").read_text()
    section = page[page.index("Appendix C: cross-tracer agreement") : page.index("Appendix D")]
    return section, section[section.index("kernels per step") : section.index("step (traced)")]


def test_cross_tracer_agreement_table_pairs_the_scorep_and_torch_twins(tmp_path):
    """The same configuration traced by Score-P and by torch.profiler, side by side in one call
    (the shipped twins of 2026-12-04): one table, the same kernels per step, no warning."""
    section, row = _agreement_section(tmp_path, ("h200-scorep-b8", "h200-scorep-b8-torch", "h200-b32"))
    assert "batch 8 per rank: set 2 (scorep) against set 3 (torch)" in section
    assert "batch 32 per rank: set" not in section  # no Score-P set of batch 32 among these: no pair
    assert row.count(">1,000<") == 2 and ">1.000<" in row
    assert "Not the same workload" not in section


def test_cross_tracer_agreement_says_when_the_two_sets_were_not_the_same_workload(tmp_path):
    """A Score-P set recorded with the DDP bucket hook (1,000 kernels per step) against a torch set
    of the same configuration recorded before the hook existed (h200-b8, 1,127): both figures, and
    the sentence that the table compares more than the tracers."""
    section, row = _agreement_section(tmp_path, ("h200-scorep-b8", "h200-b8"))
    assert "batch 8 per rank: set 2 (scorep) against set 3 (torch)" in section
    assert "1,000" in row and "1,127" in row
    assert "Not the same workload: set 2 launches 1,000 kernels per step" in section


def _result_set(metrics, tmp_path) -> content.ResultSet:
    claims = checker.load_claims(Path(__file__).resolve().parents[1] / "expected" / "claims.toml")
    return content.ResultSet(0, tmp_path, "test", "gpu", metrics, checker.evaluate(metrics, claims), "test")


def test_not_run_reasons_quote_the_checker_and_name_what_ran(tmp_path):
    from dnabert_scaling.report.summary import not_run_reason

    def reasons(rs):
        return {not_run_reason(ch, rs) for c in rs.verdicts["claims"] for ch in c["checks"] if ch["verdict"] == checker.NOT_RUN}

    one = _result_set(gpu_results((1,))[0], tmp_path)
    assert {
        "no measured world size is >= 2 (measured: 1); this set has 1 GPU",
        "world size 8 was not measured (measured: 1); this set has 1 GPU",
        "needs 2 world sizes (every measured world size >= 2) with data to judge a trend, has 0 (none); this set has 1 GPU",
    } <= reasons(one)
    two = _result_set(gpu_results((1, 2))[0], tmp_path)
    trend = "needs 2 world sizes (every measured world size >= 2) with data to judge a trend, has 1 (2); this set has 1, 2 GPUs"
    assert trend in reasons(two)
    # the CPU smoke set: CPU ranks, and the checker's count of multi-GPU world sizes (none), not 1
    cpu = _result_set(cpu_results((1, 2))[0], tmp_path)
    assert "world size 8 was not measured (measured: 1, 2); this set has 1 CPU rank, 2 CPU ranks" in reasons(cpu)
    has = [r.split("; this set has ")[1] for r in reasons(cpu) if "; this set has " in r]
    assert has and not [h for h in has if "GPU" in h]
    assert not [r for r in reasons(cpu) if "has 1 (" in r]
    for c in two.verdicts["claims"]:  # without the checker's sentence: made from the code and its fields
        for ch in c["checks"]:
            ch["reason"] = ""
    assert "a trend needs 2 world sizes with data, has 1; this set has 1, 2 GPUs" in reasons(two)
    html = content.claims_html(two)
    (ind,) = next(c for c in two.verdicts["claims"] if c["id"] == "C4")["indicative"]
    assert "Indicative only" in html and content.esc(ind["why"]) in html


def test_gpu_missing_reasons_group_world_sizes(tmp_path):
    rs = _result_set(cpu_results((1, 2))[0], tmp_path)
    why = rs.gpu_missing_why(2)
    assert why.startswith("CPU run") and rs.gpu_reason(2) == f"world size 2: {why}"
    assert figures.gpu_missing_reason(rs) == f"world sizes 1, 2: {why}"


FIRST_SCREEN_JS = """(() => { const t = document.querySelector('#ds-summary table');
  if (!t) return null; const r = t.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, right: r.right, width: window.innerWidth, height: window.innerHeight,
          rows: t.querySelectorAll('tr').length, scroll: document.documentElement.scrollHeight}; })()"""


@pytest.mark.chromium
def test_summary_table_fits_the_first_screen(built, tmp_path):
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run installs it in CI)")
    with Chromium(binary) as browser:
        browser.open(built["html"].resolve().as_uri(), width=1400, height=900)
        box = browser.evaluate(FIRST_SCREEN_JS)
        browser.screenshot(tmp_path / "first-screen.png", full_page=False)
    assert box is not None, "the report has a summary table"
    assert box["rows"] == 3  # the header and one row per result set
    assert box["height"] == 900 and 0 <= box["top"] < box["bottom"] <= 900, box
    assert box["right"] <= box["width"], box


def test_an_unknown_idle_split_is_shown_as_unknown_never_zero(tmp_path):
    m, t = gpu_results((1, 4))
    for e in m["world_sizes"].values():
        for k in ("idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s"):
            e["traced"]["gpu"][k] = None  # Score-P sets: the split may be unknown
    m["world_sizes"]["4"]["traced"]["gpu"]["idle_other_s"] = {"median": 0.001, "p10": 0.001, "p90": 0.001, "n": 1}
    rs = _set(tmp_path, (m, t), "unknown")
    html = content.idle_html(rs)
    assert html.count(">unknown<") == 5  # three parts at two world sizes, one of them known
    assert "the causes of the idle time are unknown" in html and "launch-bound" not in html
    assert isinstance(figures.breakdown(rs), figures.Figure)  # plain idle, not a split of zeros


@pytest.mark.chromium
def test_shipped_report_first_screen_holds_every_set(tmp_path):
    """The shipped report of the reference sets: its summary table, one row per set, fits the first
    screen at 1400x900, and the whole page is under a quarter of the 46,787 px the report of the
    seven sets shipped then took, per set (the shipped sets have grown since)."""
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run installs it in CI)")
    shipped = ROOT / "expected" / "reference-results" / "report.html"
    sets = sorted(p for p in shipped.parent.iterdir() if p.is_dir())
    with Chromium(binary) as browser:
        browser.open(shipped.resolve().as_uri(), width=1400, height=900)
        box = browser.evaluate(FIRST_SCREEN_JS)
    assert box["rows"] == len(sets) + 1
    assert 0 <= box["top"] < box["bottom"] <= 900 and box["right"] <= box["width"], box
    assert box["scroll"] < 46787 / 4 * len(sets) / 7, box["scroll"]


def test_cross_tracer_agreement_names_the_rows_that_differ_and_the_shared_gpu():
    """Below each pair: every row whose two medians differ by more than 5%, never said to be explained
    by the completeness line beyond the kinds a tool did not record; where the ranks shared a GPU (the
    rehearsals), that the timings are those of ranks taking turns on it (never at one rank)."""
    import html as html_lib
    import re

    from dnabert_scaling.report.agreement import agreement_html
    from dnabert_scaling.report.results import load_set

    shipped = ROOT / "expected" / "reference-results"
    sets = [load_set(i, shipped / name) for i, name in enumerate(("h200-rehearsal", "h200-rehearsal-scorep"))]
    text = html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", agreement_html(sets))))
    tables = text.split("NVIDIA H200, world size ")[1:]
    by_ws = {t.split(",")[0]: t for t in tables}
    assert set(by_ws) == {"1", "2", "4"}
    assert "backward GPU time (1.595)" in by_ws["2"] and "any other difference is not explained here" in by_ws["2"]
    assert "At world size 2 the ranks of set 3 and set 2 shared a GPU" in by_ws["2"]
    assert "shared a GPU" not in by_ws["1"]  # one rank on the GPU shares it with nobody


def test_refresh_report_rebuilds_the_page_from_the_results_as_they_are(tmp_path):
    """``make refresh-report``: the page is rebuilt from the shipped results, which stay byte for byte
    as they were (no creation time or digest rewritten), and the page says what wrote it."""
    shipped = tmp_path / "reference-results"
    for name in ("h200-scorep-b8", "h200-scorep-b8-torch"):
        shutil.copytree(ROOT / "expected" / "reference-results" / name, shipped / name)
    before = {p: p.read_bytes() for p in sorted(shipped.rglob("*")) if p.is_file()}
    proc = subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "refresh_report.py"), "--results", str(shipped)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {p: p.read_bytes() for p in sorted(shipped.rglob("*")) if p.is_file() and p.name != "report.html"} == before
    page = (shipped / "report.html").read_text()
    assert "make refresh-report" in page and "kick-tires/reference-h200-scorep-b8/results" in page
    # the page names paths as the checkout has them, never this machine's or the build's workspace
    assert str(ROOT) not in page and "refresh-report-" not in page and str(tmp_path) not in page
    assert "<td>expected/claims.toml</td>" in page
    assert sorted(p.name for p in shipped.iterdir()) == ["h200-scorep-b8", "h200-scorep-b8-torch", "report.html"]
    proc = subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "refresh_report.py"), "--results", str(tmp_path / "none")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "no result sets to build the report from" in proc.stderr


def test_two_builds_of_the_same_results_are_the_same_page(tmp_path):
    """Cell ids come from each cell's place and tag, and SOURCE_DATE_EPOCH fixes the creation time: two
    builds of the same results are byte for byte the same page. A malformed SOURCE_DATE_EPOCH is a clear
    error before anything is built, and the last page stays as it was."""
    shipped = tmp_path / "reference-results"
    shutil.copytree(ROOT / "expected" / "reference-results" / "h200-scorep-b8", shipped / "h200-scorep-b8")
    refresh = [PYTHON, str(ROOT / "scripts" / "refresh_report.py"), "--results", str(shipped)]
    pages = []
    for _ in range(2):
        proc = subprocess.run(
            refresh, capture_output=True, text=True, timeout=600, env={**os.environ, "SOURCE_DATE_EPOCH": "1764892800"}
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        pages.append((shipped / "report.html").read_bytes())
    assert pages[0] == pages[1]
    assert b"Generated 2025-12-05T00:00:00+00:00 by" in pages[0]
    ids = re.findall(rb'id="cell-id=([^"]+)"', pages[0])
    assert ids and ids[0] == b"c00-parameters" and len(set(ids)) == len(ids)
    for bad in ("12x", "-5", "１２", "999999999999", " "):
        proc = subprocess.run(refresh, capture_output=True, text=True, timeout=600, env={**os.environ, "SOURCE_DATE_EPOCH": bad})
        assert proc.returncode == 2 and "SOURCE_DATE_EPOCH" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert (shipped / "report.html").read_bytes() == pages[0]
