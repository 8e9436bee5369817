"""A sweep whose options plan no training run is refused before it writes anything (exit 2, saying
what is wrong and what to do), never a sweep record, synthetic data and a bus-bandwidth run with
exit status 0: ``sweep --rehearse --tracer none`` (a rehearsal has only traced runs)."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import pytest

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
