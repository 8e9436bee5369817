"""A claims file that could never be judged is refused when loaded (exit 2), never turned into a
verdict: every test's operand kind against the schema's kind of its metric, a ``top`` test's
activity against the names the ranking gives NCCL kernels, claim ids and check names as plain
labels, and a byte order mark named as such."""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT
from dnabert_scaling import checker
from dnabert_scaling.checker import FAIL, INVALID, PASS
from dnabert_scaling.checker.claims import Check, Claim, WorldSizes
from dnabert_scaling.checker.metric_paths import METRIC_TREE, RANKED_ACTIVITIES, metric_kinds
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces.classify import collective_from_name, nccl_activity
from reportfixtures import gpu_results

TEMPLATE = """
schema = "dnabert-scaling/claims/1"

[[claim]]
id = "X1"
title = "A claim"
statement = "Something measurable."
world_sizes = [4, 8]

  [[claim.check]]
  name = "n"
  what = "a figure"
  metric = "METRIC"
TEST
  rationale = "because"
"""
RANGE = "  lo = 0"
MONOTONE = '  test = "monotone"\n  max_drop_rel = 0.1'
EQUALS = '  test = "equals"\n  value = VALUE'
TOP = '  test = "top"\n  activity = "ACTIVITY"\n  lo = 1.0'


@pytest.fixture(scope="module")
def full():
    return gpu_results((1, 4, 8))[0]


def _text(metric="traced.gpu.allreduce_to_backward.median", test=RANGE, value="1", activity="nccl:AllReduce"):
    test = test.replace("VALUE", value).replace("ACTIVITY", activity)
    return TEMPLATE.replace("METRIC", metric).replace("TEST", test)


def _load(tmp_path, text):
    path = tmp_path / "claims.toml"
    path.write_text(text, encoding="utf-8")
    return checker.load_claims(path)


def _refused(tmp_path, text) -> str:
    with pytest.raises(ArtifactError) as err:
        _load(tmp_path, text)
    message = str(err.value)
    assert str(tmp_path / "claims.toml") in message, "the error names the file"
    assert "\n" not in message, "one line"
    return message


def _leaves(node, prefix=()):
    for key, child in node.items():
        if isinstance(child, dict):
            yield from _leaves(child, (*prefix, key))
        else:
            yield ".".join((*prefix, key))


# ---- item 8: each test judges only the kinds of value it can compare ----------------------------


@pytest.mark.parametrize(
    "metric,test,message",
    [
        ("traced.tracer", RANGE, "claim X1, check 'n': test 'range' needs a number; traced.tracer is a string"),
        ("throughput.runs", RANGE, "test 'range' needs a number; throughput.runs is a list"),
        ("traced.gpu.allreduce_own_stream", RANGE, "test 'range' needs a number; traced.gpu.allreduce_own_stream is true/false"),
        ("traced.gpu.phase_methods", RANGE, "test 'range' needs a number; traced.gpu.phase_methods is an object"),
        ("traced.tracer", MONOTONE, "test 'monotone' needs a number; traced.tracer is a string"),
        ("traced.gpu.allreduce_own_stream", MONOTONE, "test 'monotone' needs a number"),
        ("throughput.runs", EQUALS, "test 'equals' needs true/false, a number or a string; throughput.runs is a list"),
        ("traced.gpu.phase_methods", EQUALS, "traced.gpu.phase_methods is an object"),
    ],
)
def test_a_test_on_a_metric_of_another_kind_is_refused(tmp_path, metric, test, message):
    assert message in _refused(tmp_path, _text(metric, test))


def test_the_tester_s_range_on_the_tracer_exits_2_not_1(tmp_path, full, capsys):
    (tmp_path / "metrics.json").write_text(json.dumps(full))
    (tmp_path / "claims.toml").write_text(_text("traced.tracer"))
    assert cli_main(["check", str(tmp_path), "--expected", str(tmp_path / "claims.toml"), "--out", str(tmp_path / "v")]) == 2
    assert "test 'range' needs a number; traced.tracer is a string" in capsys.readouterr().err
    assert not (tmp_path / "v" / "verdicts.json").exists()


