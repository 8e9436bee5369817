"""The rehearsal of the multi-GPU study on fewer GPUs (issue 22): what a rank records of its
placement and of NCCL's transports, the rehearsal's NCCL set-up, ``sweep --rehearse`` and
``scripts/reference_run.sh`` end to end on the CPU."""

import argparse
import json
import subprocess
import tarfile

import pytest

from conftest import PYTHON, ROOT
from dnabert_scaling.run.sweep.rehearsal import REHEARSAL_STEPS, REHEARSAL_WARMUP, rehearsal_options
from dnabert_scaling.layout import NCCL_LOG
from dnabert_scaling.run.train.placement import (
    gpu_identity,
    nccl_environment,
    nccl_transports,
    rehearsal_host_id,
    uuid_text,
)

# Lines as NCCL 2.2x writes them with NCCL_DEBUG=INFO (the channel lines of src/transport/*.cc).
NCCL_SOCKET_LOG = """\
h200:1234:1300 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>
h200:1234:1300 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>
h200:1234:1300 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0
h200:1234:1300 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/Socket/0
h200:1234:1300 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0
"""
NCCL_NODE_LOG = """\
n1:77:90 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read
n1:77:90 [3] NCCL INFO Channel 01 : 3[3] -> 2[2] via SHM/direct/direct
n1:77:90 [3] NCCL INFO Channel 02/0 : 3[3] -> 8[0] [send] via NET/IB/0/GDRDMA
"""


def test_transports_from_an_nccl_log(tmp_path):
    log = tmp_path / NCCL_LOG
    log.write_text(NCCL_SOCKET_LOG)
    assert nccl_transports(log) == ["NET/Socket"]
    log.write_text(NCCL_NODE_LOG)
    assert nccl_transports(log) == ["NET/IB", "P2P", "SHM"]
    assert nccl_transports(tmp_path / "absent.log") == []


def test_rehearsal_environment_gives_each_rank_its_own_host(tmp_path):
    env0 = nccl_environment(0, tmp_path / "rank0" / NCCL_LOG, True, env={})
    env1 = nccl_environment(1, tmp_path / "rank1" / NCCL_LOG, True, env={})
    assert env0["NCCL_HOSTID"] != env1["NCCL_HOSTID"] == rehearsal_host_id(1)
    assert env0["NCCL_SOCKET_IFNAME"] == "lo" and env0["NCCL_IB_DISABLE"] == "1"
    assert env0["NCCL_DEBUG"] == "INFO" and env0["NCCL_DEBUG_FILE"] == str(tmp_path / "rank0" / NCCL_LOG)
    assert "INIT" in env0["NCCL_DEBUG_SUBSYS"].split(",")
    # a study run: no host id of its own; the user's own NCCL logging is left alone
    plain = nccl_environment(0, tmp_path / "rank0" / NCCL_LOG, False, env={"NCCL_DEBUG": "WARN"})
    assert plain == {}
    assert "NCCL_HOSTID" not in nccl_environment(0, None, False, env={})


def test_gpu_uuid_text():
    class Uuid:  # torch's _CUuuid: 16 bytes; its repr differs per process and must never be taken
        bytes = bytes(range(16))

    assert uuid_text(Uuid()) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert uuid_text("GPU-5C1A0B2E-1111-2222-3333-444455556666") == "5c1a0b2e-1111-2222-3333-444455556666"
    assert uuid_text(object()) is None and uuid_text(None) is None


def test_placement_of_a_cpu_rank():
    import torch

    rec = gpu_identity(torch.device("cpu"), env={"CUDA_VISIBLE_DEVICES": "3", "NCCL_HOSTID": "x"})
    assert rec["device_type"] == "cpu" and rec["gpu_uuid"] is None
    assert rec["cuda_visible_devices"] == "3" and rec["nccl_hostid"] == "x" and rec["host"]


def test_sweep_rehearsal_options():
    args = argparse.Namespace(executor="local", repeats=None, baseline_no_ddp=True)
    train, record = rehearsal_options(args, ["--model", "tiny"])
    assert train == ["--model", "tiny", "--rehearse", "--steps", str(REHEARSAL_STEPS), "--warmup-steps", str(REHEARSAL_WARMUP)]
    assert args.repeats == 0 and args.baseline_no_ddp is False and record["kind"] == "rehearsal"
    args = argparse.Namespace(executor="local", repeats=None, baseline_no_ddp=True)
    train, _ = rehearsal_options(args, ["--steps", "3", "--warmup-steps=1"])
    assert train == ["--steps", "3", "--warmup-steps=1", "--rehearse"]
    from dnabert_scaling.errors import ArtifactError

    with pytest.raises(ArtifactError, match="--executor local"):
        rehearsal_options(argparse.Namespace(executor="slurm", repeats=None, baseline_no_ddp=True), [])
    with pytest.raises(ArtifactError, match="--repeats 2 --rehearse: a rehearsal runs no untraced throughput runs"):
        rehearsal_options(argparse.Namespace(executor="local", repeats=2, baseline_no_ddp=True), [])


