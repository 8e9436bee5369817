"""Bad input to `sweep` and `busbw`: each class refused with exit status 2 and a message naming the
file or option, no traceback, and nothing written or changed (one completed CPU sweep, copied).

- the records the sweep reads back (manifest.json, summary.json, busbw-ws<N>.json) must be JSON
  objects, and a completed run whose options cannot be read is refused, never reused;
- the train options after '--' are read by train's own parser: ``--data=X`` and ``--task=X`` count,
  a malformed list is refused before anything is written;
- the SLURM settings (file, options, cluster) are checked before anything is written;
- ``busbw --sizes-mb`` lies between one float32 element and 4 GiB.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cliprocess import assert_refused, cli_process, file_digests
from dnabert_scaling.errors import ArtifactError

LOCAL = ["sweep", "--device", "cpu", "--tracer", "none", "--no-busbw", "--repeats", "1", "--skip-plain-baseline"]
TRAIN = ["--model", "tiny", "--steps", "2", "--warmup-steps", "0", "--batch-size", "4"]


@pytest.fixture(scope="module")
def completed(tmp_path_factory, tiny_task) -> tuple[Path, list]:
    """One completed CPU sweep (world size 1, one untraced run) and the arguments that made it; its
    data given as ``--data=PATH`` in the train options."""
    out = tmp_path_factory.mktemp("sweep") / "swA"
    args = [*LOCAL, "--gpus", "1", "--out", out, "--", *TRAIN, f"--data={tiny_task}"]
    proc = cli_process(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, args


def _copy(completed, tmp_path: Path) -> tuple[Path, list]:
    out, args = completed
    copy = tmp_path / "swA"
    shutil.copytree(out, copy)
    return copy, [copy if a == out else a for a in args]


# --- 2: the train options, read by train's parser ------------------------------------------------


def test_data_with_equals_is_the_data_every_run_trains_on(completed, tiny_task):
    out, _ = completed
    assert not (out / "synthetic-data").exists(), "the user's --data=PATH was replaced by a synthetic task"
    sweep = json.loads((out / "sweep.json").read_text())
    assert [a for a in sweep["train_args"] if a.startswith("--data")] == [f"--data={tiny_task}"], sweep["train_args"]
    assert sweep["fallbacks"] == []
    config = json.loads((out / "ws1-none-r0" / "config.json").read_text())
    assert config["args"]["data"] == str(tiny_task)


def test_the_same_options_spelled_otherwise_reuse_the_runs(completed, tmp_path):
    copy, args = _copy(completed, tmp_path)
    at = args.index("--steps")
    respelled = [*args[:at], "--steps=2", *args[at + 2 :], "--seed", "42"]  # 42: train's default
    proc = cli_process(respelled)
    assert proc.returncode == 0 and "ws1-none-r0: skipped already complete" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--task=prom_core_all"], "--task prom_300_all -> prom_core_all"),
        (["--steps=3"], "--steps 2 -> 3"),
        (["--data=/elsewhere"], "--data: GUE task folder does not exist"),
        (["--tracer=torch"], "--tracer is set by the sweep for each run"),
        (["--dat", "/elsewhere"], "--data: GUE task folder does not exist"),
        (["--out=x"], "--out is set by the sweep for each run"),
        (["--device=auto"], "the train options say --device auto but the sweep runs on cpu"),
        (["--task"], "the train options after '--': argument --task: expected one argument"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--steps", "0"], "argument --steps: must"),
    ],
)
def test_train_options_are_read_as_train_reads_them(completed, tmp_path, extra, message):
    copy, args = _copy(completed, tmp_path)
    before = file_digests(copy)
    assert_refused(cli_process([*args, *extra]), message)
    assert file_digests(copy) == before


def test_a_malformed_train_option_list_writes_nothing(tmp_path):
    out = tmp_path / "new"
    proc = cli_process([*LOCAL, "--gpus", "1", "--out", out, "--", "--model", "tiny", "--task"])
    assert_refused(proc, "argument --task: expected one argument")
    assert not out.exists() and not list(tmp_path.iterdir())


def test_data_given_twice_is_refused(tmp_path, tiny_task):
    out = tmp_path / "new"
    proc = cli_process([*LOCAL, "--gpus", "1", "--data", tiny_task, "--out", out, "--", "--model", "tiny", f"--data={tiny_task}"])
    assert_refused(proc, "--data is given twice")
    assert not out.exists()


def test_the_synthetic_task_follows_the_parsed_task(tmp_path, monkeypatch):
    from dnabert_scaling.run.sweep.driver import shared_data
    from dnabert_scaling.run.sweep.spec import TrainOptions

    monkeypatch.delenv("DNABERT_SCALING_GUE", raising=False)
    args, folder = shared_data(tmp_path / "o", TrainOptions.parse(["--task=prom_core_all"]), None)
    assert folder == tmp_path / "o" / "synthetic-data" / "prom_core_all" and args == ["--data", str(folder.resolve())]
    assert shared_data(tmp_path / "o", TrainOptions.parse(["--synth"]), None) == ([], None)
    assert not (tmp_path / "o").exists(), "deciding writes nothing"
    with pytest.raises(ArtifactError, match="'../up': not a GUE task"):
        shared_data(tmp_path / "o", TrainOptions.parse(["--task", "../up"]), None)


# --- 1 and 4: the records read back -------------------------------------------------------------


def _set_train_args(path: Path, value) -> None:
    record = json.loads(path.read_text())
    if value is KeyError:
        del record["train_args"]
    else:
        record["train_args"] = value
    path.write_text(json.dumps(record))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda run: _set_train_args(run / "manifest.json", "whatever"), "train_args must be the list of options"),
        (lambda run: _set_train_args(run / "manifest.json", KeyError), "lacks train_args"),
        (lambda run: _set_train_args(run / "manifest.json", ["--no-such-option"]), "train_args: unrecognized arguments"),
        (lambda run: (run / "manifest.json").unlink(), "a completed run without manifest.json"),
    ],
    ids=["not-a-list", "absent", "unparseable", "no-manifest"],
)
def test_a_completed_run_with_unknown_options_is_refused(completed, tmp_path, damage, message):
    """Neither reused (it might have been trained otherwise) nor silently replaced: the user moves it."""
    copy, args = _copy(completed, tmp_path)
    damage(copy / "ws1-none-r0")
    before = file_digests(copy)
    steps3 = [*args[:-1], "--steps", "3", args[-1]]
    for attempt in (args, steps3):
        assert_refused(cli_process(attempt), message, "move the run folder away or use --fresh")
        assert file_digests(copy) == before


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("ws1-none-r0/manifest.json", "[1, 2]", "must hold a JSON object, not a JSON list"),
        ("ws1-none-r0/summary.json", "[1, 2]", "must hold a JSON object, not a JSON list"),
        ("ws1-none-r0/summary.json", '{"status": "ok", "status": "failed"}', "appears twice"),
        ("ws1-none-r0/manifest.json", "{", "cannot be read back as JSON"),
        ("ws2-none-r0/manifest.json", '"failed"', "must hold a JSON object, not a JSON str"),
        ("busbw-ws2.json", "[]", "must hold a JSON object, not a JSON list"),
    ],
)
def test_records_read_back_must_be_json_objects(completed, tmp_path, name, text, message):
    copy, args = _copy(completed, tmp_path)
    (copy / name).parent.mkdir(exist_ok=True)
    (copy / name).write_text(text)
    before = file_digests(copy)
    assert_refused(cli_process(args), copy / name, message)
    assert file_digests(copy) == before


def test_a_manifest_against_its_contract_is_refused(completed, tmp_path):
    copy, args = _copy(completed, tmp_path)
    manifest = copy / "ws1-none-r0" / "manifest.json"
    manifest.write_text(json.dumps(dict(json.loads(manifest.read_text()), world_size="1")))
    assert_refused(cli_process(args), manifest, "world_size must be a JSON integer")


# --- 3 and 5: the SLURM settings, before anything is written ----------------------------------------


@pytest.fixture
def no_controller(tmp_path) -> dict:
    """An environment whose SLURM client commands find no controller."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("scontrol", "sinfo", "sbatch"):
        (bin_dir / tool).write_text('#!/bin/sh\necho "Slurmctld(primary) at vm is DOWN"\nexit 1\n')
        (bin_dir / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "DNABERT_SLURM_CONFIG"}
    return {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}"}


