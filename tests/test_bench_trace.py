"""scripts/bench_trace.py on the CPU: the paired ratios it reports, the child command lines, its
refusal without a GPU, and its lockstep protocol with real processes (the tiny model on the CPU:
the protocol, not the figures; the measurement itself needs CUDA)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import PYTHON, ROOT

SCRIPTS = ROOT / "scripts"


@pytest.fixture(scope="module")
def bt():
    """The benchmark's modules by their part (``bt.modes``, ``bt.lockstep``, ...), imported as the script's
    modules import each other: by name, with the scripts folder on the path."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    parts = ("modes", "child", "lockstep", "setup", "parent", "summary", "merge", "printout")
    return SimpleNamespace(**{part: importlib.import_module(f"bench_trace_{part}") for part in parts})


def _round(rnd, untraced, launch, micro=False, trace_bytes=None):
    procs = {"untraced": {"exit_status": 0}, "scorep-launch": {"exit_status": 0, "trace_bytes": trace_bytes}}
    return {
        "round": rnd,
        "micro": micro,
        "executed_steps": 10,
        "steps_ms": {"8x70": {"untraced": untraced, "scorep-launch": launch}},
        "processes": procs,
    }


def test_ratios_pair_each_step_with_the_untraced_step_of_its_turn(bt):
    rounds = [
        _round(0, [40.0, 50.0, 60.0], [44.0, 60.0, 66.0], trace_bytes=10_000),  # 1.1, 1.2, 1.1
        _round(1, [50.0, 50.0, 50.0], [75.0, 60.0, 65.0], micro=True, trace_bytes=99_000),  # 1.5, 1.2, 1.3
        _round(2, [10.0, 10.0, 10.0], [12.0, 14.0, 13.0], trace_bytes=12_000),  # 1.2, 1.4, 1.3
        _round(3, [10.0, 10.0], [99.0]),  # cut short: its turns are not paired
    ]
    counts = {"scorep-launch": {"launches": 200, "kernels": 199}}
    rows = {r["mode"]: r for r in bt.summary.summarise(rounds, ["8x70"], counts)}
    row = rows["scorep-launch"]
    assert row["rounds"] == 3 and row["pairs"] == 9
    assert row["ratio_median"] == pytest.approx(1.3) and row["ratio_min"] == pytest.approx(1.1)
    assert row["ratio_max"] == pytest.approx(1.3)
    assert row["pooled_ratio_median"] == pytest.approx(1.2)
    assert [r for r, _ in row["round_ratios"]] == [0, 1, 2]  # round 3, cut short, has none
    assert row["pooled_ratio_q1"] == pytest.approx(1.2) and row["pooled_ratio_q3"] == pytest.approx(1.3)
    # bytes per step only from the rounds without the per-call loops; the share from the count
    assert row["trace_bytes_per_step"] == pytest.approx(1100.0) and row["kernels_found_share"] == pytest.approx(0.995)
    assert rows["untraced"]["ratio_median"] == 1.0 and rows["untraced"]["trace_bytes_per_step"] is None


def test_per_call_figures_pool_the_turns_of_every_round_that_took_them(bt):
    rounds = [
        {"round": 0, "per_call": {"scorep-launch": [{"launch_ns": 10.0, "cuCtxGetDevice_ns": 1.0}, {"launch_ns": 12.0}]}},
        {"round": 1},  # no per-call loops in this round
        {"round": 2, "per_call": {"scorep-launch": [{"launch_ns": 20.0}], "untraced": [{"launch_ns": 5.0}]}},
    ]
    calls = {c["mode"]: c for c in bt.summary.per_call(rounds)}
    assert len(bt.summary.per_call(rounds)) == 2  # one entry per mode, never one per round
    launch = calls["scorep-launch"]
    assert launch["turns"] == 3 and launch["rounds"] == [0, 2] and launch["launch_ns_all"] == [10.0, 12.0, 20.0]
    assert launch["launch_ns"] == 12.0 and launch["cuCtxGetDevice_ns"] == 1.0
    assert calls["untraced"]["cuCtxGetDevice_ns"] is None and calls["untraced"]["launch_ns"] == 5.0


def test_score_p_messages_of_a_child_are_kept_once_each(bt, tmp_path):
    log = tmp_path / "child.log"
    log.write_text(
        "loading\n[Score-P] scorep_cupti_activity.c:352: Warning: [CUPTI Activity] Skipping ...\n"
        "other\n[Score-P] scorep_cupti_activity.c:352: Warning: [CUPTI Activity] Skipping ...\n"
        "  [Score-P] buffer advice\n"
    )
    assert bt.lockstep.scorep_messages(log) == [
        "[Score-P] scorep_cupti_activity.c:352: Warning: [CUPTI Activity] Skipping ...",
        "[Score-P] buffer advice",
    ]
    assert bt.lockstep.scorep_messages(tmp_path / "missing.log") == []


def test_turns_rotate_so_no_mode_always_goes_first(bt):
    modes = ["untraced", "torch", "scorep-launch"]
    firsts = {bt.lockstep.turn_order(modes, k)[0] for k in range(3)}
    assert firsts == set(modes) and sorted(bt.lockstep.turn_order(modes, 5)) == sorted(modes)


def test_child_command_lines(bt):
    args = argparse.Namespace(model="base", device="cuda", warmup=3, steps=12, step_sync="stream")
    plain = bt.lockstep.child_argv("torch", args)
    assert plain[1] == str(SCRIPTS / "bench_trace.py")  # a child runs the entry point, not the module that starts it
    assert "-m" not in plain and plain[plain.index("--child") + 1] == "torch"
    traced = bt.lockstep.child_argv("scorep-launch", args)
    assert traced[1:4] == ["-m", "scorep", "--cuda"] and "--noinstrumenter" in traced
    assert traced[traced.index("--step-sync") + 1] == "stream" and "--cpus" not in traced
    assert bt.modes.MODES["scorep-launch"] == ("driver,kernel,memcpy,references", "launch", {})
    assert bt.modes.MODES["scorep-nodriver"][0] == "kernel,memcpy"


def test_each_score_p_mode_gets_its_own_variables_and_no_stray_chunk(bt, tmp_path):
    outer = {"PATH": "/usr/bin", "SCOREP_CUDA_BUFFER_CHUNK": "1k", "SCOREP_CUDA_DRIVER_CALLBACKS": "all"}
    plain = bt.lockstep.child_env("untraced", tmp_path / "u", outer)
    assert plain == outer  # not under Score-P: the environment as it is
    launch = bt.lockstep.child_env("scorep-launch", tmp_path / "l", outer)
    assert launch["SCOREP_CUDA_DRIVER_CALLBACKS"] == "launch" and "SCOREP_CUDA_BUFFER_CHUNK" not in launch
    assert launch["SCOREP_CUDA_ENABLE"] == "driver,kernel,memcpy,references"
    chunk = bt.lockstep.child_env("scorep-launch-chunk4m", tmp_path / "c", outer)
    assert chunk["SCOREP_CUDA_BUFFER_CHUNK"] == "4M" and chunk["SCOREP_CUDA_DRIVER_CALLBACKS"] == "launch"
    assert chunk["SCOREP_EXPERIMENT_DIRECTORY"] != launch["SCOREP_EXPERIMENT_DIRECTORY"]
    nodriver = bt.lockstep.child_env("scorep-nodriver", tmp_path / "n", outer)
    assert nodriver["SCOREP_CUDA_ENABLE"] == "kernel,memcpy"
    settings = bt.modes.mode_settings(["untraced", "scorep-launch-chunk4m"])
    assert settings["untraced"] is None and settings["scorep-launch-chunk4m"]["SCOREP_CUDA_BUFFER_CHUNK"] == "4M"
    assert chunk["SCOREP_TIMER"] == "clock_gettime"  # the artifact's timer
    tsc = bt.lockstep.child_env("scorep-launch-chunk4m-tsc", tmp_path / "t", outer)
    assert {k: v for k, v in tsc.items() if k not in ("SCOREP_TIMER", "SCOREP_EXPERIMENT_DIRECTORY")} == {
        k: v for k, v in chunk.items() if k not in ("SCOREP_TIMER", "SCOREP_EXPERIMENT_DIRECTORY")
    }  # the default mode but for its timer
    assert tsc["SCOREP_TIMER"] == "tsc"
    # the two parts of a launch record: the default without its stream reference, and without writing
    norefs = bt.lockstep.child_env("scorep-launch-norefs-chunk4m", tmp_path / "nr", outer)
    assert norefs["SCOREP_CUDA_ENABLE"] == "driver,kernel,memcpy" and norefs["SCOREP_CUDA_DRIVER_CALLBACKS"] == "launch"
    assert norefs["SCOREP_CUDA_BUFFER_CHUNK"] == "4M" and norefs["SCOREP_ENABLE_TRACING"] == "true"
    notrace = bt.lockstep.child_env("scorep-launch-notrace-chunk4m", tmp_path / "nt", outer)
    assert notrace["SCOREP_ENABLE_TRACING"] == "false" and notrace["SCOREP_ENABLE_PROFILING"] == "false"
    assert {k: v for k, v in notrace.items() if k not in ("SCOREP_ENABLE_TRACING", "SCOREP_EXPERIMENT_DIRECTORY")} == {
        k: v for k, v in chunk.items() if k not in ("SCOREP_ENABLE_TRACING", "SCOREP_EXPERIMENT_DIRECTORY")
    }  # the default mode but for writing its trace


def test_refuses_without_a_gpu():
    import torch

    if torch.cuda.is_available():  # pragma: no cover - a GPU machine
        pytest.skip("a GPU is present")
    proc = subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "bench_trace.py"), "--rounds", "1"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr


