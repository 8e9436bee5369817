"""A sweep whose options plan no training run is refused before it writes anything (exit 2, saying
what is wrong and what to do), never a sweep record, synthetic data and a bus-bandwidth run with
exit status 0: ``sweep --rehearse --tracer none`` (a rehearsal has only traced runs)."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import pytest

from cliprocess import cli_in_process
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.sweep import driver


def _planned(argv: list[str]) -> list:
    """The runs the sweep would plan for ``argv`` (its own parser, train options and guard)."""
    parser = argparse.ArgumentParser()
    driver.add_arguments(parser)
    args = parser.parse_args(argv)
    sizes = driver.world_sizes(args.gpus)
    train_args, _ = driver._train_options(args)
    driver.refuse_empty_plan(args, sizes)
    return driver.plan_runs(Path("out"), sizes, args.tracer, args.repeats, args.baseline_no_ddp, train_args)


def test_the_tester_s_rehearsal_without_a_tracer_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--rehearse", "--tracer", "none", "--device", "cpu", "--gpus", "1,2", "--out", str(out)]
    assert cli_main([*argv, "--", "--model", "tiny"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "--rehearse --tracer none: nothing to run" in err
    assert "give --tracer auto, torch or scorep, or leave out --rehearse" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "tracer,rehearse,baseline,gpus",
    list(itertools.product(("auto", "scorep", "torch", "none"), (False, True), (False, True), ("1", "2", "1,4"))),
)
def test_every_combination_plans_a_run_or_is_refused(tracer, rehearse, baseline, gpus):
    """The whole class: no combination of the options that shape the plan leaves it empty unsaid."""
    argv = ["--tracer", tracer, "--gpus", gpus, *(["--rehearse"] if rehearse else [])]
    argv += [] if baseline else ["--skip-plain-baseline"]
    if rehearse and tracer == "none":
        with pytest.raises(ArtifactError, match="nothing to run"):
            _planned(argv)
        return
    plan = _planned(argv)
    assert plan, argv
    assert rehearse == all(spec.tracer != "none" for spec in plan)


@pytest.mark.parametrize("repeats", ["1", "3"])
def test_repeats_given_to_a_rehearsal_exit_2_and_write_nothing(tmp_path, capsys, repeats):
    """A rehearsal runs no untraced throughput runs: a --repeats given with it (even the default's value) would be
    dropped without a word, so it is refused before anything is written; left out, the plan has no untraced run."""
    out = tmp_path / "sweep"
    argv = ["sweep", "--rehearse", "--repeats", repeats, "--device", "cpu", "--gpus", "1,2", "--out", str(out)]
    assert cli_main([*argv, "--", "--model", "tiny"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"--repeats {repeats} --rehearse: a rehearsal runs no untraced throughput runs" in err
    assert not out.exists()
    assert all(spec.tracer != "none" for spec in _planned(["--rehearse", "--gpus", "1,2"]))
    assert sum(spec.tracer == "none" for spec in _planned(["--gpus", "1"])) == 2 * driver.REPEATS  # with DDP and without


def test_repeats_has_one_upper_bound_in_the_sweep_and_its_shell_twins(tmp_path):
    """--repeats above REPEATS_MAX is refused before anything is written (a huge one once hung building the plan);
    scripts/slurm/sweep.sh and scripts/reference_run.sh hold the same bound."""
    out = tmp_path / "sweep"
    argv = ["sweep", "--repeats", str(driver.REPEATS_MAX + 1), "--device", "cpu", "--gpus", "1", "--out", str(out)]
    status, err = cli_in_process(*argv, "--", "--model", "tiny")
    assert status == 2 and f"argument --repeats: must be within 1..{driver.REPEATS_MAX}" in err and "Traceback" not in err
    assert not out.exists()
    root = Path(__file__).resolve().parents[1]
    assert f"REPEATS_MAX={driver.REPEATS_MAX} " in (root / "scripts/slurm/sweep.sh").read_text()
    assert f"within 1..{driver.REPEATS_MAX} (untraced runs" in (root / "scripts/reference_run.sh").read_text()


def test_rehearse_among_the_train_options_is_refused(tmp_path, capsys):
    """--rehearse after '--' rehearsed every run while sweep.json said no rehearsal: it is the sweep's option."""
    out = tmp_path / "sweep"
    argv = ["sweep", "--device", "cpu", "--gpus", "1", "--tracer", "none", "--out", str(out)]
    assert cli_main([*argv, "--", "--model", "tiny", "--rehearse"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--rehearse in the train options (after '--'): a rehearsal is the sweep's, which then runs only "
                        "the traced runs and records it in sweep.json; give --rehearse before '--'")  # fmt: skip
    assert not out.exists()
