"""Generated bad inputs (issue 21): mutations of the shipped metrics, claims and a real Kineto
trace (types, deletions, duplications, relabelling, reordering, truncation), through the real
commands. Whatever the mutation: the command exits 0, 1 (check: a claim failed) or 2 (a clear
error), never with a traceback; no claim PASSes once the data it rests on was removed or made
into something that is not a measurement; and no input file changes.

``make test`` runs a few examples of each (derandomized: the same ones every time);
``make fuzz`` runs many more, random (DNABERT_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import math
import os
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cliprocess import cli_in_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "expected" / "reference-results" / "h200-b8"
CLAIMS = ROOT / "expected" / "claims.toml"
KINETO = ROOT / "expected" / "reference" / "h200-b8" / "ws1-torch-r0" / "traces" / "rank0.json.gz"

FUZZ = int(os.environ.get("DNABERT_FUZZ_EXAMPLES", "0"))
SETTINGS = settings(
    max_examples=FUZZ or 12,
    derandomize=not FUZZ,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)

# values no measurement is: other types, and numbers JSON allows but no clock or counter gives
ODD_VALUES = [None, True, False, 0, -1, 0.0, -0.0, 1e300, 2**70, math.nan, math.inf, -math.inf, "", "08", "x", [], {}]


# ---- mutations of a JSON document ------------------------------------------------------------


def _nodes(doc, path=()):
    """Every (path, value) below ``doc`` (the document itself excluded)."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield path + (k,), v
        yield from _nodes(v, path + (k,))


def _parent(doc, path):
    for k in path[:-1]:
        doc = doc[k]
    return doc


OPS = ("delete", "retype", "duplicate", "truncate", "reorder", "relabel")


@st.composite
def json_mutation(draw, doc, paths):
    """(op, path, mutated copy of doc)."""
    path = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(OPS))
    out = copy.deepcopy(doc)
    parent, key = _parent(out, path), path[-1]
    value = parent[key]
    if op == "delete":
        parent.pop(key)
    elif op == "retype":
        parent[key] = draw(st.sampled_from([v for v in ODD_VALUES if type(v) is not type(value) or v != value]))
    elif op == "duplicate" and isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        value.insert(i, copy.deepcopy(value[i]))
    elif op == "duplicate" and isinstance(parent, dict):
        parent[str(key) + "_copy"] = copy.deepcopy(value)
    elif op == "truncate" and isinstance(value, list):
        del value[draw(st.integers(0, len(value))) :]
    elif op == "truncate" and isinstance(value, str):
        parent[key] = value[: draw(st.integers(0, len(value)))]
    elif op == "reorder" and isinstance(value, list) and len(value) > 1:
        parent[key] = draw(st.permutations(value))
    elif op == "relabel" and isinstance(parent, dict):
        new = draw(st.sampled_from(["8", "4", "08", "0", "-1", "1.0", str(key).upper()]))
        parent[new] = parent.pop(key)
    else:
        parent[key] = None
        op = "retype"
    return op, path, out


def _sha(paths) -> dict[str, str]:
    out = {}
    for p in paths:
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
        for f in files:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def _verdicts(out: Path) -> dict[str, str]:
    data = json.loads((out / "verdicts.json").read_text())
    return {c["id"]: c["verdict"] for c in data["claims"]}


# ---- metrics.json --------------------------------------------------------------------------

METRICS = json.loads((SHIPPED / "metrics.json").read_text())
METRIC_PATHS = [p for p, _ in _nodes(METRICS)]
# what claim C1 (the only PASS of the shipped set) rests on: its value, and every object above it
C1_PATH = ("world_sizes", "1", "traced", "gpu", "nccl_kernels_per_step", "max")


def _rests_on(path, target) -> bool:
    return tuple(path) == tuple(target[: len(path)])


