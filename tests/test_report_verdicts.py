"""The seam between `check` and `report`: the report reads verdicts.json as `check` wrote it and never
evaluates claims itself; the report command runs `check` (once, saying so) on a folder without
current verdicts; `analyze` leaves `check`'s outputs alone and says they are stale."""

import hashlib
import json
import subprocess

import pytest

from conftest import DATA, PYTHON, ROOT, can_mount_read_only
from reportfixtures import cpu_results, gpu_results, write_results

from dnabert_scaling import checker, outputs
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.report import build, results

CLAIMS_FILE = ROOT / "expected" / "claims.toml"
TRACE = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"


def _cli(*args, cwd=ROOT):
    return subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _checked(folder):
    checker.write_verdicts(checker.check_results(folder, CLAIMS_FILE), folder)  # as `check` leaves it
    return folder


def test_analyze_keeps_check_outputs_and_says_they_are_stale(tmp_path):
    out = tmp_path / "results"
    first = _cli("analyze", "--world-size", "1", TRACE, "--batch-size", "8", "--out", out)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "stale" not in first.stderr, "no verdicts yet: nothing to call stale"
    c = _cli("check", out, "--expected", CLAIMS_FILE, "--quiet")
    assert c.returncode in (0, 1), c.stderr[-3000:]
    kept = {name: _digest(out / name) for name in ("verdicts.json", "verdicts.txt")}
    metrics = json.loads((out / "metrics.json").read_text())
    assert checker.read_verdicts(out, metrics)[0] is not None, "fresh from check: current"

    again = _cli("analyze", "--world-size", "1", TRACE, "--batch-size", "16", "--out", out)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {name: _digest(out / name) for name in kept} == kept, "analyze left check's outputs byte for byte"
    assert "verdicts.json and verdicts.txt" in again.stderr and "stale until `dnabert-scaling check" in again.stderr
    verdicts, why = checker.read_verdicts(out, json.loads((out / "metrics.json").read_text()))
    assert verdicts is None and "written for other metrics" in why


def test_the_report_reads_verdicts_and_never_evaluates(tmp_path, monkeypatch):
    m, t = gpu_results((1, 4))
    folder = write_results(tmp_path / "r", m, t)

    def no_evaluation(*a, **k):
        raise AssertionError("the report evaluated claims itself")

    monkeypatch.setattr(checker, "evaluate", no_evaluation)
    rs = results.load_set(0, folder)
    assert rs.verdicts is None and rs.verdicts_source.startswith("no verdicts.json: run dnabert-scaling check on this folder")
    monkeypatch.undo()

    _checked(folder)
    assert results.load_set(0, folder).verdicts_source == "verdicts.json (written by dnabert-scaling check)"
    m["created"] = "2030-01-01T00:00:00+00:00"  # analyze ran again after check
    (folder / "metrics.json").write_text(json.dumps(m))
    rs = results.load_set(0, folder)
    assert rs.verdicts is None and "written for other metrics (created" in rs.verdicts_source


def test_same_created_but_other_metrics_is_stale(tmp_path):
    m, t = gpu_results((1, 4))
    folder = _checked(write_results(tmp_path / "r", m, t))
    m["world_sizes"]["4"]["throughput"]["samples_per_s"]["median"] *= 0.5  # another analysis within the same second
    (folder / "metrics.json").write_text(json.dumps(m))
    verdicts, why = checker.read_verdicts(folder, m)
    assert verdicts is None and "metrics.json changed since `check` ran" in why


def test_report_checks_folders_without_current_verdicts_once_and_says_so(tmp_path, monkeypatch, capsys):
    m, t = gpu_results((1, 4))
    missing = write_results(tmp_path / "missing", m, t)
    current = _checked(write_results(tmp_path / "current", m, t))
    stale = _checked(write_results(tmp_path / "stale", m, t))
    newer = dict(m, created="2030-01-01T00:00:00+00:00")
    (stale / "metrics.json").write_text(json.dumps(newer))
    untouched = {name: _digest(current / name) for name in ("verdicts.json", "verdicts.txt")}

    calls = []
    real = checker.check_folder
    monkeypatch.setattr(checker, "check_folder", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    folders = [(m, missing), (m, current), (newer, stale)]
    assert build.check_where_needed(folders, CLAIMS_FILE) == [missing, stale]
    assert calls == [missing, stale], "check ran once per folder that needed it, on no other"
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("report: ")]
    assert len(lines) == 2
    assert str(missing) in lines[0] and "no verdicts.json" in lines[0] and str(CLAIMS_FILE) in lines[0]
    assert str(stale) in lines[1] and "written for other metrics" in lines[1] and "ran `dnabert-scaling check`" in lines[1]
    for metrics, folder in folders:
        verdicts, why = checker.read_verdicts(folder, metrics)
        assert verdicts is not None, why
        assert (folder / "verdicts.txt").read_text() == checker.format_table(verdicts)
    assert {name: _digest(current / name) for name in untouched} == untouched
    assert build.check_where_needed(folders, CLAIMS_FILE) == [], "now current everywhere: nothing to check"


def test_report_without_claims_file_checks_nothing_and_says_so(tmp_path, capsys):
    m, t = gpu_results((1, 4))
    folder = write_results(tmp_path / "r", m, t)
    assert build.check_where_needed([(m, folder)], tmp_path / "no-claims.toml") == []
    assert "its claims show as not checked" in capsys.readouterr().err
    assert not (folder / "verdicts.json").exists()