@pytest.mark.parametrize("test", [RANGE, MONOTONE])
def test_no_loadable_numeric_check_meets_anything_but_a_number(tmp_path, full, test):
    """The whole class: over every metric path, a range or trend loads exactly when the schema says
    the path holds numbers (or null), and none that loads is judged on anything else."""
    loaded = 0
    for metric in _leaves(METRIC_TREE):
        holds = metric_kinds(metric) - {"null"}
        try:
            claims = _load(tmp_path, _text(metric, test))
        except ArtifactError as err:
            assert holds != {"number"} or "efficiency" in metric, f"{metric}: {err}"
            continue
        assert holds == {"number"}, metric
        loaded += 1
        for row in checker.evaluate(full, claims)["claims"][0]["checks"]:
            assert "not a number" not in row["reason"], (metric, row["reason"])
            if row["verdict"] in (PASS, FAIL) and test == RANGE:
                value = row["measured"][metric]
                assert isinstance(value, (int, float)) and not isinstance(value, bool), (metric, value)
    assert loaded > 100


@pytest.mark.parametrize(
    "metric,value",
    [("traced.tracer", '"torch"'), ("traced.gpu.allreduce_own_stream", "true"), ("traced.sanity.trace_complete", "true")],
)
def test_equals_still_takes_flags_and_strings(tmp_path, metric, value):
    (claim,) = _load(tmp_path, _text(metric, EQUALS, value))
    assert claim.checks[0].test == "equals"


def test_a_check_built_around_the_loader_is_invalid_not_fail(full):
    """Evaluation itself never turns a value of the wrong kind into a measured FAIL."""
    check = Check("n", "the tracer", "traced.tracer", "range", "why", WorldSizes(explicit=(4,)), lo=0)
    claim = Claim("X1", "s", WorldSizes(explicit=(4,)), (check,))
    (row,) = checker.evaluate(full, [claim])["claims"][0]["checks"]
    assert row["verdict"] == INVALID and row["code"] == "not_a_number", row


# ---- item 9: a top test names an activity the ranking can hold ----------------------------------


@pytest.mark.parametrize(
    "activity,hint",
    [
        ("nccl:Allreduce", "did you mean 'nccl:AllReduce'?"),
        ("nccl:Nothing", ""),
        ("AllReduce", "did you mean 'nccl:AllReduce'?"),
        ("nccl:AllReduce(Int)", "did you mean 'nccl:AllReduce(int)'?"),
        ("GEMM", ""),  # a kernel class: traced.gpu.kernel_classes, not the ranking
        ("nvjet_sm90_tst_192x96_64x5_1x2_h_bz_NTT", ""),
    ],
)
def test_an_unknown_activity_is_refused_listing_the_known_ones(tmp_path, activity, hint):
    message = _refused(tmp_path, _text("traced.gpu.ranking", TOP, activity=activity))
    assert f"claim X1, check 'n': unknown activity {activity!r}" in message
    assert hint in message and "nccl:AllReduce, nccl:AllReduce(int), " in message and "nccl:Broadcast" in message


def test_the_tester_s_misspelt_activity_exits_2_not_1(tmp_path, full, capsys):
    (tmp_path / "metrics.json").write_text(json.dumps(full))
    (tmp_path / "claims.toml").write_text(_text("traced.gpu.ranking", TOP, activity="nccl:Nothing"))
    assert cli_main(["check", str(tmp_path), "--expected", str(tmp_path / "claims.toml"), "--out", str(tmp_path / "v")]) == 2
    assert "unknown activity 'nccl:Nothing'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kernel,collective",
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", None),
        ("ncclDevKernel_AllReduce_Sum_u32_RING_LL", None),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", None),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", None),
        ("ncclDevKernel_AllGather_RING_LL", None),
        ("ncclDevKernel_SendRecv", None),
        ("ncclDevKernel_Generic_4", "_allgather_base"),
        ("ncclDevKernel_Generic_4", "barrier"),
        ("ncclDevKernel_Generic_4", None),
    ],
)
def test_every_name_the_ranking_gives_an_nccl_kernel_is_known(tmp_path, full, kernel, collective):
    from dnabert_scaling.traces.classify import normalize_collective

    name = nccl_activity(kernel, collective_from_name(kernel) or normalize_collective(collective))
    assert name in RANKED_ACTIVITIES
    (claim,) = _load(tmp_path, _text("traced.gpu.ranking", TOP, activity=name))
    assert claim.checks[0].activity == name


def test_the_shipped_ranking_uses_only_known_nccl_names():
    for metrics in (ROOT / "expected" / "reference-results").glob("*/metrics.json"):
        for entry in json.loads(metrics.read_text())["world_sizes"].values():
            for row in ((entry.get("traced") or {}).get("gpu") or {}).get("ranking") or []:
                if row["kind"] == "nccl":
                    assert row["activity"] in RANKED_ACTIVITIES, (metrics, row["activity"])


