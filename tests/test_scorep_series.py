"""The Score-P patch series: what make lint-container says about containers/scorep-patches/, and
what containers/build-scorep.sh applies (its --list-patches, no build)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT
from dnabert_scaling.tools import scorep_series

PATCHES = ROOT / "containers" / "scorep-patches"


def test_shipped_series_is_complete():
    assert scorep_series.version_problems(PATCHES, "8.4") == []
    assert scorep_series.version_problems(PATCHES, "9.4") == []  # built as released
    entries, problems = scorep_series.read_series(PATCHES / "series-8.4")
    assert problems == []
    assert [e.status for e in entries if e.file == "8.4-cupti-stream-order.patch"] == ["verified"]
    assert {p.name for p in PATCHES.glob("8.4-*.patch")} == {e.file for e in entries}


def _folder(tmp_path, series: str | None, patches=("8.4-a.patch", "8.4-b.patch")):
    folder = tmp_path / "scorep-patches"
    folder.mkdir()
    for name in patches:
        (folder / name).write_text("--- a/x\n+++ b/x\n")
    if series is not None:
        (folder / "series-8.4").write_text(series)
    return folder


@pytest.mark.parametrize(
    "series, patches, needle",
    [
        (None, (), "no "),  # 8.x needs the stream-order patch
        ("8.4-a.patch verified\n", ("8.4-a.patch", "8.4-b.patch"), "8.4-b.patch: not listed in series-8.4"),
        ("8.4-a.patch verified\n8.4-c.patch candidate\n", ("8.4-a.patch",), "series-8.4:2: 8.4-c.patch does not exist"),
        ("8.4-a.patch candidate\n", ("8.4-a.patch",), "no verified patch"),
        ("8.4-a.patch maybe\n", ("8.4-a.patch",), "series-8.4:1: expected 'FILE STATUS [note]'"),
        (
            "# only a comment\n8.4-a.patch verified note words\n9.1-x.patch verified\n",
            ("8.4-a.patch", "9.1-x.patch"),
            "not a 8.4 patch",
        ),
    ],
)
def test_series_problems(tmp_path, series, patches, needle):
    folder = _folder(tmp_path, series, patches)
    problems = scorep_series.version_problems(folder, "8.4")
    assert any(needle in p for p in problems), problems


def test_versions(tmp_path):
    folder = _folder(tmp_path, "8.4-a.patch verified\n8.4-b.patch candidate\n")
    assert scorep_series.version_problems(folder, "8.4") == []
    assert "not a Score-P release number" in scorep_series.version_problems(folder, "8.x")[0]
    assert "builds Score-P 8.4" in scorep_series.version_problems(folder, "7.1")[0]
    (folder / "9.4-y.patch").write_text("")
    assert "no series-9.4 lists it" in scorep_series.version_problems(folder, "9.4")[0]


def test_lint_reports_an_unlisted_patch(tmp_path):
    ctx = tmp_path / "context"
    shutil.copytree(ROOT / "containers", ctx / "containers")
    for name in ("artifact", "requirements", "expected", "docs", "scripts", "pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            (ctx / name).symlink_to(ROOT / name)
    (ctx / "containers" / "scorep-patches" / "8.4-new.patch").write_text("")
    proc = subprocess.run(
        [
            PYTHON,
            "-m",
            "dnabert_scaling.tools",
            "lint-container",
            "--no-scripts",
            "--context",
            str(ctx),
            str(ROOT / "containers" / "dnabert-scaling.def"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "SCOREP_VERSION=8.4: " in proc.stdout and "8.4-new.patch: not listed in series-8.4" in proc.stdout


def _build(tmp_path, *args):
    tarball = tmp_path / "scorep-8.4.tar.gz"
    tarball.touch()
    return subprocess.run(
        ["bash", str(ROOT / "containers" / "build-scorep.sh"), "--source", str(tarball), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_build_applies_verified_patches_and_candidates_on_request(tmp_path):
    proc = _build(tmp_path, "--list-patches")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "8.4-cupti-stream-order.patch verified",
        "8.4-cupti-launch-callbacks.patch verified",
        "8.4-cupti-overlap-kept.patch verified",
        "8.4-cupti-stream-ref-cache.patch verified",
        "8.4-cupti-launch-records.patch verified",
    ]
    # a candidate (not yet built and run on a GPU) is applied only on request
    copy = tmp_path / "containers"
    shutil.copytree(ROOT / "containers", copy)
    (copy / "scorep-patches" / "8.4-new.patch").write_text("")
    with open(copy / "scorep-patches" / "series-8.4", "a") as f:
        f.write("8.4-new.patch  candidate  not yet built\n")
    tarball = tmp_path / "scorep-8.4.tar.gz"
    tarball.touch()
    cmd = ["bash", str(copy / "build-scorep.sh"), "--source", str(tarball), "--list-patches"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "8.4-new.patch candidate" not in proc.stdout
    assert "not applying candidate 8.4-new.patch" in proc.stderr
    proc = subprocess.run([*cmd, "--candidate-patches"], capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines()[-1] == "8.4-new.patch candidate"


def test_build_refuses_an_unlisted_patch(tmp_path):
    copy = tmp_path / "containers"
    shutil.copytree(ROOT / "containers", copy)
    (copy / "scorep-patches" / "8.4-new.patch").write_text("")
    tarball = tmp_path / "scorep-8.4.tar.gz"
    tarball.touch()
    proc = subprocess.run(
        ["bash", str(copy / "build-scorep.sh"), "--source", str(tarball), "--list-patches"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "8.4-new.patch is not listed in scorep-patches/series-8.4" in proc.stderr


def _check_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_patches", ROOT / "containers/scorep-patches/check/check_patches.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pdl_line(log_name: str) -> dict:
    log = ROOT / "expected/reference/h200-bench/gpu-call-2026-12-04-counted" / log_name
    return next(json.loads(x) for x in log.read_text().splitlines() if x.startswith('{"lab": "pdl"'))


def test_overlap_lab_verdicts_on_the_h200_figures():
    """The overlap lab's figures as the H200 printed them (call H): the two-patch build kept 268 of
    400 kernels, the build with the overlap patch 400 of 400; judged only where the patch is listed."""
    cp = _check_module()
    before, after = _pdl_line("check-against-g-build.log"), _pdl_line("check-against-h-build.log")
    assert (before["contained"], before["kernels"], before["launches"]) == (199, 268, 400)
    skipped_log = "[Score-P] x.c:369: Warning: [CUPTI Activity] Skipping ..."
    assert cp.overlap_verdicts("launch", before, before, skipped_log, patched=False) == []  # the contrast
    problems = cp.overlap_verdicts("launch", before, before, skipped_log, patched=True)
    assert any("268 kernels for 400 launches" in p for p in problems) and any("skipped" in p for p in problems)
    assert cp.overlap_verdicts("launch", after, after, "", patched=True) == []
    with pytest.raises(cp.CannotRun, match="not exercised"):  # no pair overlapped: never a pass
        cp.overlap_verdicts("launch", {**after, "contained": 0}, after, "", patched=True)
    with pytest.raises(cp.CannotRun):
        cp.overlap_verdicts("launch", None, {"launches": 0, "kernels": 0}, "", patched=True)


def test_stream_reference_check_on_real_score_p_traces():
    """The stream-reuse lab's judge, on H200 traces: the shipped launch-mode set (every launch refers to
    the stream its kernel ran on) passes; the incomplete trace of released Score-P 8.4 (launches
    without references, kernels lost) fails on both counts."""
    cp = _check_module()
    good = cp.stream_refs(ROOT / "expected/reference/h200-rehearsal-scorep/ws2-scorep-r0/traces/scorep-rank1")
    assert good == {"kernels": {"CUDA[0:16]": 125, "CUDA[0:7]": 8294}, "referred": {"CUDA[0:16]": 125, "CUDA[0:7]": 8294},
                    "unreferenced": 0}  # fmt: skip
    assert cp.reference_problems("lab", good) == []
    bad = cp.stream_refs(ROOT / "tests/data/traces/scorep84-h200-dnabert2-incomplete/ws1-scorep-r0/traces/scorep-rank0")
    assert cp.reference_problems("lab", bad) == [
        "lab: 39733 kernel launches without a stream reference",
        "lab: launches refer to the wrong stream on 1 GPU locations (CUDA[0:7]: 1 launches refer to it, 1317 kernels ran on it)",
    ]
    # a stale cached location: a new stream's launches counted on the old stream's location
    stale = {"kernels": {"CUDA[0:7]": 10, "CUDA[0:9]": 4}, "referred": {"CUDA[0:7]": 14}, "unreferenced": 0}
    assert cp.reference_problems("lab", stale) == [
        "lab: launches refer to the wrong stream on 2 GPU locations (CUDA[0:7]: 14 launches refer to it, 10 kernels ran on it, "
        "CUDA[0:9]: 0 launches refer to it, 4 kernels ran on it)"
    ]


def test_the_stream_reuse_lab_fails_on_a_wrong_reference_even_without_a_reused_handle(monkeypatch, tmp_path, capsys):
    """A failure the lab saw is a FAIL; only a clean lab that reused no handle is NOT CHECKED (Score-P is
    not on this machine: the lab's printed line and its trace counts stand in for the GPU run)."""
    cp = _check_module()
    lab = {"lab": "stream_reuse", "streams": 24, "distinct_handles": 24, "launches": 48}
    step = {"launches": 49, "kernels": 49}
    monkeypatch.setattr(
        cp, "run_lab", lambda *a, **k: ({"experiment": str(tmp_path), "per_step": [step], "step_windows": 1}, json.dumps(lab))
    )
    stale = {"kernels": {"CUDA[0:7]": 10, "CUDA[0:9]": 4}, "referred": {"CUDA[0:7]": 14}, "unreferenced": 0}
    monkeypatch.setattr(cp, "stream_refs", lambda exp: stale)
    problems = cp.run_reuse_lab(tmp_path)
    assert len(problems) == 2 and all("launches refer to the wrong stream" in p for p in problems)
    clean = {"kernels": {"CUDA[0:7]": 49}, "referred": {"CUDA[0:7]": 49}, "unreferenced": 0}
    monkeypatch.setattr(cp, "stream_refs", lambda exp: clean)
    with pytest.raises(cp.CannotRun, match="no stream handle was reused"):
        cp.run_reuse_lab(tmp_path)
    lab["distinct_handles"] = 1  # the driver reused the handle: judged, and clean
    assert cp.run_reuse_lab(tmp_path) == []
    assert '"distinct_handles": 1' in capsys.readouterr().out


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["8.4-cupti-stream-order.patch"],
        ["8.4-cupti-stream-order.patch", "8.4-cupti-launch-callbacks.patch"],
        ["8.4-cupti-launch-callbacks.patch", "8.4-cupti-launch-records.patch"],
        ["8.4-cupti-stream-order.patch", "8.4-cupti-launch-records.patch"],
    ],
)
def test_the_patch_check_picks_the_default_mode_as_the_artifact_does(tmp_path, names):
    """check_patches.py runs without the package (inside an image build, on a GPU machine), so it carries its own
    copy of the rule; held here to the artifact's (run.tracing.scorep.driver_callbacks_for)."""
    from dnabert_scaling.run.tracing.scorep import driver_callbacks_for

    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "scorep-patches.txt").write_text("".join(f"patch: {n} sha256 x verified\n" for n in names))
    assert _check_module().default_mode_of(tmp_path) == driver_callbacks_for(names)[0]