@pytest.mark.parametrize(
    "settings, options, message",
    [
        ("MAX_NODES=0x\n", [], "MAX_NODES (FILE:1): '0x' is not a positive integer"),
        ("GPUS_PER_NODE=\u00b2\n", [], "GPUS_PER_NODE (FILE:1): '\u00b2' is not a non-negative integer"),
        ("NO_CONTAINER=1\n", ["--time-limit", "banana"], "--time-limit: 'banana' is not a SLURM time limit"),
        ("NO_CONTAINER=1\nTIME=1:00:00:00:00\n", [], "TIME (FILE:2): '1:00:00:00:00' is not a SLURM time limit"),
        ("NO_CONTAINER=1\n", ["--mem", "lots"], "--mem: 'lots' is not a SLURM memory size"),
        ("NO_CONTAINER=1\n", [], "the SLURM controller does not answer"),
        ("NO_CONTAINER=1\n", ["--max-nodes", "0"], "argument --max-nodes: must"),
    ],
    ids=["max-nodes", "superscript", "time-option", "time-file", "mem", "controller", "max-nodes-option"],
)
def test_slurm_settings_are_checked_before_anything_is_written(completed, tmp_path, no_controller, settings, options, message):
    conf = tmp_path / "site.conf"
    conf.write_text(settings, encoding="utf-8")
    message = message.replace("FILE", str(conf))
    slurm = ["--executor", "slurm", "--slurm-config", conf, *options]
    copy, args = _copy(completed, tmp_path)
    sweep_json = (copy / "sweep.json").read_bytes()
    before = file_digests(copy)
    # an existing sweep folder: sweep.json (world size 1) is not replaced by one of world sizes 1,2
    at, dash = args.index("--gpus"), args.index("--")
    proc = cli_process([*args[: at + 1], "1,2", *args[at + 2 : dash], *slurm, *args[dash:]], env=no_controller)
    assert_refused(proc, message)
    assert file_digests(copy) == before and (copy / "sweep.json").read_bytes() == sweep_json
    # a new --out folder is not created
    new = tmp_path / "new"
    assert_refused(
        cli_process([*LOCAL, "--gpus", "1,2", "--out", new, *slurm, "--", "--model", "tiny"], env=no_controller), message
    )
    assert not new.exists()