@SETTINGS
@given(data=st.data())
def test_mutated_metrics(tmp_path_factory, data):
    op, path, doc = data.draw(json_mutation(METRICS, METRIC_PATHS))
    tmp = tmp_path_factory.mktemp("m")
    (tmp / "metrics.json").write_text(json.dumps(doc))
    before = _sha([tmp / "metrics.json", CLAIMS])
    status, err = cli_in_process("check", tmp, "--expected", CLAIMS, "--out", tmp / "v")
    assert status in (0, 1, 2), err
    assert "Traceback" not in err
    assert _sha([tmp / "metrics.json", CLAIMS]) == before
    if status == 2:
        assert "error:" in err and "metrics.json" in err, err
        return
    verdicts = _verdicts(tmp / "v")
    if _rests_on(path, C1_PATH) and (op in ("delete", "relabel") or op == "retype"):
        value = _parent(doc, path).get(path[-1]) if isinstance(_parent(doc, path), dict) else None
        if not (op == "retype" and isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0):
            assert verdicts["C1"] != "PASS", f"{op} {path}: C1 passed without its data"


# ---- claims.toml ---------------------------------------------------------------------------

CLAIMS_LINES = CLAIMS.read_text().splitlines(keepends=True)
TOML_VALUES = ["nan", "inf", "-1", "0", "1e400", '"0"', "true", "[]", '"08"', "{}", '">=0"', "2.0"]


@st.composite
def claims_mutation(draw):
    lines = list(CLAIMS_LINES)
    i = draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(("delete", "duplicate", "revalue", "truncate", "swap")))
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "revalue" and "=" in lines[i]:
        key = lines[i].split("=", 1)[0]
        lines[i] = f"{key}= {draw(st.sampled_from(TOML_VALUES))}\n"
    elif op == "truncate":
        lines = lines[:i]
    else:
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


@SETTINGS
@given(text=claims_mutation())
def test_mutated_claims(tmp_path_factory, text):
    tmp = tmp_path_factory.mktemp("c")
    (tmp / "claims.toml").write_text(text)
    before = _sha([tmp / "claims.toml", SHIPPED / "metrics.json"])
    status, err = cli_in_process("check", SHIPPED, "--expected", tmp / "claims.toml", "--out", tmp / "v")
    assert status in (0, 1, 2), err
    assert "Traceback" not in err
    assert _sha([tmp / "claims.toml", SHIPPED / "metrics.json"]) == before
    if status == 2:
        assert "claims.toml" in err, err


# ---- a Kineto trace ------------------------------------------------------------------------


def _small_trace() -> dict:
    """The first two measured steps of a shipped H200 Kineto trace (rank 0 of world size 1), with
    its metadata: small enough to analyse in a fraction of a second."""
    doc = json.load(gzip.open(KINETO))
    steps = sorted(float(e["ts"]) for e in doc["traceEvents"] if e.get("name") == "ds:step")
    end = steps[2]
    doc["traceEvents"] = [e for e in doc["traceEvents"] if "ts" not in e or float(e["ts"]) < end]
    return doc


TRACE = _small_trace()
TRACE_PATHS = [p for p, _ in _nodes(TRACE) if len(p) <= 4]


def _whole_trace_mutations(doc: dict) -> dict[str, dict]:
    """Damage no single-value mutation makes: every GPU activity twice at the same instant, every
    kernel of zero length, metadata of the wrong type, nesting deeper than any trace."""
    gpu = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    out = {
        "twice": dict(doc, traceEvents=doc["traceEvents"] + copy.deepcopy(gpu)),
        "zero_length": dict(doc, traceEvents=[dict(e, dur=0) if e in gpu else e for e in doc["traceEvents"]]),
        "device_properties": dict(doc, deviceProperties=7),
        "distributed_info": dict(doc, distributedInfo=[1]),
    }
    deep: object = 1
    for _ in range(100_000):
        deep = [deep]
    out["deep"] = dict(doc, INFO=deep)
    return out


WHOLE = _whole_trace_mutations(TRACE)


def _write_trace(path: Path, doc) -> bool:
    try:
        path.write_text(json.dumps(doc))
    except RecursionError:  # Python's own writer gives up first: write the nesting by hand
        path.write_text('{"traceEvents": [], "x": ' + "[" * 100_000 + "1" + "]" * 100_000 + "}")
    return True


def _analyze_and_check(tmp: Path, trace: Path) -> None:
    before = _sha([trace])
    status, err = cli_in_process("summarize", trace)
    assert status in (0, 2) and "Traceback" not in err, err
    status, err = cli_in_process("analyze", "--world-size", "1", trace, "--out", tmp / "r")
    assert status in (0, 2) and "Traceback" not in err, err
    if status == 2:
        assert "error:" in err
    else:
        status, err = cli_in_process("check", tmp / "r", "--out", tmp / "r")
        assert status in (0, 1, 2) and "Traceback" not in err, err
    assert _sha([trace]) == before