def _failed_runs(out) -> str:
    """What a failed run of the sweep left: its manifest's message, each rank's error.txt and the
    launcher log's tail (a failure of this test must say why)."""
    text = []
    for manifest in sorted(out.glob("sweep-*/ws*/manifest.json")):
        record = json.loads(manifest.read_text())
        if record.get("status") == "ok":
            continue
        run = manifest.parent
        text.append(f"\n--- {run.name}: {record.get('status')} rc={record.get('returncode')}: {record.get('message')}")
        for err in sorted(run.glob("rank*/error.txt")):
            text.append(f"--- {err.relative_to(run)}:\n{err.read_text()[-2000:]}")
        log = run / "logs" / "launcher.log"
        if log.is_file():
            text.append(f"--- logs/launcher.log (tail):\n{log.read_text()[-2000:]}")
    return "\n".join(text)


@pytest.mark.slow
def test_reference_run_rehearsal_on_the_cpu(tmp_path):
    """The evidence script end to end without a GPU: a rehearsal sweep at world sizes 1 and 2,
    packed as sets ready for expected/reference/ and as logs; the set analyses as a rehearsal."""
    pack, out = tmp_path / "pack", tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "reference_run.sh"), "--device", "cpu", "--model", "tiny", "--rehearse",
         "--tracer", "torch:1,2", "--steps", "3", "--warmup", "1", "--budget", "400", "--pack", str(pack), str(out)],
        capture_output=True, text=True, timeout=900, env={**__import__("os").environ, "PYTHON": PYTHON},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:] + _failed_runs(out)
    assert sorted(p.name for p in pack.iterdir()) == ["ref.log", "reference-set-rehearsal.tar.xz", "run-logs.tar.xz"]
    sets = tmp_path / "sets"
    with tarfile.open(pack / "reference-set-rehearsal.tar.xz") as tar:
        assert {n.split("/")[1] for n in tar.getnames() if "/" in n} == {"h200-rehearsal"}
        tar.extractall(sets, filter="data")
    ref = sets / "h200-rehearsal"
    assert (ref / "IMPORT.json").is_file() and (ref / "busbw-ws2.json").is_file()
    sweep = json.loads((ref / "sweep.json").read_text())
    assert sweep["rehearsal"] is True and sweep["repeats"] == 0 and sweep["fallbacks"][0]["kind"] == "rehearsal"
    assert sorted(p.name for p in ref.glob("ws*")) == ["ws1-torch-r0", "ws2-torch-r0"]
    summary = json.loads((ref / "ws2-torch-r0" / "summary.json").read_text())
    assert summary["rehearsal"] is True
    assert [r["placement"]["rehearsal"] for r in summary["ranks"]] == [True, True]
    assert any(f.get("kind") == "rehearsal" for f in summary["fallbacks"])
    with tarfile.open(pack / "run-logs.tar.xz") as tar:
        names = tar.getnames()
    assert "./sweep-rehearsal/ws2-torch-r0/rank1/summary.json" in names
    assert not any("/traces/" in n for n in names) and "./nvidia-smi.csv" in names
    results = tmp_path / "results"
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "analyze", str(ref), "--out", str(results)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = json.loads((results / "metrics.json").read_text())
    assert any(f.get("kind") == "rehearsal" for f in metrics["fallbacks"])


def test_reference_run_refuses_bad_options(tmp_path):
    for args, message in [
        (["--tracer", "nsys", str(tmp_path)], "the tracer must be torch or scorep"),
        (["--steps", "many", str(tmp_path)], "not a whole number"),
        (["--rehearse", "--repeats", "2", str(tmp_path / "o")], "--repeats 2 --rehearse: a rehearsal runs no untraced"),
        (["--repeats", "0", "--device", "cpu", str(tmp_path / "o")], "--repeats must be a whole number within 1..1000"),
        (["--repeats", "", str(tmp_path / "o")], "--repeats needs a value, not an empty one"),
        ([str(tmp_path / "o"), "--repeats"], "--repeats needs a value"),
        (["--tracer", "scorep", "--kit", str(tmp_path / "nokit"), "--device", "cpu", str(tmp_path / "o")], "Score-P kit"),
    ]:
        proc = subprocess.run(["bash", str(ROOT / "scripts" / "reference_run.sh"), *args], capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize(
    "gpus, expected",
    [
        (0, {"smoke": None}),
        (1, {"gpu": "1", "rehearsal": "1,2,4,8"}),
        (2, {"gpu": "1,2", "rehearsal": "1,4,8"}),
        (8, {"gpu": "1,2,4,8"}),
    ],
)
def test_reproduce_rehearses_the_world_sizes_beyond_the_gpus(monkeypatch, tmp_path, gpus, expected):
    import importlib.util

    spec = importlib.util.spec_from_file_location("reproduce_under_test", ROOT / "scripts" / "reproduce.py")
    reproduce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reproduce)
    monkeypatch.setattr(reproduce, "gpus_here", lambda: gpus)
    monkeypatch.setattr(reproduce, "slurm_gpus", lambda: (False, "no SLURM commands on PATH"))
    args = argparse.Namespace(cpu=False, executor="auto", gpus="auto", tracer="auto")
    sweeps, plan = reproduce.machine_sweeps(args, tmp_path)
    got = {name: (cmd[cmd.index("--gpus") + 1] if name != "smoke" else None) for name, cmd in sweeps}
    assert got == expected
    for name, cmd in sweeps:
        assert ("--rehearse" in cmd) == (name == "rehearsal")
    if "rehearsal" in expected:
        assert plan["rehearsed"] == [int(n) for n in expected["rehearsal"].split(",")[1:]]