def _bench(tmp_path, *extra):
    out = tmp_path / "bt.json"
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "artifact"), "TMPDIR": str(tmp_path / "tmp")}
    argv = [PYTHON, str(ROOT / "scripts" / "bench_trace.py"), "--device", "cpu", "--modes", "untraced,torch"]
    argv += ["--configs", "2x16", "--warmup", "1", "--steps", "2", "--json", str(out), *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    return proc, (json.loads(out.read_text()) if out.is_file() else None)


def test_lockstep_protocol_with_real_processes_on_the_cpu(tmp_path):
    proc, doc = _bench(tmp_path, "--model", "tiny", "--rounds", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r["mode"]: r for r in doc["modes"]}
    assert set(rows) == {"untraced", "torch"} and rows["torch"]["rounds"] == 2 and rows["torch"]["pairs"] == 4
    for rnd in doc["rounds"]:
        assert "error" not in rnd and {p["exit_status"] for p in rnd["processes"].values()} == {0}
        assert all(len(t) == 2 and min(t) > 0 for t in rnd["steps_ms"]["2x16"].values())
    calls = {c["mode"]: c for c in doc["per_call"]}  # the second round's per-call turns
    assert set(calls) == {"untraced", "torch"} and calls["torch"]["turns"] == 9 and calls["torch"]["launch_ns"] > 0
    assert list((tmp_path / "tmp").glob("bench-trace-*")) == []  # the processes' work folder is gone


@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_sampled_steps_name_where_each_process_spent_its_time(tmp_path, clock):
    """--sample: host_sampler.c preloaded in real children, their measured steps' stacks written per
    pid, read back by host_profile.py with the bench JSON naming each pid's mode; beside each step
    time the thread's page faults and CPU time, and the page-fault figure per call."""
    samples = tmp_path / "samples"
    proc, doc = _bench(
        tmp_path, "--model", "tiny", "--rounds", "2", "--steps", "20", "--sample", str(samples), "--sample-clock", clock
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    pids = {p["pid"]: m for r in doc["rounds"] for m, p in r["processes"].items()}
    assert len(pids) == 4 and all(isinstance(pid, int) for pid in pids)
    for r in doc["rounds"]:
        for key in ("steps_minflt", "steps_cpu_ms", "steps_proc_cpu_ms", "steps_sync_ms"):
            assert {m: len(xs) for m, xs in r[key]["2x16"].items()} == {"untraced": 20, "torch": 20}
    for row in doc["modes"]:
        assert {row[f"{key}_rounds"] for key in ("minflt", "cpu_ms", "proc_cpu_ms", "sync_ms")} == {2}
        assert row["cpu_ms_median"] > 0 and row["sync_ms_median"] >= 0
        assert row["proc_cpu_ms_median"] >= row["cpu_ms_median"] * 0.9  # every thread's CPU, the stepping one's included
    assert all(c["page_fault_ns"] > 0 for c in doc["per_call"])
    written = {int(p.stem.split("-")[1]) for p in samples.glob("samples-*.bin")}
    assert written <= set(pids) and written, "no child wrote its samples"
    out = tmp_path / "profile.json"
    prof = subprocess.run(
        [
            PYTHON,
            str(ROOT / "scripts" / "host_profile.py"),
            str(samples),
            "--bench",
            str(tmp_path / "bt.json"),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert prof.returncode == 0, prof.stderr
    docs = json.loads(out.read_text())["processes"]
    assert sum(d["samples"] for d in docs) > 0 and {d["clock"] for d in docs} == {clock}
    for d in docs:
        assert d["label"].split()[0] == pids[d["pid"]]  # each file named by its process's mode
        if d["samples"]:  # the steps run PyTorch's CPU kernels: its library is on the sampled stacks
            assert any(lib.startswith("libtorch") for lib, _, _ in d["library_inclusive"])
    # every library named from the very file sampled (its build id, which the sampler wrote, checked)
    assert {p.name.replace("samples-", "buildids-").replace(".bin", ".txt") for p in samples.glob("samples-*.bin")} <= {
        p.name for p in samples.glob("buildids-*.txt")
    }
    tables = {lib: kind for d in docs for lib, kind in d["symbol_tables"].items()}
    assert tables["libtorch_cpu.so"] in ("full", "exported"), tables


def _profile(folder, *extra) -> tuple[subprocess.CompletedProcess, dict | None]:
    out = folder.parent / "p.json"
    out.unlink(missing_ok=True)
    argv = [PYTHON, str(ROOT / "scripts" / "host_profile.py"), str(folder), "--top", "200", "--json", str(out), *extra]
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc, (json.loads(out.read_text()) if out.is_file() else None)


def test_host_profile_names_functions_only_from_the_file_that_was_sampled(tmp_path):
    """A library whose file here has another build id than the sampler saw keeps offsets ("not the sampled
    file"); samples without build ids name only what --assume-same vouches for."""
    samples = tmp_path / "samples"
    samples.mkdir()
    lib = tmp_path / "libhs.so"
    subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(ROOT / "scripts" / "host_sampler.c"), "-ldl", "-lpthread", "-lrt"],
        check=True,
    )
    work = "import ctypes, hashlib, os\nm = ctypes.CDLL(None).host_sampler_mark\nd = os.urandom(1 << 20)\nm(1)\n"
    work += "for _ in range(400):\n    hashlib.sha256(d).digest()\nm(0)\n"
    env = {**os.environ, "LD_PRELOAD": str(lib), "HOST_SAMPLER_OUT": str(samples), "HOST_SAMPLER_MARKED": "1"}
    subprocess.run([PYTHON, "-c", work], env=env, check=True)
    (ids,) = samples.glob("buildids-*.txt")

    def kinds_and_names(doc: dict) -> tuple[dict, list[str]]:
        (d,) = doc["processes"]
        return d["symbol_tables"], [fn for fn, _, _ in d["function_inclusive"] if fn.endswith("(libc.so.6)")]

    proc, doc = _profile(samples)
    assert proc.returncode == 0, proc.stderr
    kinds, libc = kinds_and_names(doc)
    assert kinds["libc.so.6"] in ("full", "exported") and any(not fn.startswith("0x") for fn in libc)
    lines = ids.read_text().splitlines()  # the sampler saw another libc: this one is not the sampled file
    ids.write_text("\n".join(("0" * 40 + " " + ln.split(" ", 1)[1]) if ln.endswith("/libc.so.6") else ln for ln in lines) + "\n")
    kinds, libc = kinds_and_names(_profile(samples)[1])
    assert kinds["libc.so.6"] == "not the sampled file" and libc and all(fn.startswith("0x") for fn in libc)
    ids.unlink()  # samples written without build ids: nothing named unless vouched for
    kinds, libc = kinds_and_names(_profile(samples)[1])
    assert set(kinds.values()) == {"unverified"} and all(fn.startswith("0x") for fn in libc)
    kinds, libc = kinds_and_names(_profile(samples, "--assume-same", r"^libc\.so")[1])
    assert kinds["libc.so.6"] in ("full", "exported") and any(not fn.startswith("0x") for fn in libc)
    for bad, said in (
        (["--json", str(samples / "p.json")], "--json: lies inside the input"),
        (["--top", "0"], "--top 0: give at least 1"),
        (["--assume-same", "("], "--assume-same '(': not a regular expression"),
    ):
        proc = subprocess.run(
            [PYTHON, str(ROOT / "scripts" / "host_profile.py"), str(samples), *bad], capture_output=True, text=True
        )
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr


def test_the_sample_folder_and_the_json_are_two_places(tmp_path):
    argv = [PYTHON, str(ROOT / "scripts" / "bench_trace.py"), "--device", "cpu", "--modes", "untraced"]
    proc = subprocess.run([*argv, "--sample", str(tmp_path / "x"), "--json", str(tmp_path / "x")], capture_output=True, text=True)
    assert proc.returncode == 2 and "--json: is also the --sample folder" in proc.stderr and not (tmp_path / "x").exists()


def test_host_profile_refuses_what_is_not_a_sample_file(tmp_path):
    (tmp_path / "samples-12.bin").write_bytes(b"not samples")
    prof = subprocess.run([PYTHON, str(ROOT / "scripts" / "host_profile.py"), str(tmp_path)], capture_output=True, text=True)
    assert prof.returncode == 2 and "Traceback" not in prof.stderr
    assert "samples-12.bin: not a host_sampler.c sample file" in prof.stderr
    head = (12).to_bytes(4, "little") + bytes(12) + (3).to_bytes(8, "little") + bytes(8)  # 3 samples said, none there
    (tmp_path / "samples-12.bin").write_bytes(b"HSMPLv2\n" + head)
    prof = subprocess.run([PYTHON, str(ROOT / "scripts" / "host_profile.py"), str(tmp_path)], capture_output=True, text=True)
    assert prof.returncode == 2 and "cut short after 0 of 3 samples" in prof.stderr


def test_host_profile_refuses_a_focus_that_is_not_a_pattern(tmp_path):
    (tmp_path / "samples-12.bin").write_bytes(b"HSMPLv2\n" + (12).to_bytes(4, "little") + bytes(28))  # no samples
    (tmp_path / "maps-12.txt").write_text("")
    argv = [PYTHON, str(ROOT / "scripts" / "host_profile.py"), str(tmp_path), "--focus", "lib(scorep"]
    prof = subprocess.run(argv, capture_output=True, text=True)
    assert (
        prof.returncode == 2
        and "Traceback" not in prof.stderr
        and "--focus 'lib(scorep': not a regular expression" in prof.stderr
    )
    out = tmp_path.parent / f"{tmp_path.name}-p.json"  # not inside the folder read
    prof = subprocess.run([*argv[:-1], "scorep", "--json", str(out)], capture_output=True, text=True)
    assert prof.returncode == 0, prof.stderr
    doc = json.loads(out.read_text())["processes"][0]
    assert doc["samples"] == 0 and doc["focus"] == {
        "libraries": "scorep",
        "samples": 0,
        "innermost": [],
        "inclusive": [],
        "entered_at": [],
    }
    for bad in ("[]", '{"rounds": [1]}', '{"rounds": [{"processes": []}]}'):  # JSON, but not a bench_trace.py output
        (tmp_path / "bench.json").write_text(bad)
        prof = subprocess.run([*argv[:-2], "--bench", str(tmp_path / "bench.json")], capture_output=True, text=True)
        assert prof.returncode == 2 and "Traceback" not in prof.stderr and "bench.json: not a bench_trace.py JSON" in prof.stderr
    (tmp_path / "maps-12.txt").write_text("zz-1 r-xp 0 00:00 0 /lib/x.so\n")  # a damaged maps copy
    prof = subprocess.run(argv[:-2], capture_output=True, text=True)
    assert prof.returncode == 2 and "maps-12.txt: line 1 is not a /proc/self/maps line" in prof.stderr
    (tmp_path / "samples-12.bin").rename(tmp_path / "samples-13.bin")  # a file whose name and header disagree
    prof = subprocess.run(argv[:-2], capture_output=True, text=True)
    assert prof.returncode == 2 and "samples-13.bin: its header says process 12" in prof.stderr


def test_a_child_that_fails_is_reported_not_hidden(tmp_path):
    proc, doc = _bench(tmp_path, "--model", "no-such-model", "--rounds", "1", "--no-micro")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert doc["modes"] == [] and "exited with status" in doc["rounds"][0]["error"]


def _doc(path, rounds, **over):
    """A bench-trace output of these rounds; its turns measure as many steps as the rounds' longest list of times."""
    lengths = [len(xs) for r in rounds if isinstance(r, dict) for t in (r.get("steps_ms") or {}).values() for xs in t.values()]
    steps = max(lengths, default=3)
    doc = {"model": "base", "warmup": 1, "steps": steps, "configs": ["8x70"], "step_sync": "stream", "rounds": rounds}
    doc.update(over)
    path.write_text(json.dumps(doc))
    return str(path)


def _merge(*argv):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "artifact")}
    return subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "bench_trace.py"), "--merge", *argv], capture_output=True, text=True, env=env
    )


