"""Bad input to ``train`` and ``synth-data``: a clear error (exit 2, the file or option named, no
traceback), nothing read deleted or overwritten, and the model's config recorded as used."""

import hashlib
import json
import subprocess

import pytest

from conftest import PYTHON
from dnabert_scaling.cli import main
from dnabert_scaling.errors import ArtifactError

TRAIN = ["train", "--model", "tiny", "--synthetic", "--steps", "2", "--warmup-steps", "0", "--no-progress"]


def _err(capsys, argv):
    """Exit status and stderr of ``dnabert-scaling ARGV`` run in this process."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def _sub(argv, timeout=180, cwd=None):
    proc = subprocess.run([PYTHON, "-m", "dnabert_scaling", *argv], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert "Traceback" not in proc.stderr
    return proc


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _tiny_config(path):
    from dnabert_scaling.run.workload.model import resolve_config

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(resolve_config("tiny")))
    return path


def _tiny_weights(folder):
    import torch

    from dnabert_scaling.run.workload.model import build_model

    _tiny_config(folder / "config.json")
    torch.save(build_model("tiny", num_labels=2).state_dict(), folder / "pytorch_model.bin")
    return folder


# --- 1. an --out over a model config or checkpoint --------------------------------------------------


def test_out_holding_the_model_config_is_refused_before_anything_is_deleted(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tiny_config(tmp_path / "p/config.json")
    before = _digest(tmp_path / "p")
    for model, out in (("p/config.json", "p"), ("p", "p"), ("p", "p/run"), ("p/config.json", "p/config.json")):
        code, err = _err(capsys, [*TRAIN, "--model", model, "--out", out, "--overwrite"])
        assert code == 2 and "--out" in err and "--model" in err, err
        assert _digest(tmp_path / "p") == before
    assert not (tmp_path / "p/run").exists()
    # beside the config (not over it) is fine: the config is read, the run written next to it
    assert _sub([*TRAIN, "--model", "p/config.json", "--out", "p/run"], cwd=tmp_path).returncode == 0
    assert _digest(tmp_path / "p") == {**before, **_digest(tmp_path / "p")} and (tmp_path / "p/run/summary.json").is_file()


def test_out_holding_the_weights_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tiny_weights(tmp_path / "X/w")
    before = _digest(tmp_path / "X")
    for out in ("X", "X/w", "X/w/run"):
        code, err = _err(capsys, [*TRAIN, "--weights", "X/w", "--out", out, "--overwrite"])
        assert code == 2 and "that input is --weights" in err, err
    monkeypatch.setenv("DNABERT_SCALING_WEIGHTS", str(tmp_path / "X/w"))
    code, err = _err(capsys, [*TRAIN, "--out", "X", "--overwrite"])
    assert code == 2 and "that input is $DNABERT_SCALING_WEIGHTS" in err, err
    assert _digest(tmp_path / "X") == before


def test_missing_weights_folder_is_refused(tmp_path, capsys):
    code, err = _err(capsys, [*TRAIN, "--weights", str(tmp_path / "nope"), "--out", str(tmp_path / "r")])
    assert code == 2 and "--weights: weights folder does not exist" in err
    assert not (tmp_path / "r").exists()


# --- 2. synth-data: impossible motif lengths, refused before --out exists ------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--like", "covid", "--motif-length", "1"], "only 4 distinct motifs of that length, fewer than the 9 classes"),
        (["--like", "prom_core_all", "--motif-length", "71"], "must be within 1..70"),
        (["--like", "nope"], "--like: unknown GUE task shape 'nope'"),
        (["--rows", "1,2"], "--rows must be three positive integers"),
        (["--rows", "1,1,1"], "--rows 1,1,1: train and dev need at least 2 rows each, one per class of prom_300_all"),
        (["--like", "covid", "--rows", "100,8,1"], "train and dev need at least 9 rows each, one per class of covid"),
    ],
)
def test_synth_data_impossible_combinations(tmp_path, capsys, extra, message):
    code, err = _err(capsys, ["synth-data", "--out", str(tmp_path / "s"), *extra])
    assert code == 2 and message in err, err
    assert not (tmp_path / "s").exists()


def test_synthetic_motifs_never_loop_forever():
    from dnabert_scaling.run.workload.data import synthetic_motifs

    assert len(set(synthetic_motifs(9, 2, seed=1))) == 9
    with pytest.raises(ArtifactError, match="no 9 distinct DNA motifs of length 1"):
        synthetic_motifs(9, 1, seed=1)


# --- 3, 4, 7. the task's labels and synthetic.json ------------------------------------------------


def _task(folder, train, dev="ACGTACGT,0\nACGTAC,1\n", meta=None):
    folder.mkdir(parents=True)
    (folder / "train.csv").write_text("sequence,label\n" + train)
    (folder / "dev.csv").write_text("sequence,label\n" + dev)
    if meta is not None:
        (folder / "synthetic.json").write_text(meta)
    return folder


@pytest.mark.parametrize(
    "name, train, dev, message",
    [
        (
            "mine",
            "ACGTACGT,0\nACGTAC,0\n",
            "ACGT,0\n",
            "every row of train.csv and dev.csv has label 0: a classification task needs at least 2",
        ),
        ("mine", "ACGTACGT,0\nACGTAC,1\nACGT,99999999999\n", None, "train.csv: line 4: label 99999999999 is out of range"),
        ("mine", "ACGTACGT,0\nACGTAC,3\n", None, "train.csv: line 3: label 3 is out of range"),
        (
            "prom_core_all",
            "ACGTACGT,0\nACGTAC,1\nACGT,5\n",
            None,
            "line 4: label 5 is out of range: GUE task prom_core_all has 2 classes",
        ),
        ("prom_core_all", "ACGTACGT,0\nACGTAC,1\n", "ACGT,1\nACGT,2\n", "dev.csv: line 3: label 2 is out of range"),
    ],
)
def test_labels_must_be_the_tasks_classes(tmp_path, name, train, dev, message):
    from dnabert_scaling.run.workload.data import load_task

    folder = _task(tmp_path / name, train, *([dev] if dev else []))
    with pytest.raises(ArtifactError, match=message):
        load_task(folder, task_name=name)


def test_labels_of_a_task_with_fewer_classes_present_than_the_table_says(tmp_path):
    from dnabert_scaling.run.workload.data import load_task

    folder = _task(tmp_path / "covid", "ACGTACGT,0\nACGTAC,3\n", "ACGT,1\n")
    assert load_task(folder, task_name="covid").num_labels == 9  # the head has the task's 9 classes


def test_bad_synthetic_json_names_the_file(tmp_path):
    from dnabert_scaling.run.workload.data import load_task

    folder = _task(tmp_path / "d", "ACGTACGT,0\nACGTAC,1\n", meta="{bad")
    with pytest.raises(ArtifactError, match=r"d/synthetic.json: not valid JSON"):
        load_task(folder)
    (folder / "synthetic.json").write_text("[1]")
    with pytest.raises(ArtifactError, match="synthetic.json: must be a JSON object"):
        load_task(folder)


def test_bad_task_data_exits_2_from_train(tmp_path):
    """End to end (a process): exit 2, file and line named, and the run folder never claimed (a bad CSV
    is found before anything is written, so a rerun after the fix needs no --overwrite)."""
    bad_label = _task(tmp_path / "d1", "ACGTACGT,0\nACGTAC,1\nACGT,99999999999\n")
    one_class = _task(tmp_path / "d2", "ACGTACGT,0\nACGTAC,0\n", "ACGT,0\n")
    bad_meta = _task(tmp_path / "d3", "ACGTACGT,0\nACGTAC,1\n", meta="{bad")
    for folder, message in (
        (bad_label, "train.csv: line 4: label 99999999999 is out of range"),
        (one_class, "a classification task needs at least 2 classes"),
        (bad_meta, "synthetic.json: not valid JSON"),
    ):
        argv = [a for a in TRAIN if a != "--synthetic"]
        out = tmp_path / f"run-{folder.name}"
        proc = _sub([*argv, "--data", str(folder), "--out", str(out)])
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
        assert not out.exists(), sorted(p.name for p in out.rglob("*"))


def test_bad_task_data_with_overwrite_keeps_the_earlier_run(tmp_path, capsys):
    """--overwrite over an earlier run, with a task whose CSV is bad: refused before the earlier run's
    files are deleted."""
    out = tmp_path / "run"
    out.mkdir()
    earlier = out / "summary.json"
    earlier.write_text('{"earlier": true}')
    bad = _task(tmp_path / "bad", "ACGTACGT,0\nACGTXX,1\n")
    argv = [a for a in TRAIN if a != "--synthetic"]
    code, err = _err(capsys, [*argv, "--data", str(bad), "--out", str(out), "--overwrite"])
    assert code == 2 and "train.csv: line 3: sequence has character 'X'" in err, err
    assert earlier.read_text() == '{"earlier": true}' and sorted(p.name for p in out.iterdir()) == ["summary.json"]


# --- 5. the summary records the config the weights brought -----------------------------------------


def test_summary_records_the_weights_config_and_the_mismatch(tmp_path):
    weights = _tiny_weights(tmp_path / "w")
    argv = [a for a in TRAIN if a not in ("--model", "tiny")]  # --model stays at its default, base
    proc = _sub([*argv, "--weights", str(weights), "--no-ddp", "--out", str(tmp_path / "run")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["model"] == "tiny" and summary["weights"]["config"] == "tiny"
    mismatch = [f for f in summary["fallbacks"] if f["what"] == "model"]
    assert len(mismatch) == 1 and "--model base names another architecture" in mismatch[0]["reason"]


# --- 6. impossible model configs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_hidden_layers": -1}, "key 'num_hidden_layers': must be a whole number of at least 1, not -1"),
        ({"num_attention_heads": 0}, "key 'num_attention_heads': must be a whole number of at least 1, not 0"),
        ({"hidden_size": "128"}, "key 'hidden_size': must be a whole number of at least 1, not '128'"),
        ({"hidden_size": 128.0}, "key 'hidden_size': must be a whole number of at least 1, not 128.0"),
        ({"hidden_size": True}, "key 'hidden_size': must be a whole number"),
        ({"num_attention_heads": 3}, "key 'hidden_size': 128 is not a multiple of num_attention_heads 3"),
        ({"hidden_dropout_prob": 2}, "key 'hidden_dropout_prob': must be a dropout probability within 0..1"),
        ({"layer_norm_eps": 0}, "key 'layer_norm_eps': must be a number greater than 0"),
        ({"pad_token_id": 5000}, "key 'pad_token_id': must be a token id within 0..4095"),
        ({"vocab_size": 10}, "key 'vocab_size': 10 is smaller than the tokenizer's 4096 tokens"),
        ({"hidden_size": 10**6}, "model config is too large"),
    ],
)
def test_impossible_model_config_is_refused(tmp_path, capsys, change, message):
    cfg = json.loads(_tiny_config(tmp_path / "cfg.json").read_text())
    (tmp_path / "cfg.json").write_text(json.dumps({**cfg, **change}))
    code, err = _err(capsys, [*TRAIN, "--model", str(tmp_path / "cfg.json"), "--out", str(tmp_path / "r")])
    assert code == 2 and "cfg.json" in err and message in err, err
    assert not (tmp_path / "r").exists()


def test_impossible_weights_config_is_refused(tmp_path, capsys):
    weights = _tiny_weights(tmp_path / "w")
    cfg = json.loads((weights / "config.json").read_text())
    (weights / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 0}))
    code, err = _err(capsys, [*TRAIN, "--weights", str(weights), "--out", str(tmp_path / "r")])
    assert code == 2 and "w/config.json: key 'num_hidden_layers'" in err, err


# --- 8. option ranges ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--seed", "99999999999999999999", "must be within 0..4294967295"),
        ("--seed", "-1", "must be within 0..4294967295"),
        ("--lr", "1e300", "must be greater than 0 and at most 3.4e+38"),
        ("--lr", "0", "must be greater than 0 and at most 3.4e+38"),
        ("--lr", "nan", "'nan' is not a finite number"),
        ("--dist-timeout", "1e-300", "must be within 1..604800"),
        ("--dist-timeout", "1e300", "must be within 1..604800"),
        ("--weight-decay", "1e300", "must be within 0..1"),
        ("--bucket-cap-mb", "1e300", "must be greater than 0 and at most 1000000"),
        ("--max-grad-norm", "0", "must be greater than 0"),
        ("--max-grad-norm", "inf", "'inf' is not a finite number"),
        ("--steps", "99999999999999999999", "must be within 1..1000000000"),
        ("--warmup-steps", "-1", "must be within 0..1000000000"),
        ("--lr-warmup-steps", "1e3", "'1e3' is not an integer"),
        ("--batch-size", "0", "must be within 1..1000000000"),
    ],
)
def test_option_ranges_are_argparse_errors(tmp_path, capsys, option, value, message):
    code, err = _err(capsys, [*TRAIN, "--out", str(tmp_path / "r"), f"{option}={value}"])
    assert code == 2 and f"argument {option}: {message}" in err, err
    assert not (tmp_path / "r").exists()


def test_synth_data_does_not_take_over_a_foreign_synthetic_json(tmp_path, capsys):
    """A tester's loss: the existing-task check looked at the three CSV files only, so a synthetic.json of someone
    else's in --out was replaced without --force."""
    out = tmp_path / "meta"
    out.mkdir()
    (out / "synthetic.json").write_text('{"mine": 1}')
    code, err = _err(capsys, ["synth-data", "--out", str(out), "--rows", "20,4,4"])
    assert code == 2 and "already holds a task (pass --force to overwrite)" in err, err
    assert (out / "synthetic.json").read_text() == '{"mine": 1}' and sorted(p.name for p in out.iterdir()) == ["synthetic.json"]