@SETTINGS
@given(data=st.data())
def test_mutated_trace(tmp_path_factory, data):
    _, _, doc = data.draw(json_mutation(TRACE, TRACE_PATHS))
    tmp = tmp_path_factory.mktemp("t")
    _write_trace(tmp / "rank0.json", doc)
    _analyze_and_check(tmp, tmp / "rank0.json")


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_impossible_trace_is_refused(tmp_path, name):
    _write_trace(tmp_path / "rank0.json", WHOLE[name])
    status, err = cli_in_process("analyze", "--world-size", "1", tmp_path / "rank0.json", "--out", tmp_path / "r")
    assert "Traceback" not in err
    if name in ("twice", "zero_length", "deep"):
        assert status == 2 and "rank0.json" in err, err
    else:  # metadata of the wrong type is ignored, not trusted
        assert status == 0, err


def test_a_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "rank0.json"
    os.mkfifo(fifo)
    for argv in (("summarize", fifo), ("analyze", "--world-size", "1", fifo, "--out", tmp_path / "r")):
        status, err = cli_in_process(*argv)
        assert status == 2 and "not a regular file" in err, err


def test_the_unmutated_inputs_pass_through(tmp_path):
    """The fuzzed inputs as shipped: the mutations above start from inputs that work."""
    status, err = cli_in_process("check", SHIPPED, "--out", tmp_path / "v")
    assert status == 0, err
    assert _verdicts(tmp_path / "v")["C1"] == "PASS"
    _write_trace(tmp_path / "rank0.json", TRACE)
    _analyze_and_check(tmp_path, tmp_path / "rank0.json")
    assert (tmp_path / "r" / "metrics.json").is_file()


# ---- verdicts.json: the report shows only verdicts tied to its data --------------------------

REHEARSAL = ROOT / "expected" / "reference-results" / "h200-rehearsal"  # PASS, INVALID and their checks


def _verdict_words(verdicts: dict) -> list:
    return [(c.get("id"), c.get("verdict"), [ch.get("verdict") for ch in c.get("checks") or []]) for c in verdicts["claims"]]


@SETTINGS
@given(data=st.data())
def test_mutated_verdicts_are_never_presented(tmp_path_factory, data):
    """A verdicts.json mutated in any way (a verdict turned into PASS, claims deleted, duplicated,
    reordered, its sources stripped or retyped): what the report goes on to present (after
    ``check_where_needed``, the report's first step) is exactly what the metrics give against the
    claims file, and metrics.json and the claims file are unchanged."""
    import shutil

    from dnabert_scaling import checker
    from dnabert_scaling.report.build import check_where_needed

    tmp = tmp_path_factory.mktemp("verdicts")
    folder = tmp / "results"
    shutil.copytree(REHEARSAL, folder, ignore=shutil.ignore_patterns("tables"))
    doc = json.loads((folder / "verdicts.json").read_text())
    paths = [p for p, _ in _nodes(doc) if len(p) <= 4]
    op, path, mutated = data.draw(json_mutation(doc, paths))
    if data.draw(st.booleans()):  # the forger's move: every claim PASS, sources kept
        for c in mutated.get("claims") or [] if isinstance(mutated.get("claims"), list) else []:
            if isinstance(c, dict):
                c["verdict"] = "PASS"
    (folder / "verdicts.json").write_text(json.dumps(mutated))
    before = _sha([folder / "metrics.json", CLAIMS])
    metrics, _ = checker.load_metrics(folder)
    check_where_needed([(metrics, folder.resolve())], CLAIMS)
    shown, why = checker.read_verdicts(folder, metrics, CLAIMS)
    assert shown is not None, why
    fresh = checker.evaluate(metrics, checker.load_claims(CLAIMS), checker.load_sanity_bounds(CLAIMS))
    assert _verdict_words(shown) == _verdict_words(fresh), (op, path)
    assert _sha([folder / "metrics.json", CLAIMS]) == before