# ---- item 17: ids and names are labels; a byte order mark is named ------------------------------


@pytest.mark.parametrize(
    "raw,shown",
    [
        ('"C1\\nC2"', "'C1\\nC2'"),
        ('"<b>C1</b>"', "'<b>C1</b>'"),
        ('"C 1"', "'C 1'"),
        ('"C1\\u0000"', "'C1\\x00'"),
        ('"Ç1"', "'Ç1'"),
    ],
)
def test_a_claim_id_that_is_not_a_label_is_refused(tmp_path, raw, shown):
    message = _refused(tmp_path, _text().replace('id = "X1"', f"id = {raw}"))
    assert f"claim #1: id {shown} must be one or more letters, digits, '_', '.' or '-'" in message


@pytest.mark.parametrize("raw", ['"a b"', '"n\\nm"', '"<i>n</i>"', '""', "5", "true"])
def test_a_check_name_that_is_not_a_label_is_refused(tmp_path, raw):
    message = _refused(tmp_path, _text().replace('name = "n"', f"name = {raw}"))
    assert "claim X1, check 1: name " in message and "must be one or more letters" in message


@pytest.mark.parametrize("label", ["C1", "H2.a-b_c", "7"])
def test_plain_labels_load(tmp_path, label):
    (claim,) = _load(tmp_path, _text().replace('id = "X1"', f'id = "{label}"').replace('name = "n"', f'name = "{label}"'))
    assert claim.id == label and claim.checks[0].name == label


def test_an_equals_string_with_a_line_break_is_refused(tmp_path):
    assert "holds a line break" in _refused(tmp_path, _text("traced.tracer", EQUALS, '"torch\\nx"'))


def test_a_title_is_one_line_and_a_string(tmp_path, full):
    (claim,) = _load(tmp_path, _text().replace('title = "A claim"', 'title = """A\n  claim"""'))
    assert claim.title == "A claim"
    table = checker.format_table(checker.evaluate(full, [claim]))
    assert any(line.startswith("X1") and line.endswith("A claim") for line in table.splitlines())
    assert "title must be a string, not 5" in _refused(tmp_path, _text().replace('title = "A claim"', "title = 5"))


def test_a_byte_order_mark_is_named(tmp_path, full, capsys):
    message = _refused(tmp_path, "\ufeff" + _text())
    assert "not valid TOML: the file starts with a UTF-8 byte order mark (BOM)" in message
    assert "save it as UTF-8 without a BOM" in message
    (tmp_path / "metrics.json").write_text(json.dumps(full))
    assert cli_main(["check", str(tmp_path), "--expected", str(tmp_path / "claims.toml"), "--out", str(tmp_path / "v")]) == 2
    assert "byte order mark" in capsys.readouterr().err
    with pytest.raises(ArtifactError, match="byte order mark"):
        checker.load_sanity_bounds(tmp_path / "claims.toml")


def test_the_shipped_claims_file_still_loads():
    claims = checker.load_claims(ROOT / "expected" / "claims.toml")
    assert [c.id for c in claims] == ["C1", "C2", "C3", "C4", "C5", "C6"]


@pytest.mark.parametrize("field", ["title", "statement"])
@pytest.mark.parametrize(
    "text, said", [("C1 \\u001b[31mred", "U+001B"), ("C1 \\u202eevil", "U+202E"), ("a\\u200bb", "U+200B"), ("\\u3164", "U+3164")]
)
def test_a_title_or_statement_with_hidden_characters_is_refused(tmp_path, field, text, said):
    """A title or statement is printed in verdicts.txt and on the terminal: an ANSI escape or a bidi override there
    would rewrite what a reader sees. The message names the code point, never the character."""
    src = (ROOT / "expected" / "claims.toml").read_text()
    rewritten = re.sub(rf'^{field} = "', lambda m: f"{m.group(0)}{text} ", src, count=1, flags=re.M)  # the first claim's
    assert rewritten != src, f'the shipped claims file has no {field} = "..." line to rewrite'
    path = tmp_path / "claims.toml"
    path.write_text(rewritten)
    with pytest.raises(ArtifactError, match=re.escape(f"{field} holds {said} at character")):
        checker.load_claims(path)