def test_slurm_numbers_are_ascii_digits(tmp_path):
    from dnabert_scaling.run.slurm import gres_gpus, load_config
    from dnabert_scaling.run.slurm.config import ascii_int

    assert ascii_int("12") == 12 and ascii_int("\u00b2") is None and ascii_int("\u0661") is None and ascii_int("") is None
    assert gres_gpus("gpu:\u00b2") == 0 and gres_gpus("gpu:a100:4") == 4
    for key in ("GPUS_PER_NODE", "MAX_NODES", "CPUS_PER_TASK"):
        conf = tmp_path / f"{key}.conf"
        conf.write_text(f"{key}=\u0664\n", encoding="utf-8")
        with pytest.raises(ArtifactError, match=f"{key} .*is not a"):
            load_config(conf)


# --- 6: busbw message sizes ---------------------------------------------------------------------


@pytest.mark.parametrize("sizes", ["1e9", "1e-9", "1,5000", "0", "nan"])
def test_busbw_message_sizes_have_a_plausible_range(tmp_path, sizes):
    out = tmp_path / "busbw.json"
    proc = cli_process(["busbw", "--out", out, "--device", "cpu", "--sizes-mb", sizes])
    assert_refused(proc, "argument --sizes-mb")
    if sizes not in ("0", "nan"):
        assert "between 3.814697266e-06 MiB (one float32 element, 4 bytes) and 4096 MiB" in proc.stderr, proc.stderr
    assert not out.exists()


def test_busbw_message_sizes_in_range_are_accepted():
    from dnabert_scaling.run.busbw import message_sizes_mb

    assert message_sizes_mb("1,25") == [1.0, 25.0]
    assert message_sizes_mb("3.814697266e-06,4096") == [3.814697266e-06, 4096.0]
