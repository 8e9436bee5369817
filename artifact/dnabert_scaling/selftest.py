"""``dnabert-scaling selftest``: a quick end-to-end check of this installation (about a minute).

It checks, in order: the tokenizer (the model card's 17 ids), the port's numerics against the
shipped golden vectors of the released code (fp32, sdpa and eager), a two-step training run in
a subprocess (data, model, loop, summary), and whether Score-P and a GPU are usable here. Used by
the container's ``%test``; prints one line per check and exits non-zero when one fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from dnabert_scaling.layout import RunLayout

MODEL_CARD_SEQ = "ACGTAGCATCGGATCTATCTATCGACACTTGGTTATCGATCTACGAGCATCTCGTTAGC"
MODEL_CARD_IDS = [1, 5, 194, 32, 757, 1239, 2092, 294, 24, 359, 88, 93, 32, 75, 77, 19, 2]


class CheckFailed(Exception):
    """A check's finding: raised by ``_require``, never an ``assert``, which ``python -O`` would drop (and every
    check would then pass)."""


def _require(ok: bool, why: str) -> None:
    if not ok:
        raise CheckFailed(why)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-train", action="store_true", help="skip the two-step training run")


def _tokenizer() -> str:
    from dnabert_scaling.run.workload.tokenizer import load_tokenizer

    ids = load_tokenizer()(MODEL_CARD_SEQ)["input_ids"]
    _require(ids == MODEL_CARD_IDS, f"model card example tokenizes to {ids}")
    return "17 ids of the model card example"


def _golden() -> str:
    import torch
    from safetensors.torch import load_file

    from dnabert_scaling.run.workload.model import build_model

    folder = Path(str(resources.files("dnabert_scaling").joinpath("resources/golden")))
    io = load_file(str(folder / "io.safetensors"))
    worst = 0.0
    for attention in ("sdpa", "eager", "unpad"):
        model = build_model(folder / "config.json", attention=attention)
        model.load_state_dict(load_file(str(folder / "state_dict.safetensors")))
        model.eval()
        with torch.no_grad():
            out = model(io["input_ids"], io["attention_mask"])
        err = max(
            float((out.logits - io["logits"]).abs().max()), float((out.last_hidden_state - io["last_hidden_state"]).abs().max())
        )
        _require(err < 1e-5, f"{attention}: max |difference| to the released code's outputs is {err:.2e}")
        worst = max(worst, err)
    return f"port matches the released code's golden outputs (max |d| {worst:.1e}, sdpa/eager/unpad)"


def _train() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "dnabert_scaling",
            "train",
            "--model",
            "tiny",
            "--steps",
            "2",
            "--warmup-steps",
            "1",
            "--no-ddp",
            "--no-progress",
            "--device",
            "cpu",
            "--out",
            str(Path(tmp) / "run"),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        _require(proc.returncode == 0, f"training run failed:\n{proc.stderr[-2000:]}")
        summary = json.loads(RunLayout(Path(tmp) / "run").summary.read_text())
        _require(summary["status"] == "ok" and summary["finite_loss"], "training summary is not ok")
        return f"two-step CPU training run ok ({summary['samples_per_s']:.0f} samples/s)"


def _environment() -> str:
    import torch

    from dnabert_scaling.run.tracing.scorep import scorep_available

    ok, reason = scorep_available()
    gpu = f"{torch.cuda.device_count()} CUDA device(s)" if torch.cuda.is_available() else "no CUDA device"
    return f"{gpu}; Score-P {'usable' if ok else 'not usable: ' + reason}"


def run(args: argparse.Namespace) -> int:
    checks = [("tokenizer", _tokenizer), ("model", _golden)]
    if not args.skip_train:
        checks.append(("training", _train))
    failed = 0
    for name, fn in checks:
        try:
            print(f"selftest {name:<12} ok    {fn()}")
        except Exception as exc:  # report every check, then fail
            failed += 1
            print(f"selftest {name:<12} FAIL  {exc}")
    # what this machine offers is said, not judged: no GPU or no Score-P is a fact of the machine (the run commands
    # record it as a fallback), so it is neither "ok" nor a failure here
    try:
        print(f"selftest {'environment':<12} info  {_environment()}")
    except Exception as exc:
        print(f"selftest {'environment':<12} info  cannot tell: {exc}")
    print(f"selftest: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0
