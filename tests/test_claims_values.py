"""An ``equals`` check against a string its metric can never hold is refused when the claims file is
loaded (exit 2, naming the file, the claim and the problem), never judged a measured FAIL: a string
on a numeric metric, and a string outside the few named values a metric of that kind holds
(``metric_paths.known_strings``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnabert_scaling import checker
from dnabert_scaling.checker.metric_paths import FREE_TEXT, METRIC_TREE, known_strings, metric_kinds
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from reportfixtures import gpu_results

ROOT = Path(__file__).resolve().parents[1]

CLAIMS = """schema = "dnabert-scaling/claims/1"
[[claim]]
id = "X1"
statement = "Something measurable."
world_sizes = [4, 8]
check = [{name = "n", what = "a figure", metric = "METRIC", test = "equals", value = VALUE, rationale = "because"}]
"""


def _claims(tmp_path: Path, metric: str, value: str) -> Path:
    path = tmp_path / "claims.toml"
    path.write_text(CLAIMS.replace("METRIC", metric).replace("VALUE", value), encoding="utf-8")
    return path


def _string_leaves(node=METRIC_TREE, prefix=()):
    for key, child in node.items():
        if isinstance(child, dict):
            yield from _string_leaves(child, (*prefix, key))
        elif "string" in metric_kinds(".".join((*prefix, key))):
            yield ".".join((*prefix, key))


@pytest.fixture(scope="module")
def full():
    return gpu_results((1, 4, 8))[0]


def test_the_tester_s_equals_on_an_unknown_tracer_exits_2_not_1(tmp_path, full, capsys):
    (tmp_path / "metrics.json").write_text(json.dumps(full))
    claims = _claims(tmp_path, "traced.tracer", '"scorep2"')
    assert cli_main(["check", str(tmp_path), "--expected", str(claims), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert str(claims) in err and "claim X1, check 'n'" in err
    assert "value 'scorep2' is not a string traced.tracer can hold (did you mean 'scorep'?)" in err
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize(
    "metric,value,said",
    [
        ("traced.tracer", '"Torch"', "(did you mean 'torch'?); its strings: 'torch', 'scorep'"),
        ("traced.completeness.status", '"ok"', "its strings: 'complete', 'incomplete', 'unknown'"),
        ("traced.sanity.trace_complete", '"yes"', "its strings: 'unknown'"),
        ("traced.format", '"json"', "its strings: 'kineto', 'otf2'"),
        ("traced.device_type", '"gpu"', "its strings: 'cuda', 'cpu'"),
        ("throughput.source", '"traced"', "(did you mean 'trace'?); its strings: 'untraced', 'trace'"),
        ("traced.gpu.rank_skew.clock", '"global"', "its strings: 'common', 'per-rank step start'"),
        ("traced.measured_steps", '"8"', "value '8' is a string, but traced.measured_steps holds number"),
        ("efficiency", '"1.0"', "value '1.0' is a string, but efficiency holds number"),
    ],
)
def test_a_string_the_metric_never_holds_is_refused(tmp_path, metric, value, said):
    with pytest.raises(ArtifactError) as err:
        checker.load_claims(_claims(tmp_path, metric, value))
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'claims.toml'}: claim X1, check 'n': ") and "\n" not in message
    assert said in message and message.endswith("the check could never pass")


def test_every_string_metric_is_free_text_or_has_its_strings_named():
    """The whole class: a string-valued metric added to the schema is sorted into one or the other."""
    leaves = set(_string_leaves())
    named = {leaf for leaf in leaves if known_strings(leaf) is not None}
    assert named.isdisjoint(FREE_TEXT)
    assert leaves == named | FREE_TEXT, sorted(leaves ^ (named | FREE_TEXT))


def test_every_named_string_loads_and_free_text_takes_any(tmp_path):
    for leaf in _string_leaves():
        for value in known_strings(leaf) or ("anything at all",):
            (claim,) = checker.load_claims(_claims(tmp_path, leaf, json.dumps(value)))
            assert claim.checks[0].value == value


def _strings_held(metrics: dict):
    for entry in metrics["world_sizes"].values():
        for leaf in _string_leaves():
            node = entry
            for part in leaf.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, str):
                yield leaf, node


def test_the_named_strings_cover_what_analyze_wrote():
    """The shipped results and the test fixtures hold only named strings: a claim on any of their
    values loads."""
    shipped = sorted((ROOT / "expected" / "reference-results").glob("*/metrics.json"))
    assert shipped
    sources = [json.loads(p.read_text()) for p in shipped] + [gpu_results((1, 2))[0], gpu_results((1, 4), tracer="torch")[0]]
    seen = 0
    for metrics in sources:
        for leaf, value in _strings_held(metrics):
            known = known_strings(leaf)
            assert known is None or value in known, (leaf, value)
            seen += known is not None
    assert seen > 50
