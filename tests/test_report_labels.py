"""What ``report`` refuses before it builds anything: the same results given twice (by path or as a
copy), two sections named alike, labels a reader cannot see or a terminal would act on; and
``SOURCE_DATE_EPOCH`` set but empty, which is unset, not an error."""

import shutil

import pytest
from cliprocess import assert_refused, cli_process
from conftest import ROOT

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.report import build

SHIPPED = ROOT / "expected" / "reference-results"


def _report(*args):
    return cli_process(["report", *args])


def test_a_copy_of_the_same_results_is_refused_naming_both(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(SHIPPED / "h200-b8", copy)
    out = tmp_path / "report"
    proc = _report(SHIPPED / "h200-b8", copy, "--out", out)
    assert_refused(proc, f"{copy}: holds the same measurements as {SHIPPED / 'h200-b8'}", "given twice", one_line=True)
    assert not out.exists()


def test_the_same_runs_analysed_twice_are_refused(tmp_path):
    """Two analyses of one sweep differ in their writing time and their source paths, not in what they measured."""
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "expected" / "reference" / "h200-b8", runs)
    first, second = tmp_path / "first", tmp_path / "second"
    for target, source in ((first, ROOT / "expected" / "reference" / "h200-b8"), (second, runs)):
        proc = cli_process(["analyze", source, "--out", target], timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "report"
    proc = _report(first, second, "--out", out)
    assert_refused(proc, f"{second}: holds the same measurements as {first}", "given twice", one_line=True)
    assert not out.exists()


def test_two_sections_named_alike_are_refused(tmp_path):
    out = tmp_path / "report"
    proc = _report(SHIPPED / "h200-b8", SHIPPED / "h200-b32", "--label", "X", "--label", "X", "--out", out)
    assert_refused(
        proc,
        "two sections would be named 'X' (given by --label)",
        str(SHIPPED / "h200-b8"),
        str(SHIPPED / "h200-b32"),
        one_line=True,
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "label, said",
    [
        ("", "--label 1 is empty"),
        ("   ", "--label 1 is only white space"),
        ("a\nb", "U+000A at character 2, a control character"),
        ("a\rb", "U+000D"),
        ("a\u202eb", "U+202E at character 2, a format (invisible or bidi) character"),
        ("a\u200bb", "U+200B"),
        ("a\x1b[31mb", "U+001B"),
        ("\u3164", "U+3164 at character 1, a Hangul filler (shows as blank)"),  # a letter by category, blank on screen
        ("ab\u2800", "U+2800 at character 3, a blank Braille pattern (shows as blank)"),
        ("x" * 100_000, "--label 1 has 100,000 characters; a label has at most 120"),
    ],
)
def test_a_label_that_cannot_be_shown_as_it_is_is_refused(label, said):
    with pytest.raises(ArtifactError) as err:
        build.check_label(label, 1)
    message = str(err.value)
    assert said in message and len(message) < 200 and "\x1b" not in message and "\u202e" not in message


def test_a_refused_label_stops_the_command_before_anything_is_written(tmp_path):
    out = tmp_path / "report"
    assert_refused(_report(SHIPPED / "h200-b8", "--label", "a\u202eb", "--out", out), "U+202E", one_line=True)
    assert not out.exists()
    build.check_label("H200, batch 8 — ünïcode is fine", 1)


def test_an_empty_source_date_epoch_is_unset(monkeypatch, tmp_path):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "")
    assert build.build_time() is None
    assert "SOURCE_DATE_EPOCH" not in build._kernel_env(tmp_path), "IPython's kernel reads it as a number"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764892800")
    assert build.build_time() == "2025-12-05T00:00:00+00:00"
    assert build._kernel_env(tmp_path)["SOURCE_DATE_EPOCH"] == "1764892800"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", " ")
    with pytest.raises(ArtifactError, match="SOURCE_DATE_EPOCH"):
        build.build_time()