def test_merge_joins_the_rounds_of_runs_of_one_set_up(tmp_path):
    a = _doc(
        tmp_path / "a.json",
        [_round(0, [10.0, 10.0, 10.0], [11.0, 11.0, 11.0])],
        counts={"scorep-launch": {"launches": 5, "kernels": 5}},
    )
    b = _doc(
        tmp_path / "b.json",
        [_round(0, [10.0] * 3, [13.0] * 3), _round(1, [10.0] * 3, [15.0] * 3)],
        counts={"scorep-launch": {"launches": 5, "kernels": 4}},  # one kernel lost in the second run
    )
    out = tmp_path / "m.json"
    proc = _merge(a, b, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    row = {r["mode"]: r for r in doc["modes"]}["scorep-launch"]
    assert row["rounds"] == 3 and row["ratio_median"] == pytest.approx(1.3)
    # the kernels found over every source's counted experiment: the second run's loss is not dropped
    assert (row["kernels_found"], row["launches_counted"], row["experiments_counted"]) == (9, 10, 2)
    assert row["kernels_found_share"] == pytest.approx(0.9)
    assert [e["source"] for e in doc["counts"]["scorep-launch"]["experiments"]] == ["a.json", "b.json"]
    assert [(r["round"], r["source"], r["source_round"]) for r in doc["rounds"]] == [
        (0, "a.json", 0),
        (1, "b.json", 0),
        (2, "b.json", 1),
    ]
    assert [s["rounds"] for s in doc["merged_from"]] == [1, 2] and doc["step_sync"] == "stream"


def test_merge_refuses_other_set_ups_and_other_files(tmp_path):
    a = _doc(tmp_path / "a.json", [_round(0, [10.0], [11.0])])
    older = tmp_path / "old.json"  # an output of the first lockstep version: every step ended in a device sync
    old = {k: v for k, v in json.loads(Path(a).read_text()).items() if k != "step_sync"}
    old["rounds"][0]["steps_ms"]["8x70"]["untraced"] = [12.0]  # a round of its own
    older.write_text(json.dumps(old))
    proc = _merge(a, str(older))
    assert proc.returncode == 2 and "another set-up" in proc.stderr and "step_sync" in proc.stderr
    (tmp_path / "x.json").write_text("{not json")
    proc = _merge(a, str(tmp_path / "x.json"))
    assert proc.returncode == 2 and "x.json: not a bench-trace output" in proc.stderr and "Traceback" not in proc.stderr


def test_merge_refuses_the_same_rounds_twice_an_output_over_an_input_and_edited_rounds(tmp_path):
    a = _doc(tmp_path / "a.json", [_round(0, [10.0], [11.0])])
    before = Path(a).read_bytes()
    copy = tmp_path / "copy.json"
    copy.write_bytes(before)
    proc = _merge(a, str(copy), "--json", str(tmp_path / "m.json"))
    assert proc.returncode == 2 and "copy.json: the same content as" in proc.stderr and not (tmp_path / "m.json").exists()
    proc = _merge(a, "--json", a)
    assert proc.returncode == 2 and "--json: is also an input" in proc.stderr and Path(a).read_bytes() == before
    (tmp_path / "other").mkdir()  # another run under the same file name: its merged rounds could not name their run
    b = _doc(tmp_path / "other" / "a.json", [_round(0, [12.0], [13.0])])
    proc = _merge(a, b, "--json", str(tmp_path / "m.json"))
    assert proc.returncode == 2 and "another input has the same file name" in proc.stderr and not (tmp_path / "m.json").exists()
    edited = json.loads(before)
    edited["rounds"][0]["steps_ms"]["8x70"]["untraced"] = ["10", 10.0]
    (tmp_path / "e.json").write_text(json.dumps(edited))
    proc = _merge(str(tmp_path / "e.json"))
    assert proc.returncode == 2 and "step times that are not positive numbers" in proc.stderr
    del edited["rounds"][0]["round"]
    (tmp_path / "e.json").write_text(json.dumps(edited))
    proc = _merge(str(tmp_path / "e.json"))
    assert proc.returncode == 2 and "a round without its number" in proc.stderr and "Traceback" not in proc.stderr
    proc = _merge(str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and "missing.json: a bench-trace output not found" in proc.stderr


def test_a_merged_output_merged_again_keeps_every_counted_experiment_and_edited_counts_are_refused(tmp_path):
    a = _doc(tmp_path / "a.json", [_round(0, [10.0] * 3, [11.0] * 3)], counts={"scorep-launch": {"launches": 5, "kernels": 5}})
    b = _doc(tmp_path / "b.json", [_round(0, [10.0] * 3, [12.0] * 3)], counts={"scorep-launch": {"launches": 5, "kernels": 4}})
    c = _doc(tmp_path / "c.json", [_round(0, [10.0] * 3, [13.0] * 3)], counts={"scorep-launch": {"launches": 5, "kernels": 5}})
    ab = tmp_path / "ab.json"
    assert _merge(a, b, "--json", str(ab)).returncode == 0
    out = tmp_path / "abc.json"
    proc = _merge(str(ab), c, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    # the lost kernel of b.json survives a second merge, under its own run's name, and so do the rounds' runs
    assert [e["source"] for e in doc["counts"]["scorep-launch"]["experiments"]] == ["a.json", "b.json", "c.json"]
    assert [r["source"] for r in doc["rounds"]] == ["a.json", "b.json", "c.json"]
    assert [e["file"] for e in doc["merged_from"]] == ["a.json", "b.json", "c.json"]
    assert [r["source_round"] for r in doc["rounds"]] == [0, 0, 0]
    broken = json.loads(ab.read_text())
    broken["rounds"][0]["source"] = "z.json"  # a round of no run of the merge: refused, not guessed
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    proc = _merge(str(tmp_path / "broken.json"), c)
    assert proc.returncode == 2 and "a round that names none of its merged runs" in proc.stderr
    row = {r["mode"]: r for r in doc["modes"]}["scorep-launch"]
    assert (row["kernels_found"], row["launches_counted"], row["experiments_counted"]) == (14, 15, 3)
    # a merge that holds a run, merged with that run again, would count its rounds and kernels twice
    proc = _merge(str(ab), b, "--json", str(tmp_path / "twice.json"))
    assert proc.returncode == 2 and "b.json: its round 0 is also round 1 of" in proc.stderr and "ab.json" in proc.stderr
    assert not (tmp_path / "twice.json").exists() and "Traceback" not in proc.stderr
    for bad in ({"launches": 5, "kernels": "5"}, {"launches": -1, "kernels": 0}, {"experiments": "x"}, ["5"]):
        edited = tmp_path / "edited.json"
        doc = json.loads(Path(a).read_text())
        doc["counts"] = {"scorep-launch": bad}
        edited.write_text(json.dumps(doc))
        proc = _merge(str(edited), b)
        assert proc.returncode == 2 and "edited.json: not a bench-trace output" in proc.stderr, bad
        assert "kernel counts" in proc.stderr and "Traceback" not in proc.stderr


def test_the_kernels_of_every_rounds_experiment_are_counted_from_real_traces(bt, tmp_path):
    """Two real Score-P experiments of the H200 (shipped reference sets) stand for two rounds' processes;
    a round with the per-call loops and an unreadable experiment never stop the count."""
    real = [ROOT / f"expected/reference/h200-scorep-{b}/ws1-scorep-r0/traces/scorep-rank0" for b in ("b8", "b32")]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "traces.otf2").write_text("not an OTF2 anchor\n")

    def rnd(i, exp, micro=False):
        return {"round": i, "micro": micro, "processes": {"scorep-launch": {"experiment": str(exp)}}}

    rounds = [rnd(0, real[0]), rnd(1, real[1], micro=True), rnd(2, real[1]), rnd(3, broken), rnd(4, tmp_path / "gone")]
    every = bt.summary.count_kernels(rounds, ["untraced", "scorep-launch"], "every")["scorep-launch"]["experiments"]
    assert [e["round"] for e in every] == [0, 2, 3, 4]
    assert "no finished experiment" in every[3]["error"]  # a process without its experiment is said
    assert every[0]["launches"] == every[0]["kernels"] == 25289  # scorep_count's figure for that set
    assert every[1]["launches"] > 0 and every[1]["kernels"] == every[1]["launches"]
    assert "error" in every[2] and "launches" not in every[2]
    first = bt.summary.count_kernels(rounds, ["scorep-launch"], "first")["scorep-launch"]["experiments"]
    assert [e["round"] for e in first] == [0]
    row = bt.summary.trace_figures(rounds, "scorep-launch", {"experiments": every})
    assert row["experiments_counted"] == 2 and row["kernels_found_share"] == 1.0  # the broken ones are not counted
    assert row["experiments_uncountable"] == 2  # but they are said


# ---- the bare CUPTI client (modes cupti-kernels, cupti-kernels-8k) and scorep-nodriver-chunk4m ----


def _fake_cupti(root, lib="lib64", header=""):
    """A CUPTI folder as cupti_dir looks for it: include/cupti.h and <lib>/libcupti.so, plain files."""
    (root / "include").mkdir(parents=True)
    (root / "include" / "cupti.h").write_text(header)
    (root / lib).mkdir()
    (root / lib / "libcupti.so").write_text("")
    return root


def _fake_nvcc(cuda):
    """An executable <cuda>/bin/nvcc; its folder is the PATH to give."""
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    (cuda / "bin" / "nvcc").chmod(0o755)
    return str(cuda / "bin")


def test_cupti_dir_takes_cupti_root_first(bt, tmp_path):
    root = _fake_cupti(tmp_path / "cupti")
    nvcc_path = _fake_nvcc(tmp_path / "cuda")
    _fake_cupti(tmp_path / "cuda" / "extras" / "CUPTI")
    assert bt.setup.cupti_dir({"CUPTI_ROOT": str(root), "PATH": nvcc_path}) == root
    (root / "lib64" / "libcupti.so").unlink()  # a header without its library is no CUPTI: nvcc's toolkit then
    assert bt.setup.cupti_dir({"CUPTI_ROOT": str(root), "PATH": nvcc_path}) == tmp_path / "cuda" / "extras" / "CUPTI"


def test_cupti_dir_finds_the_cuda_13_layout_of_nvccs_toolkit(bt, tmp_path):
    cuda = tmp_path / "cuda-13"
    target = _fake_cupti(cuda / "targets" / "x86_64-linux", lib="lib")
    assert bt.setup.cupti_dir({"PATH": _fake_nvcc(cuda)}) == target


def test_cupti_dir_finds_the_extras_cupti_layout_of_nvccs_toolkit(bt, tmp_path):
    cuda = tmp_path / "cuda-12"
    extras = _fake_cupti(cuda / "extras" / "CUPTI")
    assert bt.setup.cupti_dir({"PATH": _fake_nvcc(cuda)}) == extras


def test_cupti_dir_is_none_without_cupti_root_cuda_home_nvcc_or_a_fallback(bt, tmp_path):
    (tmp_path / "empty").mkdir()
    assert bt.setup.cupti_dir({"PATH": str(tmp_path / "empty")}, fallbacks=(tmp_path / "no-cuda",)) is None
    fallback = _fake_cupti(tmp_path / "cuda" / "extras" / "CUPTI")  # the last resort, where /usr/local/cuda stands
    assert bt.setup.cupti_dir({"PATH": str(tmp_path / "empty")}, fallbacks=(tmp_path / "cuda",)) == fallback


def test_cupti_dir_finds_a_wheels_cupti_with_only_the_versioned_library(bt, tmp_path):
    """NVIDIA's CUDA 13 wheels (nvidia/cu13) have include/cupti.h and lib/libcupti.so.13, no libcupti.so."""
    wheel = tmp_path / "nvidia" / "cu13"
    (wheel / "include").mkdir(parents=True)
    (wheel / "include" / "cupti.h").write_text("")
    (wheel / "lib").mkdir()
    assert bt.setup.cupti_dir({"PATH": str(tmp_path)}, fallbacks=(wheel,)) is None  # no library yet
    (wheel / "lib" / "libcupti.so.13").write_text("")
    assert bt.setup.cupti_dir({"PATH": str(tmp_path)}, fallbacks=(wheel,)) == wheel
    assert bt.setup.libcupti(wheel) == wheel / "lib" / "libcupti.so.13"
    (wheel / "lib" / "libcupti.so").write_text("")  # a toolkit's unversioned name is taken first
    assert bt.setup.libcupti(wheel) == wheel / "lib" / "libcupti.so"


def test_cupti_dir_takes_cuda_home_before_nvcc(bt, tmp_path):
    home = _fake_cupti(tmp_path / "home" / "targets" / "x86_64-linux", lib="lib")
    _fake_cupti(tmp_path / "cuda" / "extras" / "CUPTI")
    found = bt.setup.cupti_dir({"CUDA_HOME": str(tmp_path / "home"), "PATH": _fake_nvcc(tmp_path / "cuda")}, fallbacks=())
    assert found == home


def test_the_cupti_client_that_does_not_compile_is_refused_with_the_file_and_the_cupti_folder(bt, tmp_path):
    fake = _fake_cupti(tmp_path / "cupti")  # an empty cupti.h: nothing the client needs is declared
    (tmp_path / "work").mkdir()
    built, why = bt.setup.build_cupti_client(tmp_path / "work", {"CUPTI_ROOT": str(fake), "PATH": "/usr/bin:/bin"})
    assert built is None and "bench_trace_cupti.c does not build against" in why and str(fake) in why
    assert not (tmp_path / "work" / bt.modes.CUPTI_CLIENT_LIB).exists()


def test_the_cupti_client_without_a_c_compiler_is_a_message_not_an_exception(bt, tmp_path):
    fake = _fake_cupti(tmp_path / "cupti")
    built, why = bt.setup.build_cupti_client(tmp_path, {"CC": "/nonexistent/cc", "CUPTI_ROOT": str(fake), "PATH": "/usr/bin"})
    assert built is None and "cannot run the C compiler /nonexistent/cc" in why


def test_the_cupti_client_without_cupti_says_cupti_is_needed(bt, tmp_path):
    (tmp_path / "empty").mkdir()
    built, why = bt.setup.build_cupti_client(tmp_path, {"PATH": str(tmp_path / "empty")}, fallbacks=(tmp_path / "no-cuda",))
    assert built is None and "mode cupti-kernels needs CUPTI" in why
    built, why = bt.setup.build_cupti_client(
        tmp_path, {"PATH": str(tmp_path / "empty")}, fallbacks=(tmp_path / "no-cuda",), modes=("cupti-kernels", "cupti-launch")
    )
    assert built is None and why.startswith("bench-trace: modes cupti-kernels, cupti-launch need CUPTI")


def _cupti_round(rnd, kernels, dropped, micro=False, error=None):
    row = _round(rnd, [10.0] * 3, [12.0] * 3, micro=micro, trace_bytes=5_000)
    if error:
        row["error"] = error
    row["steps_ms"]["8x70"]["cupti-kernels"] = [11.0] * 3
    counts = {"kernels": kernels, "memcpys": 4, "other_records": 0, "buffers": 2, "dropped": dropped, "buffers_not_given": 0}
    row["processes"]["cupti-kernels"] = {"exit_status": 0, "cupti_records": counts}
    return row


def test_the_cupti_clients_counts_are_summarised_from_the_rounds_without_per_call_loops(bt):
    rounds = [_cupti_round(0, 100, 1), _cupti_round(1, 130, 7, micro=True), _cupti_round(2, 1000, 2)]
    rounds.append(_cupti_round(3, 90, 5, error="r3-untraced: exited with status 1: ..."))  # a broken round: not counted
    rows = {r["mode"]: r for r in bt.summary.summarise(rounds, ["8x70"])}
    cupti = rows["cupti-kernels"]
    assert cupti["ratio_median"] == pytest.approx(1.1) and cupti["rounds"] == 4
    assert cupti["cupti_kernel_records"] == [100, 1000] and cupti["cupti_dropped"] == 3 and cupti["cupti_processes"] == 2
    assert cupti["cupti_buffers_not_given"] == 0 and cupti["cupti_flush_errors"] == 0
    assert cupti["kernels_found_share"] is None and cupti["trace_bytes_per_step"] is None
    for other in ("scorep-launch", "untraced"):  # no client there: no such keys
        assert not [k for k in rows[other] if k.startswith("cupti_")], other
    assert bt.summary.trace_figures(rounds, "scorep-launch", None)["trace_bytes_per_step"] == pytest.approx(500.0)


def test_the_clients_launch_records_and_their_linked_kernels_are_listed_per_process(bt):
    """With launch activity records (cupti-launch-records) each process's count of them and of the kernel records
    a launch record links to (by correlation id) is listed, in round order, so that a kernel without its launch
    record shows; a client without launch records lists neither."""
    rounds = [_cupti_round(0, 100, 0), _cupti_round(1, 120, 0)]
    rounds[0]["processes"]["cupti-kernels"]["cupti_records"].update(launch_records=104, linked_kernels=100)
    rounds[1]["processes"]["cupti-kernels"]["cupti_records"].update(launch_records=124, linked_kernels=119)
    row = {r["mode"]: r for r in bt.summary.summarise(rounds, ["8x70"])}["cupti-kernels"]
    assert row["cupti_launch_records"] == [104, 124] and row["cupti_linked_kernels"] == [100, 119]
    assert row["cupti_kernel_records"] == [100, 120]  # 1 of round 1's kernels has no launch record: it shows
    plain = {r["mode"]: r for r in bt.summary.summarise([_cupti_round(0, 100, 0)], ["8x70"])}["cupti-kernels"]
    assert "cupti_launch_records" not in plain and "cupti_linked_kernels" not in plain


def test_a_cupti_client_child_gets_the_built_library_and_no_score_p_variables(bt, tmp_path):
    outer = {"PATH": "/usr/bin"}
    lib = str(tmp_path / "work" / "libbench_trace_cupti.so")
    assert bt.lockstep.child_env("cupti-kernels", tmp_path / "work" / "r0-cupti-kernels", outer) == {
        **outer,
        bt.modes.CUPTI_CLIENT_ENV: lib,
    }
    assert (
        bt.lockstep.child_env("cupti-kernels-8k", tmp_path / "work" / "r1-cupti-kernels-8k", outer)[bt.modes.CUPTI_CLIENT_ENV]
        == lib
    )
    assert bt.lockstep.child_env("cupti-launch", tmp_path / "work" / "r0-cupti-launch", outer) == {
        **outer,
        bt.modes.CUPTI_CLIENT_ENV: lib,
    }
    assert bt.modes.CUPTI_CLIENT_MODES == {
        "cupti-kernels": 4 << 20,
        "cupti-kernels-8k": 8 << 10,
        "cupti-launch": 4 << 20,
        "cupti-launch-domains": 4 << 20,
        "cupti-launch-records": 4 << 20,
        "cupti-kernels-pinned": 4 << 20,
        "cupti-kernels-shared": 4 << 20,
    }
    # the modes that also take the launch callbacks, the one that adds the resource and synchronisation domains,
    # the one that takes CUPTI's activity records of those driver calls instead of callbacks, and the two that
    # change one of CUPTI's own settings
    assert bt.modes.CUPTI_CLIENT_OPTIONS == {
        "cupti-launch": 1,
        "cupti-launch-domains": 3,
        "cupti-launch-records": 4,
        "cupti-kernels-pinned": 8,
        "cupti-kernels-shared": 16,
    }
    assert bt.modes.CUPTI_LAUNCH_MODES == ("cupti-launch", "cupti-launch-domains")
    assert bt.modes.mode_settings(["cupti-kernels", "cupti-launch"]) == {"cupti-kernels": None, "cupti-launch": None}


def test_the_clients_option_flags_are_the_ones_its_c_source_defines(bt):
    """The options a mode passes to bench_cupti_start are made of the flags bench_trace_cupti.c's enum defines, with
    the values it gives them: a flag renumbered on one side only would switch on another setting on the GPU."""
    import re

    source = (ROOT / "scripts" / "bench_trace_cupti.c").read_text()
    flags = {name: int(value) for name, value in re.findall(r"\b(BENCH_CUPTI_[A-Z_]+)\s*=\s*(\d+)", source)}
    assert flags == {
        "BENCH_CUPTI_LAUNCHES": 1,
        "BENCH_CUPTI_DOMAINS": 2,
        "BENCH_CUPTI_LAUNCH_RECORDS": 4,
        "BENCH_CUPTI_PINNED": 8,
        "BENCH_CUPTI_SHARED_BUFFERS": 16,
    }
    every = sum(flags.values())
    assert all(options & ~every == 0 for options in bt.modes.CUPTI_CLIENT_OPTIONS.values())
    assert "CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 1" in source
    assert "CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 0" in source


def test_every_mode_the_benchmark_accepts_is_described_in_its_help(bt):
    """--help (the script's docstring) names each mode of MODES at the start of a line, with what it sets."""
    import bench_trace

    lines = (bench_trace.__doc__ or "").splitlines()
    described = {line.split()[0] for line in lines if line.startswith("  ") and line[2:3].strip()}  # headings only
    assert set(bt.modes.MODES) <= described, set(bt.modes.MODES) - described


def test_every_mode_a_table_of_the_benchmark_names_is_a_mode_it_accepts(bt):
    """--modes accepts only the keys of MODES: a mode named in another table but missing there is refused on the
    GPU before any round (as cupti-launch-domains was, in call U's first try)."""
    named = {
        *bt.modes.CUPTI_CLIENT_MODES,
        *bt.modes.CUPTI_CLIENT_OPTIONS,
        *bt.modes.DOMAIN_FILTER_MODES,
        *bt.modes.MODE_NEEDS_PATCH,
    }
    assert named <= set(bt.modes.MODES), named - set(bt.modes.MODES)
    assert all(bt.modes.MODES[m] is None for m in bt.modes.CUPTI_CLIENT_MODES)  # the bare client runs without Score-P
    assert all(bt.modes.MODES[m] is not None for m in bt.modes.DOMAIN_FILTER_MODES)  # the filter sits before Score-P


def test_the_nosync_mode_is_the_default_mode_with_the_domain_filter_preloaded_first(bt, tmp_path):
    work = tmp_path / "work"
    env = bt.lockstep.child_env("scorep-launch-nosync-chunk4m", work / "r0-x", {"PATH": "/usr/bin", "LD_PRELOAD": "/a.so"})
    default = bt.lockstep.child_env("scorep-launch-chunk4m", work / "r0-x", {"PATH": "/usr/bin", "LD_PRELOAD": "/a.so"})
    assert env.pop("LD_PRELOAD") == f"{work / bt.modes.DOMAIN_FILTER_LIB} /a.so"
    default.pop("LD_PRELOAD")
    assert env == default  # nothing else differs
    bare = bt.lockstep.child_env("scorep-launch-nosync-chunk4m", work / "r0-x", {"PATH": "/usr/bin"})
    assert bare["LD_PRELOAD"] == str(work / bt.modes.DOMAIN_FILTER_LIB)


_FILTER_PROBE = r"""
#include <stdint.h>
#include <stdio.h>
/* the program binds to cuptiEnableDomain the way Score-P's adapter does: through the dynamic linker */
int cuptiEnableDomain(uint32_t enable, void* subscriber, int domain);
int main(void) {
    int resource = cuptiEnableDomain(1, 0, 3), sync = cuptiEnableDomain(1, 0, 4), off = cuptiEnableDomain(0, 0, 4);
    printf("%d %d %d\n", resource, sync, off);
    return 0;
}
"""
_FAKE_CUPTI = r"""
#include <stdint.h>
#include <stdio.h>
/* stands in for libcupti.so: says which calls reached it */
int cuptiEnableDomain(uint32_t enable, void* subscriber, int domain) {
    (void)subscriber;
    fprintf(stderr, "cupti got %u %d\n", enable, domain);
    return 0;
}
"""


def test_the_domain_filter_holds_back_only_the_synchronisation_domain_when_preloaded(bt, tmp_path):
    """Real builds and a real preload: a program linked against a stand-in libcupti.so, run with the filter
    in LD_PRELOAD, reaches CUPTI with the resource domain and with disabling, never with enabling the
    synchronisation domain; the filter's counts say so."""
    cc = os.environ.get("CC") or "cc"
    (tmp_path / "cupti.c").write_text(_FAKE_CUPTI)
    (tmp_path / "probe.c").write_text(_FILTER_PROBE)
    subprocess.run([cc, "-shared", "-fPIC", "-o", tmp_path / "libcupti.so", tmp_path / "cupti.c"], check=True)
    subprocess.run(
        [cc, "-o", tmp_path / "probe", tmp_path / "probe.c", f"-L{tmp_path}", "-lcupti", f"-Wl,-rpath,{tmp_path}"], check=True
    )
    lib, why = bt.setup.build_domain_filter(tmp_path, ("scorep-launch-nosync-chunk4m",))
    assert why is None and Path(lib).name == bt.modes.DOMAIN_FILTER_LIB
    plain = subprocess.run([tmp_path / "probe"], capture_output=True, text=True, check=True)
    assert plain.stderr.splitlines() == ["cupti got 1 3", "cupti got 1 4", "cupti got 0 4"]
    env = {**os.environ, "LD_PRELOAD": lib}
    filtered = subprocess.run([tmp_path / "probe"], capture_output=True, text=True, check=True, env=env)
    assert filtered.stdout.split() == ["0", "0", "0"]  # success is answered for the call held back
    assert filtered.stderr.splitlines() == ["cupti got 1 3", "cupti got 0 4"]
    counts = subprocess.run(
        [PYTHON, "-c", "import ctypes; c = (ctypes.c_ulonglong * 2)(); ctypes.CDLL(None).cupti_domain_filter_counts(c); print(list(c))"],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    assert counts.stdout.strip() == "[0, 0]"  # loaded in a process that makes no call: nothing counted
    assert bt.child.domain_filter_counts() is None  # this process did not preload it


def test_a_filtered_process_that_reported_no_filter_counts_is_listed_not_skipped(bt):
    """A process of the filtered mode without the filter's counts (the filter was not loaded) ran as the default
    mode: the summary lists it as None beside the others, so the documents cannot read the mode as filtered."""
    mode = "scorep-launch-nosync-chunk4m"
    rounds = []
    for rnd, counts in enumerate(({"held_back": 1, "passed_on": 1}, None, {"held_back": 1, "passed_on": 1})):
        row = _round(rnd, [10.0] * 3, [12.0] * 3)
        row["steps_ms"]["8x70"][mode] = [12.0] * 3
        row["processes"][mode] = {"exit_status": 0, **({"domain_filter": counts} if counts else {})}
        rounds.append(row)
    rows = {r["mode"]: r for r in bt.summary.summarise(rounds, ["8x70"], {})}
    assert rows[mode]["domain_filter_held_back"] == [1, None, 1]
    assert "domain_filter_held_back" not in rows["scorep-launch"]  # a mode run without the filter


def test_the_domain_filter_that_does_not_build_is_a_message(bt, tmp_path):
    built, why = bt.setup.build_domain_filter(
        tmp_path, ("scorep-launch-nosync-chunk4m",), {"CC": "/nonexistent/cc", "PATH": "/usr/bin"}
    )
    assert built is None and why.startswith("bench-trace: mode scorep-launch-nosync-chunk4m: cannot run the C compiler")


def test_a_preloaded_library_whose_path_ld_preload_would_split_is_refused_before_any_round(bt, tmp_path):
    """LD_PRELOAD splits its entries at spaces and colons: a work folder (under TMPDIR) holding either would
    preload a wrong path, so the sampler and the domain filter are refused there, with why, exit status 2."""
    base = tmp_path / "a b"
    base.mkdir()
    proc, doc = _bench(base, "--sample", str(tmp_path / "samples"), "--model", "tiny")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "--sample: the work folder" in proc.stderr and "which LD_PRELOAD cannot carry" in proc.stderr
    assert doc is None and list((base / "tmp").iterdir()) == []  # the work folder is removed, nothing written
    built, why = bt.setup.build_domain_filter(tmp_path / "x:y", ("scorep-launch-nosync-chunk4m",))
    assert built is None and why.startswith("bench-trace: mode scorep-launch-nosync-chunk4m: the work folder")
    assert not (tmp_path / "x:y").exists()  # refused before the compiler ran


def test_the_nocache_mode_is_the_default_mode_with_the_stream_reference_cache_off(bt, tmp_path):
    env = bt.lockstep.child_env("scorep-launch-nocache-chunk4m", tmp_path / "x", {"PATH": "/usr/bin"})
    default = bt.lockstep.child_env("scorep-launch-chunk4m", tmp_path / "x", {"PATH": "/usr/bin"})
    assert env.pop("SCOREP_CUDA_STREAM_REF_CACHE") == "false"
    assert env == default  # nothing else differs


def _prefix_with(tmp_path, *patches):
    share = tmp_path / "prefix" / "share"
    share.mkdir(parents=True)
    (share / "scorep-patches.txt").write_text("".join(f"patch: {p} sha256 ab verified\n" for p in patches))
    return tmp_path / "prefix"


def test_a_mode_that_switches_a_patch_is_refused_on_a_score_p_without_it(bt, tmp_path):
    three = _prefix_with(tmp_path, "8.4-cupti-stream-order.patch", "8.4-cupti-launch-callbacks.patch")
    why = bt.setup.missing_patch(["untraced", "scorep-launch-nocache-chunk4m"], three)
    assert why.startswith(
        "bench-trace: mode scorep-launch-nocache-chunk4m needs a Score-P built with 8.4-cupti-stream-ref-cache.patch"
    )
    assert f"{three}/share/scorep-patches.txt lists 8.4-cupti-launch-callbacks.patch, 8.4-cupti-stream-order.patch" in why
    assert bt.setup.missing_patch(["untraced", "scorep-launch-chunk4m"], three) is None  # no mode needs a patch
    (three / "share" / "scorep-patches.txt").unlink()
    assert "lists no patch" in bt.setup.missing_patch(["scorep-launch-nocache-chunk4m"], three)


def test_a_mode_that_switches_a_patch_runs_on_a_score_p_with_it(bt, tmp_path):
    four = _prefix_with(tmp_path, "8.4-cupti-launch-callbacks.patch", "8.4-cupti-stream-ref-cache.patch")
    assert bt.setup.missing_patch(["untraced", "scorep-launch-nocache-chunk4m"], four) is None
    # every patch a mode needs is one of the series
    series = (Path(__file__).resolve().parents[1] / "containers" / "scorep-patches" / "series-8.4").read_text()
    assert all(f"\n{p} " in series for p in bt.modes.MODE_NEEDS_PATCH.values())


def test_scorep_nodriver_chunk4m_records_kernels_only_into_4m_chunks(bt, tmp_path):
    outer = {"PATH": "/usr/bin", "SCOREP_CUDA_BUFFER_CHUNK": "1k"}
    env = bt.lockstep.child_env("scorep-nodriver-chunk4m", tmp_path / "n4", outer)
    assert env["SCOREP_CUDA_ENABLE"] == "kernel,memcpy" and env["SCOREP_CUDA_BUFFER_CHUNK"] == "4M"
    assert bt.modes.CUPTI_CLIENT_ENV not in env
    assert "SCOREP_CUDA_BUFFER_CHUNK" not in bt.lockstep.child_env("scorep-nodriver", tmp_path / "n", outer)


def _real_cupti(bt):
    """The machine's own CUPTI (a real cupti.h, not a test's fake), or skip."""
    import shutil

    found = bt.setup.cupti_dir(dict(os.environ))
    if found is None or not (found / "include" / "cupti.h").stat().st_size or not shutil.which("cc"):
        pytest.skip(
            "no real CUPTI (include/cupti.h, libcupti.so; .ci/run installs one and names it by CUPTI_ROOT) or no C compiler"
        )
    return found


def test_the_real_cupti_client_builds_and_exports_its_functions(bt, tmp_path):
    cupti = _real_cupti(bt)
    built, why = bt.setup.build_cupti_client(tmp_path, dict(os.environ))
    assert why is None and built["cupti"] == str(cupti) and Path(built["libcupti"]).exists()
    lib = tmp_path / bt.modes.CUPTI_CLIENT_LIB
    assert lib.is_file()
    probe = f"import ctypes; l = ctypes.CDLL({str(lib)!r}); l.bench_cupti_error.restype = ctypes.c_char_p; "
    probe += "print(l.bench_cupti_start, l.bench_cupti_stop, l.bench_cupti_error(0).decode())"
    proc = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split()[-1] == "CUPTI_SUCCESS", proc.stderr[-2000:]


def test_the_real_cupti_client_links_each_kernel_record_to_a_launch_record_by_correlation_id(bt, tmp_path):
    """The client's record walk and its linking, through a real CUPTI's cuptiActivityGetNextRecord (no GPU):
    two kernels of one id both count as linked, also where the launch record comes in a later buffer; a kernel
    whose id no launch record carries does not; an id beyond the bitmap counts as not linked; a memcpy
    record is counted apart (tests/cupti_client_harness.c builds the buffers)."""
    cupti = _real_cupti(bt)
    built, why = bt.setup.build_cupti_client(tmp_path, dict(os.environ))  # the libcupti the benchmark links
    assert why is None, why
    so = Path(built["libcupti"])
    harness = tmp_path / "harness"  # includes the client's source, so that it reaches its static functions
    argv = [os.environ.get("CC") or "cc", "-O2", "-Wall", "-o", str(harness), str(ROOT / "tests" / "cupti_client_harness.c")]
    argv += [f"-I{cupti / 'include'}", str(so), f"-Wl,-rpath,{so.parent}"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = subprocess.run([str(harness)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads(proc.stdout)
    assert counts["kernels"] == 4 and counts["memcpys"] == 1 and counts["other_records"] == 0
    assert counts["launch_records"] == 4
    assert counts["linked_kernels"] == 2  # the two kernels of id 5; id 9 has no launch record, 2^25 is beyond


@pytest.mark.parametrize("mode", ["cupti-kernels", "cupti-launch", "cupti-kernels-pinned", "cupti-kernels-shared"])
def test_a_cupti_client_run_without_a_gpu_reports_that_the_client_cannot_start(bt, tmp_path, monkeypatch, mode):
    import torch

    cupti = _real_cupti(bt)
    if torch.cuda.is_available():  # pragma: no cover - a GPU machine: the client would start
        pytest.skip("a GPU is present")
    monkeypatch.setenv("CUPTI_ROOT", str(cupti))
    proc, doc = _bench(tmp_path, "--modes", f"untraced,{mode}", "--rounds", "1", "--no-micro", "--model", "tiny")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    # the child's last stderr line, its reason, is the round's error
    assert f"r0-{mode}: exited with status 1" in doc["rounds"][0]["error"]
    assert "the CUPTI client cannot start" in doc["rounds"][0]["error"]
    assert doc["modes"] == [] and doc["cupti_client"]["cupti"] == str(cupti)
    assert list((tmp_path / "tmp").glob("bench-trace-*")) == []


@pytest.mark.parametrize(
    "spoil, said",
    [
        (lambda r: r.pop("micro"), "'micro' (whether the round ran the per-call loops) is missing"),
        (lambda r: r.update(processes=[]), "'processes' is not one entry per mode"),
        (lambda r: r["processes"]["scorep-launch"].update(trace_bytes="big"), "a trace size that is not a whole number"),
        (lambda r: r.update(executed_steps=0), "trace sizes without a positive number of executed steps"),
        (lambda r: r["processes"]["untraced"].update(cupti_records={"kernels": "x"}), "CUPTI record counts"),
        (lambda r: r.update(per_call={"torch": [5]}), "per-call figures that are not a list of turns per mode"),
        (lambda r: r.update(per_call={"torch": [{"launch_ns": "fast"}]}), "per-call figures that are not numbers"),
    ],
)
def test_merge_refuses_a_round_that_summarise_could_not_read(tmp_path, spoil, said):
    row = _round(0, [10.0], [11.0], trace_bytes=5_000)
    spoil(row)
    proc = _merge(_doc(tmp_path / "a.json", [row]), "--json", str(tmp_path / "m.json"))
    assert proc.returncode == 2 and "a.json: not a bench-trace output (round 0: " in proc.stderr and said in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "m.json").exists()


@pytest.mark.parametrize(
    "shipped",
    [
        "bench-trace-scorep.json",
        "gpu-call-2026-12-04-cupti/bench-l.json",
        "gpu-call-2026-12-04-stream-sync/bench-f.json",
        "gpu-call-2026-12-04-cache/bench-nop.json",
        "gpu-call-2026-12-04-profile/bench-abc.json",
        "../h100-bench/gpu-call-2026-12-05-domains/bench-u.json",  # call U, on the lent H100
    ],
)
def test_the_shipped_figures_are_what_their_own_rounds_give(bt, shipped):
    """The documents quote the rows; the rows must be the summary of the rounds shipped beside them (the
    figures the documents read: an as-run file keeps the other keys its code version wrote)."""
    doc = json.loads((ROOT / "expected/reference/h200-bench" / shipped).read_text())
    assert bt.merge.merge_input_problem(doc) is None
    quoted = ("mode", "config", "ratio_median", "ratio_min", "ratio_max", "rounds", "pooled_ratio_median",
              "pooled_ratio_q1", "pooled_ratio_q3", "pairs", "round_ratios", "step_ms_median",
              "trace_bytes_per_step", "kernels_found_share")  # fmt: skip
    again = json.loads(json.dumps(bt.summary.summarise(doc["rounds"], doc["configs"], doc.get("counts"))))
    assert [{k: m.get(k) for k in quoted} for m in doc["modes"]] == [{k: m.get(k) for k in quoted} for m in again]
    for mine, redone in zip(doc["per_call"], bt.summary.per_call(doc["rounds"]), strict=True):
        assert {k: mine.get(k) for k in ("mode", "turns", "rounds", "cuCtxGetDevice_ns", "launch_ns")} == {
            k: redone.get(k) for k in ("mode", "turns", "rounds", "cuCtxGetDevice_ns", "launch_ns")
        }


H200 = ROOT / "expected/reference/h200-bench"
SHIPPED_MERGES = {  # a shipped merge: its runs, in the order merged
    "bench-trace-scorep.json": [
        "gpu-call-2026-12-04-stream-sync/bench-d.json", "gpu-call-2026-12-04-stream-sync/bench-e.json",
        "gpu-call-2026-12-04-counted/bench-g.json", "gpu-call-2026-12-04-counted/bench-i.json",
        "gpu-call-2026-12-04-counted/bench-j.json", "gpu-call-2026-12-04-cupti/bench-k.json",
        "gpu-call-2026-12-04-cupti/bench-m.json",
    ],
    "gpu-call-2026-12-04-cache/bench-nop.json": [f"gpu-call-2026-12-04-cache/bench-{c}.json" for c in "nop"],
    "gpu-call-2026-12-04-profile/bench-abc.json": [f"gpu-call-2026-12-04-profile/bench-{c}.json" for c in "abc"],
    "../h100-bench/gpu-call-2026-12-05-domains/bench-u.json": [
        f"../h100-bench/gpu-call-2026-12-05-domains/bench-u{c}.json" for c in "12"
    ],
    "../h100-bench/gpu-call-2026-12-05-records/bench-v.json": [
        f"../h100-bench/gpu-call-2026-12-05-records/bench-v{c}.json" for c in "123"
    ],
    "../h100-bench/gpu-call-2026-12-05-launch-records/bench-w.json": [
        f"../h100-bench/gpu-call-2026-12-05-launch-records/bench-w{c}.json" for c in "23"
    ],
    "../h100-bench/gpu-call-2026-12-06-cpu-built/bench-z.json": [
        f"../h100-bench/gpu-call-2026-12-06-cpu-built/bench-z{c}.json" for c in "12"
    ],
    "gpu-call-2026-12-06-records/bench-zh.json": [f"gpu-call-2026-12-06-records/bench-zh{c}.json" for c in "123"],
    "../h100-bench/gpu-call-2026-12-06-cupti-floor/bench-zr-h100.json": [
        f"../h100-bench/gpu-call-2026-12-06-cupti-floor/bench-zr{c}h.json" for c in "345"
    ],
    "../h100-bench/gpu-call-2026-12-06-cupti-settings/bench-zk-h100.json": [
        f"../h100-bench/gpu-call-2026-12-06-cupti-settings/bench-zk{c}.json" for c in "12"
    ],
    "../h100-bench/gpu-call-2026-12-06-cupti-shared/bench-zm-h100.json": [
        f"../h100-bench/gpu-call-2026-12-06-cupti-shared/bench-zm{c}.json" for c in "123"
    ],
}  # fmt: skip


# runs of 2026-12-04 that record no Score-P patch list pooled with runs that do (ARTIFACT.md G: "another build")
POOLED_UNRECORDED = {"bench-trace-scorep.json"}


@pytest.mark.parametrize("shipped", sorted(SHIPPED_MERGES))
def test_a_shipped_merge_is_the_merge_of_the_runs_shipped_with_it(tmp_path, shipped):
    out = tmp_path / "again.json"
    pool = ["--pool-unrecorded"] if shipped in POOLED_UNRECORDED else []
    proc = _merge(*(str(H200 / run) for run in SHIPPED_MERGES[shipped]), *pool, "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.read_bytes() == (H200 / shipped).read_bytes()


def test_a_round_with_an_error_gives_no_trace_size(bt):
    """A process of a round that failed may have stopped early: its smaller trace never lowers the figure."""
    rounds = [_round(0, [10.0], [11.0], trace_bytes=10_000), _round(1, [10.0], [11.0], trace_bytes=1_000)]
    rounds[1]["error"] = "r1-untraced: exited with status 1: killed"
    assert bt.summary.trace_figures(rounds, "scorep-launch", None)["trace_bytes_per_step"] == pytest.approx(1000.0)
    assert bt.summary.whole_round(rounds[0]) and not bt.summary.whole_round(rounds[1])


@pytest.mark.parametrize("bad", [{"8x70": {"untraced": [-1.0]}}, "x", {"8x70": {"untraced": "1"}}, {"8x70": [1.0]}])
def test_a_merge_input_with_damaged_step_figures_is_refused(bt, bad):
    """The per-step figures beside the times (faults, CPU, closing wait) are read by the summary: a round
    whose figures are not lists of non-negative numbers per configuration and mode is not merged."""
    doc = json.loads((ROOT / "expected/reference/h200-bench/gpu-call-2026-12-04-profile/bench-c.json").read_text())
    assert bt.merge.merge_input_problem(doc) is None
    doc["rounds"][0]["steps_sync_ms"] = bad
    assert bt.merge.merge_input_problem(doc) == (
        "round 0: 'steps_sync_ms' is not a list of non-negative numbers per configuration and mode"
    )


def test_the_printout_judges_the_default_mode_by_the_rule_of_the_documents(bt):
    """A run or merge ends with the default mode's targets, by the same rule as ARTIFACT.md's targets
    lines: the shipped merge of calls A, B and C gives the verdicts and intervals its block gives."""
    doc = json.loads((ROOT / "expected/reference/h200-bench/gpu-call-2026-12-04-profile/bench-abc.json").read_text())
    lines = bt.printout.target_lines(doc)
    assert lines[0].startswith("# targets of the default Score-P mode of this build (scorep-launch-chunk4m), its step over the")
    # a build with the records patch is judged on records mode, its default (call ZH's merge)
    zh = json.loads((ROOT / "expected/reference/h200-bench/gpu-call-2026-12-06-records/bench-zh.json").read_text())
    zh_lines = bt.printout.target_lines(zh)
    assert zh_lines[0].startswith("# targets of the default Score-P mode of this build (scorep-records-chunk4m)")
    assert "#   8x70: 1.156x over 32 rounds against <= 1.25x: met (95% interval of the median 1.13-1.22)" in zh_lines[3]
    assert lines[1].startswith("# met = the 95% interval of the median of the rounds lies at or below the bound")
    assert "#   8x70: 1.222x over 18 rounds against <= 1.25x: not established (95% interval of the median 1.19-1.27)" in lines
    assert "#   32x70: 1.168x over 18 rounds against <= 1.12x: not established (95% interval of the median 1.117-1.220)" in lines
    assert (
        "#   8x70: at most torch.profiler's cost, paired in 13 rounds: met (Score-P's ratio minus torch's: 95% interval of the "
        "median -0.27 to -0.10)" in lines
    )
    artifact = (ROOT / "ARTIFACT.md").read_text()
    block = artifact.split("<!-- generated:bench-trace-host-profile:begin -->")[1].split("<!-- generated:")[0]
    assert "8x70: 1.22x against <= 1.25x (not established: 95% interval of the median 1.19-1.27;" in block
    assert "32x70: 1.17x against <= 1.12x (not established: 95% interval of the median 1.117-1.220;" in block
    # too few rounds for an interval, and no default mode at all
    few = {"modes": [{"mode": "scorep-launch-chunk4m", "config": "8x70", "round_ratios": [[0, 1.1], [1, 1.2]]}]}
    assert bt.printout.target_lines(few)[3] == (
        "#   8x70: 1.150x over 2 rounds against <= 1.25x: not established (2 rounds, too few for a 95% interval of the median)"
    )
    assert bt.printout.target_lines({"modes": [{"mode": "torch", "config": "8x70", "round_ratios": [[0, 1.3]]}]}) == []
    # a merge in which one run's own rounds lie wholly above the bound: the pooled rounds alone would say met
    low = [[k, 1.10 + 0.01 * (k % 4)] for k in range(24)]
    high = [[24 + k, 1.30 + 0.01 * k] for k in range(6)]
    runs = [
        {"file": f"{x}.json", "date": "2026-12-04", "revision": x, "wall_s": 1.0, "rounds": n} for x, n in (("a", 24), ("b", 6))
    ]
    merged = {
        "modes": [{"mode": "scorep-launch-chunk4m", "config": "8x70", "round_ratios": low + high}],
        "merged_from": runs,
        "rounds": [{"round": k, "source": "a.json" if k < 24 else "b.json"} for k in range(30)],
    }
    assert bt.printout.target_lines(merged)[3] == (
        "#   8x70: 1.120x over 30 rounds against <= 1.25x: not established (95% interval of the median 1.11-1.13, but the "
        "interval of a run's own rounds lies on the other side (b.json 1.30-1.35))"
    )
    merged["rounds"][0].pop("source")  # a merge's round of no run: not judged, and why
    assert "not established (round 0 of the run is not attributed to one of its runs)" in bt.printout.target_lines(merged)[3]


def test_the_printout_sets_the_mode_beside_cupti_alone_and_its_bare_client_where_they_ran(bt):
    """Beside a ratio target the printout says where CUPTI alone lies against the same bound, and what the default
    mode adds to the bare client that takes the launches the same way (against 0), by the documents' rule (call ZF's
    merge, records mode); a run without those modes prints neither (call ZH's)."""
    zf = json.loads((ROOT / "expected/reference/h100-bench/gpu-call-2026-12-06-cupti-floor/bench-zr-h100.json").read_text())
    lines = bt.printout.target_lines(zf)
    assert lines[3:] == [
        "#   32x70: 1.165x over 58 rounds against <= 1.12x: missed (95% interval of the median 1.15-1.21)",
        "#   32x70: CUPTI alone (no Score-P) 1.137x over 58 rounds: not told from the bound (95% interval of the median "
        "1.119-1.154)",
        "#   32x70: Score-P beyond the bare client with the same launch records (cupti-launch-records), paired in 58 rounds: "
        "+0.056 of an untraced step, more than that client (the differences' 95% interval of the median 0.02-0.07)",
    ]
    zh = json.loads((ROOT / "expected/reference/h200-bench/gpu-call-2026-12-06-records/bench-zh.json").read_text())
    assert not any("CUPTI alone" in line or "bare client" in line for line in bt.printout.target_lines(zh))


ZF_RUN = ROOT / "expected/reference/h100-bench/gpu-call-2026-12-06-cupti-floor/bench-zr3h.json"


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda d: d["machine"].update(scorep_patches=[[], "a.patch"]), "'machine.scorep_patches' is not a list of patch"),
        (lambda d: d.update(machine="x"), "'machine' is not a record of the machine"),
        (lambda d: d["machine"].update(device=7), "'machine.device' is not a device name"),
        (lambda d: d.update(rounds=[]), "no rounds"),
    ],
)
def test_a_merge_input_the_documents_could_not_read_is_refused_with_exit_2(tmp_path, damage, message):
    """A tester's inputs: a machine record whose patches or device the documents pool runs by (a list of lists once
    gave a TypeError traceback), and a run without rounds, are refused as inputs, exit 2, nothing written."""
    doc = json.loads(ZF_RUN.read_text())
    damage(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "merged.json"
    proc = _merge(str(bad), str(ZF_RUN), "--json", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"bench-trace: {bad}: not a bench-trace output ({message}" in proc.stderr
    assert not out.exists()


def test_a_merge_input_nested_too_deeply_and_an_empty_json_path_are_refused(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    proc = _merge(str(deep), str(ZF_RUN))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"bench-trace: {deep}: not a bench-trace output (nested too deeply to be read)" in proc.stderr
    proc = _merge(str(ZF_RUN), "--json", "")  # once read as "no --json": exit 0, nothing written, nothing said
    assert proc.returncode == 2 and "--json: empty path: name the file or folder to write" in proc.stderr, proc.stderr


def _run_doc(path, untraced, traced, device="NVIDIA H100", patches=("a.patch",), **over):
    """A single run of the benchmark as a file: one round, a machine record and a run's identity."""
    machine = {"device": device, "scorep_patches": list(patches), "torch": "2.11", "cuda": "13.0"}
    ident = {"date": "2026-12-06T10:00:00", "revision": "abc1234", "wall_s": 100.0 + len(str(path))}
    return _doc(path, [_round(0, untraced, traced)], machine=machine, method="lockstep", **{**ident, **over})


@pytest.mark.parametrize(
    "other, said",
    [
        ({"device": "NVIDIA H200"}, "machine.device is 'NVIDIA H200', but"),
        ({"patches": ("a.patch", "b.patch")}, "machine.scorep_patches is ['a.patch', 'b.patch'], but"),
        ({"mode_settings": {"scorep-launch": {"SCOREP_CUDA_BUFFER_CHUNK": "8k"}}}, "its mode scorep-launch ran with"),
        ({"cpus": "2-7"}, "its processes ran pinned to CPUs '2-7', but"),
    ],
)
def test_merge_refuses_runs_of_another_card_build_or_mode_setting(tmp_path, other, said):
    """Rounds of an H100 and an H200, or of two Score-P builds, or of one mode run two ways are no one
    set-up's: pooled, their verdict would be a figure of neither."""
    settings = {"scorep-launch": {"SCOREP_CUDA_BUFFER_CHUNK": "4M"}}
    a = _run_doc(tmp_path / "a.json", [10.0] * 3, [11.0] * 3, mode_settings=settings)
    b = _run_doc(tmp_path / "bb.json", [10.0] * 3, [12.0] * 3, **{"mode_settings": settings, **other})
    out = tmp_path / "m.json"
    proc = _merge(a, b, "--json", str(out))
    assert proc.returncode == 2 and said in proc.stderr and "cannot be pooled" in proc.stderr, proc.stderr
    assert not out.exists() and "Traceback" not in proc.stderr
    c = _run_doc(tmp_path / "ccc.json", [10.0] * 3, [13.0] * 3, mode_settings=settings)
    assert _merge(a, c, "--json", str(out)).returncode == 0  # the same set-up: merged, its settings kept
    assert json.loads(out.read_text())["mode_settings"] == settings


def test_merge_refuses_a_copy_of_a_run_cut_or_rescaled_and_rounds_of_another_length(tmp_path):
    """Only identical bytes or step times were found before: a copy with one step less, or every time x 1.000001,
    counted as a second run and turned "not established" into "met"."""
    a = _run_doc(tmp_path / "a.json", [10.0, 10.0, 10.0], [11.0, 11.0, 11.0])
    doc = json.loads(Path(a).read_text())
    for times in doc["rounds"][0]["steps_ms"]["8x70"].values():
        times[:] = [t * 1.000001 for t in times]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    proc = _merge(a, str(tmp_path / "b.json"))
    assert proc.returncode == 2 and "b.json: its round 0 is also round 0 of" in proc.stderr
    assert "(the same step times, or all of them scaled by one factor)" in proc.stderr
    doc["rounds"][0]["steps_ms"]["8x70"]["untraced"][0] = 10.5  # one time edited as well: its run still names it
    (tmp_path / "b.json").write_text(json.dumps(doc))
    proc = _merge(a, str(tmp_path / "b.json"))
    assert proc.returncode == 2 and "b.json: the same run as" in proc.stderr and "is not a second run" in proc.stderr
    for times in doc["rounds"][0]["steps_ms"]["8x70"].values():
        del times[-1]  # every list one short: still paired, yet no turn of this run measured 2 steps
    doc["wall_s"] = 7.0
    (tmp_path / "b.json").write_text(json.dumps(doc))
    proc = _merge(a, str(tmp_path / "b.json"))
    assert proc.returncode == 2 and "round 0: 2 step times of untraced at 8x70, but its turns measure 3 steps" in proc.stderr
    doc["rounds"][0]["error"] = "r0-untraced: no reply within 300 s"  # a round cut short says so: merged, not paired
    (tmp_path / "b.json").write_text(json.dumps(doc))
    proc = _merge(a, str(tmp_path / "b.json"))
    assert proc.returncode == 0, proc.stderr


def test_merge_refuses_a_copy_cut_to_fewer_rounds_and_rescaled_by_its_wall_time(tmp_path):
    """A reviewer's case: a copy cut to fewer rounds changes the number of rounds, rescaling changes every step time;
    its date, revision and wall time still name the run it was copied from. A second run without a machine record
    that names another card in its own device field is not pooled either."""
    rounds = [_round(i, [10.0] * 3, [11.0 + i / 10] * 3) for i in range(4)]
    a = _doc(tmp_path / "a.json", rounds, date="2026-12-06", revision="abc1234", wall_s=480.1, device="NVIDIA H200")
    doc = json.loads(Path(a).read_text())
    doc["rounds"] = doc["rounds"][:2]
    for r in doc["rounds"]:
        for times in r["steps_ms"]["8x70"].values():
            times[:] = [t * 1.001 for t in times]
    (tmp_path / "cut.json").write_text(json.dumps(doc))
    proc = _merge(a, str(tmp_path / "cut.json"))
    assert proc.returncode == 2 and "cut.json: its round 0 is also round 0 of" in proc.stderr
    doc["rounds"][1]["steps_ms"]["8x70"]["untraced"][0] = 10.5  # one time edited as well: its run still names it
    (tmp_path / "cut.json").write_text(json.dumps(doc))
    doc2 = json.loads((tmp_path / "cut.json").read_text())
    doc2["rounds"] = doc2["rounds"][1:]
    (tmp_path / "cut.json").write_text(json.dumps(doc2))
    proc = _merge(a, str(tmp_path / "cut.json"))
    assert proc.returncode == 2 and "cut.json: the same run as a.json (its date, revision, wall_s)" in proc.stderr
    other = _doc(tmp_path / "other.json", [_round(0, [9.0] * 3, [9.5] * 3)], date="2026-12-07", wall_s=300.0, device="H100")
    proc = _merge(a, other)
    assert proc.returncode == 2 and "machine.device is 'H100', but" in proc.stderr, proc.stderr


def test_a_round_whose_traced_process_failed_gives_no_ratio(bt, tmp_path):
    """A process that exited with a status other than 0 (even after its last step, as a Score-P that fails to
    write its trace) measured no set-up that works: its steps feed no ratio, and the verdict says so."""
    rounds = [_round(i, [10.0] * 3, [10.5] * 3) for i in range(7)]
    rounds[6]["processes"]["scorep-launch"]["exit_status"] = -11
    rounds[6]["error"] = "a process exited with a status other than 0"
    row = next(r for r in bt.summary.summarise(rounds, ["8x70"]) if r["mode"] == "scorep-launch")
    assert row["rounds"] == 6 and [k for k, _ in row["round_ratios"]] == [0, 1, 2, 3, 4, 5]


def test_merge_writes_no_file_it_did_not_write_and_shows_a_file_s_controls_escaped(tmp_path):
    a = _run_doc(tmp_path / "a.json", [10.0] * 3, [11.0] * 3)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    proc = _merge(a, "--json", str(notes))
    assert (
        proc.returncode == 2 and "--json: exists (not a JSON file); only an earlier bench-trace merge is replaced" in proc.stderr
    )
    assert notes.read_text() == "my notes\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = _merge(a, "--json", str(fifo))
    assert proc.returncode == 2 and "not a regular file" in proc.stderr and stat.S_ISFIFO(fifo.stat().st_mode)
    earlier = tmp_path / "earlier.json"
    assert _merge(a, "--json", str(earlier)).returncode == 0
    assert _merge(a, "--json", str(earlier)).returncode == 0  # its own earlier output is replaced
    run = tmp_path / "run.json"  # a run's own measurements, with every key a bench-trace output has: kept
    run.write_text(json.dumps({**json.loads(Path(a).read_text()), "modes": []}))
    before = run.read_bytes()
    proc = _merge(str(earlier), "--json", str(run))
    assert proc.returncode == 2 and "(a run's own measurements, which no command makes again)" in proc.stderr
    assert run.read_bytes() == before
    doc = json.loads(Path(a).read_text())
    doc["counts"] = {"\x1b[31mRED\u202eevil": {"launches": "x", "kernels": 1}}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    proc = _merge(str(tmp_path / "c.json"))
    assert proc.returncode == 2 and "\\x1b[31mRED\\u202eevil" in proc.stderr and "\x1b" not in proc.stderr
    (tmp_path / "twice.json").write_text(Path(a).read_text()[:-1] + ', "rounds": []}')
    proc = _merge(str(tmp_path / "twice.json"))
    assert proc.returncode == 2 and "the key 'rounds' appears twice" in proc.stderr
    proc = _merge("/dev/zero")
    assert proc.returncode == 2 and "/dev/zero: is a device, not a regular file" in proc.stderr
    proc = _merge(a, "--rounds", "3", "--modes", "untraced")
    assert proc.returncode == 2 and "--modes, --rounds apply to a measurement, not to a merge" in proc.stderr


def test_a_measurement_replaces_an_earlier_output_but_no_other_file(bt, tmp_path):
    """``make bench-trace`` run again replaces its earlier bench-trace.json; a merge replaces only a merge (a run's own
    measurements may be what a shipped merge names); neither replaces a file no bench-trace wrote."""
    run = {"method": "lockstep", "configs": ["8x70"], "modes": [], "rounds": []}
    merged = {**run, "merged_from": [{"file": "a.json"}]}
    assert bt.parent.bench_output_problem(run, merging=False) is None
    assert bt.parent.bench_output_problem(run, merging=True) == "a run's own measurements, which no command makes again"
    assert bt.parent.bench_output_problem(merged, merging=True) is None
    assert bt.parent.bench_output_problem({**run, "method": 0}, merging=False) == "a JSON file that is not a bench-trace output"
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": 1}\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT / "artifact")}
    argv = [PYTHON, str(ROOT / "scripts" / "bench_trace.py"), "--device", "cpu", "--modes", "untraced", "--json", str(notes)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "only an earlier bench-trace output is replaced" in proc.stderr
    assert notes.read_text() == '{"mine": 1}\n'