@pytest.mark.parametrize("name", ["h200-rehearsal", "h200-rehearsal-scorep"])
def test_the_shipped_rehearsal_is_judged_as_a_rehearsal(name):
    """The one-GPU rehearsals recorded on the H200 (every rank on the one GPU, NCCL over loopback
    sockets), re-judged from their shipped metrics: C1 and C2's structure are judged and PASS;
    every check that rests on magnitudes is INVALID with the placement and the transport in its
    reason; nothing is PASS or FAIL on a magnitude."""
    from dnabert_scaling import checker

    claims_path = ROOT / "expected" / "claims.toml"
    metrics, _ = checker.load_metrics(ROOT / "expected" / "reference-results" / name)
    placement = metrics["world_sizes"]["2"]["traced"]["placement"]
    assert placement["shared_gpu"] is True and placement["rehearsal"] is True and placement["gpus"] == 1
    assert placement["transports"] == ["NET/Socket"]
    verdicts = checker.evaluate(metrics, checker.load_claims(claims_path), checker.load_sanity_bounds(claims_path))
    claims = {c["id"]: c for c in verdicts["claims"]}
    assert claims["C1"]["verdict"] == "PASS"
    structural = [ch for ch in claims["C2"]["checks"] if ch["name"] in ("allreduce_present", "own_stream")]
    assert structural and all(ch["verdict"] == "PASS" for ch in structural)
    measured = set(metrics["measured_world_sizes"])
    for cid in ("C2", "C3", "C4", "C5", "C6"):
        for ch in claims[cid]["checks"]:
            if ch in structural:
                continue
            sizes = ch["world_size"] if isinstance(ch["world_size"], list) else [ch["world_size"]]
            if any(ws in measured and ws > 1 for ws in sizes):
                assert ch["verdict"] == "INVALID", (cid, ch["name"], ch["verdict"], ch["reason"])
                assert "shared a GPU" in ch["reason"] and "NET/Socket" in ch["reason"], ch["reason"]
            else:
                assert ch["verdict"] == "NOT RUN", (cid, ch["name"], ch["verdict"])


def test_what_a_shared_gpu_means_is_said_once_after_the_last_world_size():
    """A claim judged INVALID at several world sizes names each world size's placement, and says what a
    shared GPU (or a rehearsal) means for the check once, after the last of them."""
    from dnabert_scaling import checker
    from dnabert_scaling.checker.placement import REHEARSAL_CONSEQUENCE, SHARED_GPU_CONSEQUENCE, said_once

    claims_path = ROOT / "expected" / "claims.toml"
    metrics, _ = checker.load_metrics(ROOT / "expected" / "reference-results" / "h200-rehearsal")
    verdicts = checker.evaluate(metrics, checker.load_claims(claims_path), checker.load_sanity_bounds(claims_path))
    reason = {c["id"]: c for c in verdicts["claims"]}["C2"]["reason"]
    assert all(f"world size {ws}: ranks shared a GPU ({ws} rank(s) on 1 GPU(s)" in reason for ws in (2, 4, 8)), reason
    assert reason.count(SHARED_GPU_CONSEQUENCE) == 1, reason
    assert reason.index(SHARED_GPU_CONSEQUENCE) > reason.index("world size 8: ranks shared a GPU"), reason
    # each kind of consequence once, at its own last place; other reasons untouched
    parts = ["world size 2: a" + REHEARSAL_CONSEQUENCE, "world size 2: b" + SHARED_GPU_CONSEQUENCE, "other",
             "world size 4: c" + REHEARSAL_CONSEQUENCE, "world size 4: d" + SHARED_GPU_CONSEQUENCE]  # fmt: skip
    assert said_once(parts) == (
        "world size 2: a; world size 2: b; other; world size 4: c"
        + REHEARSAL_CONSEQUENCE
        + "; world size 4: d"
        + SHARED_GPU_CONSEQUENCE
    )
    assert said_once(["only" + SHARED_GPU_CONSEQUENCE]) == "only" + SHARED_GPU_CONSEQUENCE
