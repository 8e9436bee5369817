"""Bad values inside traces and trace manifests: each is exit status 2 and a message naming the file
and the problem (the event's index, the manifest entry), never a traceback or a silently wrong table."""

import gzip
import json
import shutil

import pytest

from conftest import DATA
from dnabert_scaling.analysis.runs import load_trace_manifest
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.traces import convert as convert_mod
from dnabert_scaling.traces.loader import TRACED_BY, recorded_by

A100_RANK0 = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
A100 = [A100_RANK0, A100_RANK0.with_name("rank1.json.gz")]
SCOREP = DATA / "traces" / "scorep-cuda-2rank"


def _refused(capsys, argv, *needles):
    """``argv`` exits 2 with one error line naming every needle, and no traceback."""
    rc = cli_main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and "error: " in err, err
    for needle in needles:
        assert str(needle) in err, (needle, err)
    return err


# ---- Kineto events --------------------------------------------------------------------------------


def _doc():
    """One rank, one stream: a phase range, a launch and the kernel it launched (index 2)."""
    return {
        "distributedInfo": {"rank": 0, "world_size": 1},
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ds:step", "pid": 9, "tid": 9, "ts": 1.0, "dur": 50.0},
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 9,
                "tid": 9,
                "ts": 2.0,
                "dur": 3.0,
                "args": {"correlation": 11},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "ampere_sgemm_128x64_tn",
                "pid": 0,
                "tid": 7,
                "ts": 6.5,
                "dur": 20.25,
                "args": {"device": 0, "stream": 7, "correlation": 11},
            },
        ],
    }


def _write(tmp_path, doc, raw=None):
    path = tmp_path / "rank0.json"
    path.write_text(raw if raw is not None else json.dumps(doc))
    return path


