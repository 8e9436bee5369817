"""One GPU per rank (issue 22): the placement of a traced run's ranks, from what each rank
recorded (or, for runs recorded before the GPU UUID was, from host, CUDA_VISIBLE_DEVICES and
device index), and the checker's rule: where ranks shared a GPU, the checks that rest on
magnitudes are INVALID with the placement in the reason, the structural ones are still judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnabert_scaling import checker
from dnabert_scaling.analysis.placement import placement_of
from dnabert_scaling.analysis.runs import load_run
from dnabert_scaling.checker import FAIL, INVALID, PASS
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.metrics_schema import Placement, validate_metrics
from reportfixtures import copy_metrics, gpu_results, set_metric

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_FILE = ROOT / "expected" / "claims.toml"
SIZES = (1, 2, 4, 8)


@pytest.fixture(scope="module")
def claims():
    return checker.load_claims(CLAIMS_FILE)


@pytest.fixture(scope="module")
def sweep():
    """A sweep at 1, 2, 4, 8 on which every claim holds (one GPU per rank)."""
    return gpu_results(SIZES)[0]


def rehearsal_placement(ws: int) -> dict:
    return Placement(
        ranks=ws, hosts=1, gpus=1, ranks_per_gpu=ws, shared_gpu=ws > 1, identity="uuid",
        transports=["NET/Socket"] if ws > 1 else [], rehearsal=True,
    ).to_json()  # fmt: skip


def own_gpus_placement(ws: int) -> dict:
    return Placement(
        ranks=ws, hosts=1, gpus=ws, ranks_per_gpu=1, shared_gpu=False, identity="uuid",
        transports=["P2P"] if ws > 1 else [], rehearsal=False,
    ).to_json()  # fmt: skip


def with_placement(metrics: dict, make) -> dict:
    """``metrics`` with ``make(ws)`` as each world size's placement, and a rehearsal fallback for the runs
    it places as a rehearsal (a rehearsal is in both or in neither, as analyze writes it)."""
    m = copy_metrics(metrics)
    for ws in SIZES:
        set_metric(m, ws, "traced.placement", make(ws))
    rehearsed = [e["traced"]["run"] for e in m["world_sizes"].values() if (e["traced"]["placement"] or {}).get("rehearsal")]
    m["fallbacks"] = [f for f in m.get("fallbacks") or [] if f.get("kind") != "rehearsal"]
    if rehearsed:
        m["fallbacks"].append(
            {"kind": "rehearsal", "what": "rehearsal", "used": "--rehearse", "reason": "test", "runs": rehearsed}
        )
    validate_metrics(m, Path("metrics.json"))  # the fixture has the shape analyze writes
    return m


def by_id(metrics, claims) -> dict[str, dict]:
    return {c["id"]: c for c in checker.evaluate(metrics, claims)["claims"]}


def test_a_rehearsal_is_judged_on_structure_only(sweep, claims):
    out = by_id(with_placement(sweep, rehearsal_placement), claims)
    assert out["C1"]["verdict"] == PASS
    c2 = {c["name"]: c for c in out["C2"]["checks"] if c["world_size"] == 8 or c["name"] == "share_grows"}
    assert c2["allreduce_present"]["verdict"] == PASS and c2["own_stream"]["verdict"] == PASS
    assert c2["share_grows"]["verdict"] == INVALID and c2["share_grows"]["code"] == "shared_gpu"
    assert "NET/Socket" in c2["own_stream"]["reason"]  # the transport beside every multi-GPU verdict
    assert c2["own_stream"]["placement"]["8"]["shared_gpu"] is True
    for cid in ("C3", "C4", "C5", "C6"):
        assert out[cid]["verdict"] == INVALID, out[cid]["reason"]
        multi = [c for c in out[cid]["checks"] if c["world_size"] not in (1, None)]
        assert multi and all(c["code"] == "shared_gpu" for c in multi)
        assert "ranks shared a GPU" in out[cid]["reason"] and "up to 8 ranks per GPU" in out[cid]["reason"]
        assert "a rehearsal" in out[cid]["reason"] and "NCCL transport NET/Socket" in out[cid]["reason"]
        assert not out[cid]["indicative"]  # a shared GPU stands in for no missing world size either


def test_eight_ranks_on_eight_gpus_get_no_invalid_from_placement(sweep, claims):
    out = by_id(with_placement(sweep, own_gpus_placement), claims)
    plain = by_id(sweep, claims)
    assert {k: v["verdict"] for k, v in out.items()} == {k: v["verdict"] for k, v in plain.items()}
    assert not any(c["code"] == "shared_gpu" for claim in out.values() for c in claim["checks"])
    c5 = [c for c in out["C5"]["checks"] if c["world_size"] == 8]
    assert c5 and all("NCCL transport P2P" in c["reason"] for c in c5)
    assert all(c["verdict"] == PASS for c in c5)


def test_an_unknown_placement_is_never_taken_for_one_gpu_per_rank(claims):
    """Bare traces (no run records) or a placement whose GPUs could not be told apart: several ranks
    that may have shared one GPU. The checks that rest on magnitudes are NOT RUN with the reason,
    never PASS; the structural ones are judged; world size 1 needs no placement."""
    bare = gpu_results(SIZES, placement=False)[0]
    unknown_gpus = with_placement(bare, lambda ws: {**own_gpus_placement(ws), "gpus": None, "identity": "unknown"})
    for m in (bare, unknown_gpus):
        out = by_id(m, claims)
        assert out["C1"]["verdict"] == PASS
        c2 = {(c["name"], c["world_size"]): c for c in out["C2"]["checks"] if isinstance(c["world_size"], int)}
        assert c2[("allreduce_present", 8)]["verdict"] == PASS and c2[("own_stream", 8)]["verdict"] == PASS
        for cid in ("C3", "C4", "C5", "C6"):
            assert out[cid]["verdict"] == "NOT RUN", out[cid]["reason"]
            multi = [c for c in out[cid]["checks"] if c["world_size"] not in (1, None)]
            assert multi and all(c["code"] == "placement_unknown" for c in multi)
            assert "whether each rank had a GPU of its own is unknown" in out[cid]["reason"]
    assert "no placement was recorded" in by_id(bare, claims)["C3"]["reason"]
    assert "could not tell its GPUs apart" in by_id(unknown_gpus, claims)["C3"]["reason"]


def test_shared_gpu_at_one_world_size_only(sweep, claims):
    m = with_placement(sweep, own_gpus_placement)
    set_metric(m, 4, "traced.placement", rehearsal_placement(4))
    out = by_id(m, claims)
    c5 = {c["world_size"]: c for c in out["C5"]["checks"] if c["name"] == "overlap"}
    assert c5[4]["verdict"] == INVALID and c5[8]["verdict"] == PASS and c5[2]["verdict"] == PASS
    assert out["C3"]["verdict"] == PASS  # world size 8 had a GPU per rank


def test_structure_is_still_judged_and_can_fail(sweep, claims):
    m = with_placement(sweep, rehearsal_placement)
    set_metric(m, 4, "traced.gpu.allreduce_own_stream", False)
    out = by_id(m, claims)
    own = next(c for c in out["C2"]["checks"] if c["name"] == "own_stream" and c["world_size"] == 4)
    assert own["verdict"] == FAIL and out["C2"]["verdict"] == FAIL


def test_rests_on_is_data_in_the_claims_file(claims, tmp_path):
    structural = {(c.id, k.name) for c in claims for k in c.checks if k.rests_on == "structure"}
    assert structural == {("C1", "nccl_kernels"), ("C2", "allreduce_present"), ("C2", "own_stream")}
    assert "one_gpu_per_rank" in checker.load_sanity_bounds(CLAIMS_FILE).rationale
    bad = tmp_path / "claims.toml"
    bad.write_text(CLAIMS_FILE.read_text().replace('  rests_on = "structure"\n', '  rests_on = "shape"\n', 1))
    with pytest.raises(ArtifactError, match="rests_on must be one of structure, magnitude"):
        checker.load_claims(bad)


# --- placement from the ranks' summaries -------------------------------------------------------


def write_run(root: Path, ranks: list[dict], *, rehearsal: bool = False, run_provenance: dict | None = None) -> Path:
    """A finished run folder whose rank summaries hold ``ranks`` (each merged into a base record)."""
    run = root / f"ws{len(ranks)}-torch-r0"
    gathered = []
    for r, extra in enumerate(ranks):
        record = {"status": "ok", "rank": r, "local_rank": r, "device": "cuda:0", **extra}
        (run / f"rank{r}").mkdir(parents=True)
        (run / f"rank{r}" / "summary.json").write_text(json.dumps(record))
        gathered.append({k: v for k, v in record.items() if k != "provenance"})
    summary = {
        "status": "ok", "world_size": len(ranks), "tracer": "torch", "device_type": "cuda", "rehearsal": rehearsal,
        "ranks": gathered, "provenance": run_provenance or {"host": "n1", "env": {}},
    }  # fmt: skip
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def old_rank(host: str, visible: str | None, device: str) -> dict:
    """A rank summary as written before placement was recorded: device, and its provenance."""
    return {"device": device, "provenance": {"host": host, "env": {"CUDA_VISIBLE_DEVICES": visible} if visible else {}}}


def test_old_runs_share_a_gpu_by_host_visible_devices_and_index(tmp_path):
    shared = placement_of(load_run(write_run(tmp_path / "a", [old_rank("n1", None, "cuda:0")] * 2)))
    assert shared == Placement(ranks=2, hosts=1, gpus=1, ranks_per_gpu=2, shared_gpu=True, identity="host+visible+index")
    own = placement_of(load_run(write_run(tmp_path / "b", [old_rank("n1", None, f"cuda:{i}") for i in range(4)])))
    assert (own.gpus, own.shared_gpu, own.identity) == (4, False, "host+visible+index")
    # the same index under different CUDA_VISIBLE_DEVICES (srun binding one GPU per task) or hosts: distinct GPUs
    visible = placement_of(load_run(write_run(tmp_path / "c", [old_rank("n1", str(i), "cuda:0") for i in range(2)])))
    assert (visible.gpus, visible.shared_gpu) == (2, False)
    hosts = placement_of(load_run(write_run(tmp_path / "d", [old_rank(f"n{i}", "0", "cuda:0") for i in range(2)])))
    assert (hosts.hosts, hosts.gpus, hosts.shared_gpu) == (2, 2, False)


def test_old_runs_without_the_rank_files_use_the_run_provenance(tmp_path):
    run = write_run(tmp_path, [old_rank("n1", None, "cuda:0")] * 2, run_provenance={"host": "n1", "env": {}})
    for r in range(2):
        (run / f"rank{r}" / "summary.json").unlink()
    p = placement_of(load_run(run))
    assert (p.gpus, p.shared_gpu, p.identity) == (1, True, "host+visible+index")


def new_rank(uuid: str, index: int = 0, transports=("NET/Socket",), rehearsal=True, hostid=None) -> dict:
    return {
        "device": f"cuda:{index}",
        "placement": {
            "host": "h200", "cuda_visible_devices": None, "device_type": "cuda", "device_index": index,
            "gpu_uuid": uuid, "pci_bus_id": "00000000:19:00.0", "gpu_name": "NVIDIA H200", "nccl_hostid": hostid,
            "rehearsal": rehearsal, "nccl_log": "nccl.log", "transports": list(transports),
        },
    }  # fmt: skip


def test_placement_by_uuid(tmp_path):
    same = "5c1a0b2e-1111-2222-3333-444455556666"
    ranks = [new_rank(same, hostid=f"h200-rehearsal-rank{r}") for r in range(8)]
    p = placement_of(load_run(write_run(tmp_path / "a", ranks, rehearsal=True)))
    assert p == Placement(
        ranks=8, hosts=1, gpus=1, ranks_per_gpu=8, shared_gpu=True, identity="uuid", transports=["NET/Socket"], rehearsal=True
    )
    # 8 distinct GPUs (one index each, NVLink): no sharing, whatever the indices
    ranks = [new_rank(f"{i:08x}-1111-2222-3333-444455556666", i, ("P2P", "SHM"), False) for i in range(8)]
    p = placement_of(load_run(write_run(tmp_path / "b", ranks)))
    assert (p.gpus, p.ranks_per_gpu, p.shared_gpu, p.transports, p.rehearsal) == (8, 1, False, ["P2P", "SHM"], False)


def test_placement_unknown_on_cpu_or_without_summaries(tmp_path):
    cpu = [{"device": "cpu", "placement": {"host": "vm", "device_type": "cpu", "device_index": None, "gpu_uuid": None}}]
    p = placement_of(load_run(write_run(tmp_path / "a", cpu * 2)))
    assert (p.ranks, p.gpus, p.shared_gpu, p.identity) == (2, None, None, "unknown")
    assert placement_of(None) is None


# --- predict compares with no rehearsal ---------------------------------------------------------


def test_predict_refuses_a_rehearsal_as_measured(tmp_path, sweep):
    from dnabert_scaling.analysis.predict_compare import measured_from_metrics, measured_from_trace
    from dnabert_scaling.metrics_schema import MetricsFile

    same = "5c1a0b2e-1111-2222-3333-444455556666"
    run = write_run(tmp_path, [new_rank(same) for _ in range(4)], rehearsal=True)
    with pytest.raises(ArtifactError, match="ranks shared a GPU"):
        measured_from_trace(run, profile=None)
    m = with_placement(sweep, lambda ws: rehearsal_placement(ws) if ws == 4 else own_gpus_placement(ws))
    measured = measured_from_metrics(MetricsFile.from_json(m, "", Path("metrics.json")))
    assert sorted(measured) == [2, 8]  # world size 4 shared a GPU: not compared
    assert measured[8]["placement"] == "8 rank(s) on 8 GPU(s), P2P"


# --- a rehearsal-shaped set, from traces to verdicts -----------------------------------------------


@pytest.mark.slow
def test_a_rehearsal_shaped_set_from_traces_to_verdicts(tmp_path):
    """Synthetic multi-rank Score-P traces (tools/synth) in run folders whose ranks all name one GPU
    UUID, as a rehearsal on one GPU writes them: analyze records the placement, check judges C1 and
    C2's structure and makes the magnitude claims INVALID (shared_gpu), with the placement in the reason."""
    from dnabert_scaling.cli import main
    from dnabert_scaling.tools.synth import BucketModel, write_bucket_run

    sweep = tmp_path / "sweep"
    same = "5c1a0b2e-1111-2222-3333-444455556666"
    for n in (1, 2, 4, 8):
        run = sweep / f"ws{n}-scorep-r0"
        write_bucket_run(run, n, BucketModel(alpha_ns=20_000, busbw_Bps=200e9, contention=1.1))
        ranks = [new_rank(same, transports=("NET/Socket",) if n > 1 else ()) for _ in range(n)]
        write_run(tmp_path / "tmpl", ranks, rehearsal=True)  # the rank summaries, then moved into place
        template = tmp_path / "tmpl" / f"ws{n}-torch-r0"
        summary = json.loads((template / "summary.json").read_text()) | {"tracer": "scorep"}
        (run / "summary.json").write_text(json.dumps(summary))
        for r in range(n):
            (run / f"rank{r}").mkdir()
            (template / f"rank{r}" / "summary.json").rename(run / f"rank{r}" / "summary.json")
    results = tmp_path / "results"
    assert main(["analyze", str(sweep), "--out", str(results)]) == 0
    metrics = json.loads((results / "metrics.json").read_text())
    p8 = metrics["world_sizes"]["8"]["traced"]["placement"]
    assert (p8["gpus"], p8["ranks_per_gpu"], p8["shared_gpu"], p8["transports"], p8["rehearsal"]) == (
        1, 8, True, ["NET/Socket"], True
    )  # fmt: skip
    main(["check", str(results), "--expected", str(CLAIMS_FILE), "--quiet"])
    out = {c["id"]: c for c in json.loads((results / "verdicts.json").read_text())["claims"]}
    structural = [c for c in out["C2"]["checks"] if c["name"] in ("allreduce_present", "own_stream")]
    assert structural and all(c["verdict"] == PASS for c in structural), [c["reason"] for c in structural]
    for cid in ("C3", "C4", "C5", "C6"):
        assert out[cid]["verdict"] == INVALID and "ranks shared a GPU" in out[cid]["reason"], out[cid]["reason"]
    assert out["C1"]["verdict"] == PASS  # world size 1: one rank on its GPU, no NCCL kernel
    assert out["C2"]["verdict"] == INVALID  # its share_grows rests on magnitudes
    assert next(c for c in out["C2"]["checks"] if c["name"] == "share_grows")["code"] == "shared_gpu"