def test_report_refuses_an_unwritable_folder_before_writing_anything(tmp_path, monkeypatch):
    m, t = gpu_results((1, 4))
    fine = write_results(tmp_path / "fine", m, t)
    locked = write_results(tmp_path / "locked", m, t)
    real = outputs._probe  # root writes everywhere: the folder is made unwritable for the probe only
    monkeypatch.setattr(outputs, "_probe", lambda f: PermissionError(13, "Permission denied") if f == locked else real(f))
    with pytest.raises(ArtifactError) as err:
        build.check_where_needed([(m, fine), (m, locked)], CLAIMS_FILE)
    text = str(err.value)
    assert str(locked) in text and f"run `dnabert-scaling check {locked}" in text and "not writable" in text
    assert not (fine / "verdicts.json").exists(), "refused before any folder was written"


@pytest.mark.skipif(not can_mount_read_only(), reason="needs unshare -m and mount (root or user namespaces)")
def test_report_command_on_a_read_only_folder_refuses_clearly(tmp_path):
    m, t = gpu_results((1, 4))
    folder = write_results(tmp_path / "r", m, t)
    before = sorted(p.name for p in folder.iterdir())
    out = tmp_path / "report"
    cmd = f"'{PYTHON}' -m dnabert_scaling report '{folder}' --out '{out}' --expected '{CLAIMS_FILE}'"
    # a private mount namespace: the results folder read-only for this command only
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && exec {cmd}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert str(folder) in proc.stderr and "no verdicts.json" in proc.stderr and "dnabert-scaling check" in proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == before and not out.exists()


def _all_pass(folder, keep_sources):
    """verdicts.json edited by hand: every claim PASS, with or without its sources."""
    v = json.loads((folder / "verdicts.json").read_text())
    for c in v["claims"]:
        c["verdict"] = "PASS"
    if not keep_sources:
        v.pop("sources")
    (folder / "verdicts.json").write_text(json.dumps(v))
    return v


def test_verdicts_without_their_sources_are_not_presented(tmp_path, capsys):
    m, t = cpu_results((1,))  # one CPU rank: no GPU claim can pass
    folder = _checked(write_results(tmp_path / "r", m, t))
    _all_pass(folder, keep_sources=False)
    verdicts, why = checker.read_verdicts(folder, m, CLAIMS_FILE)
    assert verdicts is None and "does not record the sha256 of the metrics.json" in why
    rs = results.load_set(0, folder, claims=CLAIMS_FILE)
    assert rs.verdicts is None and "does not record the sha256" in rs.verdicts_source
    # the report re-runs check on it, says so, and what it then presents is the real verdicts
    assert build.check_where_needed([(m, folder)], CLAIMS_FILE) == [folder]
    assert "does not record the sha256" in capsys.readouterr().err
    rs = results.load_set(0, folder, claims=CLAIMS_FILE)
    assert rs.verdicts is not None and not any(c["verdict"] == "PASS" for c in rs.verdicts["claims"])


def test_verdicts_judged_against_another_claims_file_are_not_current(tmp_path):
    m, t = gpu_results((1, 4))
    folder = _checked(write_results(tmp_path / "r", m, t))
    other = tmp_path / "claims.toml"
    other.write_text(CLAIMS_FILE.read_text().replace("lo = 0.6", "lo = 0.5"))
    assert checker.read_verdicts(folder, m, CLAIMS_FILE)[0] is not None
    verdicts, why = checker.read_verdicts(folder, m, other)
    assert verdicts is None and "judged against another claims file" in why
    v = json.loads((folder / "verdicts.json").read_text())
    del v["sources"]["claims_sha256"]
    (folder / "verdicts.json").write_text(json.dumps(v))
    verdicts, why = checker.read_verdicts(folder, m, CLAIMS_FILE)
    assert verdicts is None and "sha256 of the claims file" in why


def test_verdicts_edited_with_their_sources_intact_are_checked_again(tmp_path, capsys):
    m, t = cpu_results((1,))
    folder = _checked(write_results(tmp_path / "r", m, t))
    _all_pass(folder, keep_sources=True)  # the digests still match: only the verdicts were edited
    assert checker.read_verdicts(folder, m, CLAIMS_FILE)[0] is not None
    assert build.check_where_needed([(m, folder)], CLAIMS_FILE) == [folder]
    assert "does not hold the verdicts its metrics.json gives" in capsys.readouterr().err
    verdicts = checker.read_verdicts(folder, m, CLAIMS_FILE)[0]
    assert verdicts is not None and not any(c["verdict"] == "PASS" for c in verdicts["claims"])
    assert build.check_where_needed([(m, folder)], CLAIMS_FILE) == [], "as check wrote it: nothing to do"


def test_the_report_names_the_command_that_wrote_it(monkeypatch):
    monkeypatch.setattr("sys.argv", ["/venv/lib/python3/site-packages/dnabert_scaling/__main__.py", "report", "r", "--out", "o"])
    assert build.invocation() == "dnabert-scaling report r --out o"
    monkeypatch.setattr("sys.argv", ["/venv/bin/dnabert-scaling", "report", "r"])
    assert build.invocation() == "dnabert-scaling report r"
    parser = __import__("argparse").ArgumentParser()
    build.add_arguments(parser)
    args = parser.parse_args(["r", "--out", "o", "--written-by", "make kick-tires (scripts/reproduce.py --kick-tires)"])
    assert args.written_by == "make kick-tires (scripts/reproduce.py --kick-tires)"