def test_good_synthetic_trace_reads(tmp_path, capsys):
    assert cli_main(["summarize", str(_write(tmp_path, _doc()))]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("value", [["kernel"], {}], ids=["list", "object"])
def test_cat_of_wrong_type_in_the_shipped_trace(tmp_path, capsys, value):
    doc = json.load(gzip.open(A100_RANK0))
    i = next(k for k, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel")
    doc["traceEvents"][i]["cat"] = value
    path = tmp_path / "rank0.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    err = _refused(capsys, ["summarize", path], path, f"trace event {i} of traceEvents", "'cat' is", "not a string")
    assert "unhashable" not in err


# (event index, field, value, what the message says); "args.x" sets a key of the event's args
EVENT_CASES = [
    (2, "cat", ["kernel"], "'cat' is a list"),
    (2, "cat", 3, "'cat' is the number 3, not a string"),
    (2, "ph", ["X"], "'ph' is a list"),
    (2, "name", ["k"], "'name' is a list"),
    (2, "name", None, "'name' is null, not a string"),
    (0, "name", 5, "'name' is the number 5, not a string"),
    (2, "ts", "6.5", "'ts' is the string '6.5', not a number of microseconds"),
    (2, "ts", None, "'ts' is null"),
    (2, "ts", "<drop>", "'ts' is missing"),
    (2, "dur", True, "'dur' is true, not a number of microseconds"),
    (2, "dur", "<drop>", "'dur' is missing"),
    (1, "dur", [3], "'dur' is a list"),
    (2, "ts", 1e300, "'ts' is not a time any clock gives"),
    (2, "args", [], "'args' is a list ([]), not an object"),
    (2, "args.correlation", "11", "args.correlation is the string '11', not an integer >= 0"),
    (2, "args.correlation", 11.5, "args.correlation is the number 11.5"),
    (1, "args.correlation", True, "args.correlation is true"),
    (2, "args.stream", 7.0, "args.stream is the number 7.0, not an integer >= 0"),
    (2, "args.stream", 2**70, "args.stream is the number"),
    (2, "args.device", -1, "args.device is the number -1, not an integer >= 0"),
    (2, "args.device", {}, "args.device is an object"),
    (2, "pid", [0], "'pid' is a list ([0]), not an integer or string"),
    (2, "tid", 7.5, "'tid' is the number 7.5"),
    (0, "tid", True, "'tid' is true"),
]


@pytest.mark.parametrize("index,field,value,message", EVENT_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]!r}" for c in EVENT_CASES])
def test_event_field_of_wrong_type(tmp_path, capsys, index, field, value, message):
    doc = _doc()
    event = doc["traceEvents"][index]
    target, key = (event["args"], field[5:]) if field.startswith("args.") else (event, field)
    if value == "<drop>":
        del target[key]
    else:
        target[key] = value
    path = _write(tmp_path, doc)
    _refused(capsys, ["summarize", path], path, f"trace event {index} of traceEvents", message)


def test_ts_with_an_exponent_no_decimal_can_hold(tmp_path, capsys):
    raw = json.dumps(_doc()).replace('"ts": 6.5', '"ts": 1e999999999')
    path = _write(tmp_path, None, raw)
    _refused(capsys, ["summarize", path], path, "trace event 2 of traceEvents", "'ts' is not a time any clock gives")


def test_nan_is_refused_for_the_file(tmp_path, capsys):
    raw = json.dumps(_doc()).replace('"dur": 20.25', '"dur": NaN')
    path = _write(tmp_path, None, raw)
    _refused(capsys, ["summarize", path], path, "NaN is not a number")


@pytest.mark.parametrize("key,value", [("args.Collective name", ["AllReduce"]), ("args.dtype", 4), ("args.In msg nelems", "8")])
def test_nccl_arguments_of_wrong_type(tmp_path, capsys, key, value):
    doc = _doc()
    event = doc["traceEvents"][2]
    event["name"] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
    event["args"].update({"Collective name": "allreduce", "In msg nelems": 8, "dtype": "Float"})
    event["args"][key[5:]] = value
    path = _write(tmp_path, doc)
    _refused(capsys, ["summarize", path], path, "trace event 2 of traceEvents", f"args.{key[5:]} is")


@pytest.mark.parametrize("value", ["1700000000", 1.5, True, [1]])
def test_base_time_of_wrong_type(tmp_path, capsys, value):
    doc = _doc()
    doc["baseTimeNanoseconds"] = value
    path = _write(tmp_path, doc)
    _refused(capsys, ["summarize", path], path, "baseTimeNanoseconds is", "not an integer number of nanoseconds")


def test_unused_events_may_carry_anything(tmp_path, capsys):
    """Events the reader does not use (other phases and categories, no ``ph``) are not judged."""
    doc = _doc()
    doc["traceEvents"] += [
        {"ph": "i", "cat": ["x"], "name": {}, "ts": "soon"},
        {"ph": "X", "cat": "cpu_op", "name": ["aten::mm"], "ts": "1", "dur": True},
        {"name": "no ph at all", "ts": []},
    ]
    assert cli_main(["summarize", str(_write(tmp_path, doc))]) == 0, capsys.readouterr().err


# ---- trace manifests -------------------------------------------------------------------------------


def _manifest(tmp_path, body: str):
    path = tmp_path / "m.toml"
    path.write_text(body)
    return path


def _entry(traces, world_size="2", tracer=None, extra=""):
    lines = ["[[traced]]", f"world_size = {world_size}"]
    if tracer is not None:
        lines.append(f"tracer = {tracer}")
    lines.append("traces = [" + ", ".join(json.dumps(str(t)) for t in traces) + "]")
    return "\n".join(lines) + "\n" + extra


MANIFEST_CASES = [
    ("traced = [1]\n", "traced item 1 is 1, not a table"),
    ('traced = ["a.json"]\n', "traced item 1 is 'a.json', not a table"),
    (_entry(A100, world_size="true"), "world_size must be a positive integer, not true"),
    (_entry(A100, world_size="2.0"), "world_size must be a positive integer, not 2.0"),
    (_entry(A100, world_size='"2"'), "world_size must be a positive integer, not '2'"),
    (_entry(A100, extra="batch_size = true\n"), "batch_size must be a positive integer, not true"),
    (_entry(A100, tracer="5"), "tracer must be one of 'torch', 'scorep'"),
    (_entry(A100, tracer='["torch"]'), "not ['torch'], which is not a string"),
    (_entry(A100, tracer='"none"'), "not 'none' (\"none\" is a run without traces)"),
    (_entry(A100, tracer='"<b>x</b>"'), "not '<b>x</b>'"),
    (_entry(A100, tracer='"Torch"'), "not 'Torch'"),
    (_entry(A100, tracer='"scorep"'), "tracer 'scorep', but"),
    (_entry([SCOREP], world_size="2", tracer='"torch"'), "written by 'Score-P 1.4-trunk', recorded by tracer 'scorep'"),
    (_entry([""], world_size="1"), "traces must be a list of paths"),
    (_entry(["nowhere.json.gz"], world_size="1"), "nowhere.json.gz: trace file not found"),
    (_entry(["nowhere"], world_size="1"), "nowhere: trace not found"),
]


@pytest.mark.parametrize("body,message", MANIFEST_CASES, ids=[m for _, m in MANIFEST_CASES])
def test_bad_manifest_values(tmp_path, capsys, body, message):
    manifest = _manifest(tmp_path, body)
    _refused(capsys, ["analyze", "--trace-manifest", manifest, "--out", tmp_path / "out"], message)
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_manifest_tracer_names_the_manifest_and_the_trace(tmp_path, capsys):
    manifest = _manifest(tmp_path, _entry(A100, tracer='"scorep"'))
    _refused(
        capsys,
        ["analyze", "--trace-manifest", manifest, "--out", tmp_path / "out"],
        f"{manifest}: [[traced]] entry 1",
        A100_RANK0,
        "a Kineto trace (torch.profiler writes these)",
    )


def test_manifest_tracer_agrees_or_is_filled_in(tmp_path):
    (torch,) = load_trace_manifest(_manifest(tmp_path, _entry(A100, tracer='"torch"')))
    assert torch.tracer == "torch" and torch.world_size == 2 and torch.paths == A100
    (unnamed,) = load_trace_manifest(_manifest(tmp_path, _entry(A100)))
    assert unnamed.tracer == "torch"  # what the traces say, not None
    (scorep,) = load_trace_manifest(_manifest(tmp_path, _entry([SCOREP], tracer='"scorep"')))
    assert scorep.tracer == "scorep"
    assert load_trace_manifest(_manifest(tmp_path, _entry([SCOREP])))[0].tracer == "scorep"
    assert set(TRACED_BY) == {"torch", "scorep"}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The synthetic Kineto trace converted to OTF2 (``dnabert-scaling convert``)."""
    base = tmp_path_factory.mktemp("converted")
    src = _write(base, _doc())
    convert_mod.convert([src], base / "otf2", workers=1)
    return base / "otf2" / "scorep-rank0"


def test_converted_otf2_is_a_torch_trace(tmp_path, capsys, converted):
    """An OTF2 archive converted from Kineto was recorded by torch.profiler: tracer "torch" is
    right for it, "scorep" is not, and an undeclared tracer is filled in as "torch"."""
    assert convert_mod.CREATOR.split(" ")[0] == "dnabert-scaling-convert"
    assert recorded_by(converted)[0] == "torch"
    (entry,) = load_trace_manifest(_manifest(tmp_path, _entry([converted], world_size="1", tracer='"torch"')))
    assert entry.tracer == "torch"
    assert load_trace_manifest(_manifest(tmp_path, _entry([converted], world_size="1")))[0].tracer == "torch"
    manifest = _manifest(tmp_path, _entry([converted], world_size="1", tracer='"scorep"'))
    _refused(
        capsys,
        ["analyze", "--trace-manifest", manifest, "--out", tmp_path / "out"],
        "converted from a Kineto (torch.profiler) trace",
        "recorded by tracer 'torch'",
    )


def test_otf2_of_another_writer_takes_the_declared_tracer(tmp_path):
    """An archive whose creator is neither Score-P nor the converter says nothing about its tracer:
    the declared one stands (and none is filled in)."""
    from dnabert_scaling.tools.synth import write_study_trace

    write_study_trace(tmp_path / "run", ranks=1, steps=1, warmup=0, kernels_per_step=4, buckets=1, host_factor=1)
    (archive,) = sorted((tmp_path / "run").rglob("traces.otf2"))
    assert recorded_by(archive)[0] is None
    assert load_trace_manifest(_manifest(tmp_path, _entry([archive], world_size="1", tracer='"scorep"')))[0].tracer == "scorep"
    assert load_trace_manifest(_manifest(tmp_path, _entry([archive], world_size="1")))[0].tracer is None


# ---- OTF2 files of the wrong kind ------------------------------------------------------------------


@pytest.fixture
def scorep_copy(tmp_path):
    d = tmp_path / "exp"
    shutil.copytree(SCOREP, d)
    return d


def test_event_file_that_is_a_folder(scorep_copy, capsys):
    evt = scorep_copy / "traces" / "8589934592.evt"
    evt.unlink()
    evt.mkdir()
    err = _refused(
        capsys,
        ["summarize", scorep_copy],
        "event file traces/8589934592.evt of location 'CUDA[0:7]' (MPI Rank 0) is not a regular file: it is a folder",
    )
    assert "missing" not in err


def test_definition_file_that_is_a_folder(scorep_copy, capsys):
    (scorep_copy / "traces.def").unlink()
    (scorep_copy / "traces.def").mkdir()
    _refused(capsys, ["summarize", scorep_copy], "traces.def of this archive is not a regular file: it is a folder")


def test_event_directory_that_is_a_file(scorep_copy, capsys):
    shutil.rmtree(scorep_copy / "traces")
    (scorep_copy / "traces").write_text("")
    _refused(capsys, ["summarize", scorep_copy], "event directory traces/ of this archive is not a folder: it is a regular file")


def test_event_file_that_is_a_broken_link(scorep_copy, capsys):
    evt = scorep_copy / "traces" / "8589934592.evt"
    evt.unlink()
    evt.symlink_to(scorep_copy / "gone.evt")
    _refused(
        capsys,
        ["summarize", scorep_copy],
        "8589934592.evt: not a regular file inside a trace folder: it is a broken symbolic link",
    )


def test_missing_event_file_is_still_missing(scorep_copy, capsys):
    (scorep_copy / "traces" / "8589934592.evt").unlink()
    _refused(capsys, ["summarize", scorep_copy], "traces/8589934592.evt", "is missing")


@pytest.mark.parametrize("column, value, what", [("msg_bytes", -7, "byte count"), ("correlation", -2, "correlation id")])
def test_an_attribute_beyond_int64_names_the_location_not_a_traceback(tmp_path, capsys, column, value, what):
    """A uint64 attribute of 2**64-7 (written from -7) is no size or id a tracer writes; OTF2's undefined
    value (2**64-1) would be absent."""
    from dnabert_scaling.tools import synth
    from dnabert_scaling.traces.otf2_writer import write_tables

    s = synth.study_rank(0, steps=3, warmup=1, kernels_per_step=20, buckets=2, host_factor=0)
    gpu = s.gpu.copy()
    rows = gpu.index[gpu["category"] == "nccl"] if column == "msg_bytes" else gpu.index[:1]
    gpu.loc[rows, column] = value
    write_tables(gpu, s.host, tmp_path / "scorep-rank0", creator="Score-P 9.0")
    status = cli_main(["summarize", str(tmp_path / "scorep-rank0")])
    err = capsys.readouterr().err
    assert status == 2 and f"a {what} attribute of {2**64 + value}" in err and "Traceback" not in err, err


def test_a_clock_too_coarse_for_kernels_is_refused(tmp_path, capsys, monkeypatch):
    """A clock of 1 kHz quantises every kernel to 0 or 1 ms: refused naming the archive, not analysed
    into 'compute 0.00 ms'. Score-P's coarsest timer (1 MHz) is accepted."""
    from dnabert_scaling.tools import synth
    from dnabert_scaling.traces import otf2_writer

    s = synth.study_rank(0, steps=3, warmup=1, kernels_per_step=20, buckets=2, host_factor=0)
    real_init = otf2_writer.ScoreP9Writer.__init__
    for hz, status_wanted in ((1000, 2), (10**6, 0)):
        monkeypatch.setattr(
            otf2_writer.ScoreP9Writer,
            "__init__",
            lambda self, *a, hz=hz, **k: real_init(self, *a, **{**k, "timer_resolution": hz}),
        )
        target = tmp_path / f"hz{hz}" / "scorep-rank0"
        otf2_writer.write_tables(s.gpu, s.host, target, creator="Score-P 9.0")
        status = cli_main(["summarize", str(target)])
        err = capsys.readouterr().err
        assert status == status_wanted, err
        if status_wanted:
            assert "too coarse to time GPU kernels" in err and "Traceback" not in err


def test_a_kineto_rank_outside_its_world_size_is_refused(tmp_path, capsys):
    src = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": 5, "world_size": 2}
    bad = tmp_path / "rank5.json"
    bad.write_text(json.dumps(doc))
    status = cli_main(["summarize", str(bad)])
    err = capsys.readouterr().err
    assert status == 2 and "rank 5 of world size 2" in err and "Traceback" not in err, err