def test_records_mode_is_checked_where_its_patch_is_listed(tmp_path):
    """The two-thread lab runs in records mode only where the install lists the records patch; there every
    kernel must carry one launch's correlation id and every launch sit on a CUDA launches[...] location.
    The overlap lab runs in the install's default mode, as the artifact picks it (records where listed)."""
    cp = _check_module()
    (tmp_path / "share").mkdir()
    listed = tmp_path / "share" / "scorep-patches.txt"
    listed.write_text("patch: 8.4-cupti-launch-callbacks.patch sha256 x verified\n")
    assert cp.modes_of(tmp_path) == ["all", "launch"] and cp.default_mode_of(tmp_path) == "launch"
    listed.write_text(listed.read_text() + "patch: 8.4-cupti-launch-records.patch sha256 y candidate\n")
    assert cp.modes_of(tmp_path) == ["all", "launch", "records"] and cp.default_mode_of(tmp_path) == "records"
    listed.write_text("patch: 8.4-cupti-launch-records.patch sha256 y verified\n")  # without its base: neither
    assert cp.modes_of(tmp_path) == ["all"] and cp.default_mode_of(tmp_path) == "all"
    listed.write_text("patch: 8.4-cupti-launch-callbacks.patch sha256 x verified\n" + listed.read_text())
    step = {"launches": 100, "kernels": 100}
    good = {"per_step": [step], "step_windows": 1, "host_regions": {"cuLaunchKernel": 100}, "host_enters": 101,
            "launches_by_location": {"CUDA launches[4242]": 100}, "kernels": 100, "kernels_linked": 100}  # fmt: skip
    assert cp.verdicts("records", good, "", host_all=5000) == []
    assert cp.verdicts("records", {**good, "kernels_linked": 58}, "", 5000) == [
        "records: 42 of 100 kernels carry no launch's correlation id"
    ]
    assert cp.verdicts("records", {**good, "kernels_linked": None}, "", 5000) == [
        "records: the launches carry no CUPTI_CORRELATION_ID"
    ]
    on_cpu = {**good, "launches_by_location": {"Master thread": 100}}
    assert cp.verdicts("records", on_cpu, "", 5000) == [
        "records: launches on Master thread, not on a CUDA launches[...] location"
    ]
    noisy = {**good, "host_regions": {"cuLaunchKernel": 100, "cuCtxGetDevice_v2": 3}}
    assert cp.verdicts("records", noisy, "", 5000) == ["records: other driver API calls recorded: cuCtxGetDevice_v2"]
