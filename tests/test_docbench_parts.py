"""The generated blocks of calls T, U, V, W and Z (tools/docbench_parts.py) split the default mode's cost beyond the
bare client into parts, each a paired per-round difference judged against 0: a cost only where its interval
lies wholly above 0, never from a median alone; a part whose modes did not both run is left out; a mode whose
set-up is not shown by its own counts (the domain filter that held nothing back, the client with launch records
that counted none) is neither tabled nor read."""

from __future__ import annotations

import json

from dnabert_scaling.tools import docbench, docbench_parts as dp
from dnabert_scaling.tools.docfacts import Facts

D = docbench.LAUNCH_MODE


def _row(mode, ratios):
    return {"mode": mode, "config": "8x70", "ratio_median": sorted(ratios)[len(ratios) // 2], "ratio_min": min(ratios),
            "ratio_max": max(ratios), "rounds": len(ratios), "pooled_ratio_median": 1.0, "pooled_ratio_q1": 1.0,
            "pooled_ratio_q3": 1.0, "pairs": 30 * len(ratios), "round_ratios": [[i, x] for i, x in enumerate(ratios)],
            "trace_bytes_per_step": None, "kernels_found_share": None}  # fmt: skip


def _write(tmp_path, per_mode: dict[str, list[float]], split=dp.CALL_T, extra: dict | None = None):
    path = tmp_path / "expected" / "reference" / split.bench
    path.parent.mkdir(parents=True)
    n = len(next(iter(per_mode.values())))
    rounds = [{"round": i, "processes": {m: {"exit_status": 0} for m in ["untraced", *per_mode]}} for i in range(n)]
    rows = [_row("untraced", [1.0] * n), *({**_row(m, xs), **(extra or {}).get(m, {})} for m, xs in per_mode.items())]
    doc = {"device": "GPU", "steps": 2, "warmup": 1, "step_sync": "stream", "configs": ["8x70"], "rounds": rounds,
           "modes": rows}  # fmt: skip
    path.write_text(json.dumps(doc))
    return dp.split_block(Facts(tmp_path), split)


def test_nothing_shipped_is_said(tmp_path):
    assert "(no `" in dp.bench_trace_parts(Facts(tmp_path), None)


def test_a_part_is_a_cost_only_where_its_interval_lies_above_zero(tmp_path):
    client = [1.10, 1.15, 1.12, 1.18, 1.11, 1.14, 1.16, 1.13, 1.17, 1.12]
    jitter = [0.01 if i % 2 else -0.01 for i in range(len(client))]
    text = _write(
        tmp_path,
        {
            dp.CLIENT: client,
            dp.NOTRACE: [x + 0.05 for x in client],  # the callback path: +0.05 in every round
            D: [x + 0.05 + j for x, j in zip(client, jitter)],  # writing: +-0.01, either way
            dp.NOREFS: [x + 0.05 for x in client],
        },
    )
    assert "Score-P's callback path, nothing written +0.050 over 10 rounds, a cost (95% interval of the median 0.05-0.05)" in text
    assert "writing the trace +0.000 over 10 rounds, not told from 0 (95% interval of the median -0.01 to 0.01)" in text
    assert "the stream reference" in text and "in all +0.050" in text
    assert "Score-P, launch-only, 4 MB buffers, tracing off (nothing written)" in text  # named in the table
    targets = text.split("\n\n")[-1]
    assert "tracing off" not in targets and "no stream references" not in targets  # the targets are the default mode's


def test_a_part_whose_modes_did_not_both_run_is_left_out(tmp_path):
    client = [1.10, 1.15, 1.12, 1.18, 1.11, 1.14]
    text = _write(tmp_path, {dp.CLIENT: client, D: [x + 0.07 for x in client]})
    assert "in all +0.070" in text
    assert (
        "callback path" not in text and "writing the trace" not in text and "stream reference" not in text.split("The parts")[1]
    )


def _call_u(tmp_path, held_back):
    client = [1.10, 1.15, 1.12, 1.18, 1.11, 1.14, 1.16, 1.13, 1.17, 1.12]
    per_mode = {
        dp.CLIENT: client,
        dp.DOMAINS: [x + 0.002 * (-1) ** i for i, x in enumerate(client)],  # the domains: nothing either way
        dp.NOSYNC: [x + 0.07 for x in client],
        D: [x + 0.07 + 0.003 * (-1) ** i for i, x in enumerate(client)],
    }
    calls = [41, 41] if held_back == [2, 2] else [40, 42]  # every process the same count: said once
    extra = {dp.DOMAINS: {"cupti_domain_callbacks": calls}, dp.NOSYNC: {"domain_filter_held_back": held_back}}
    return _write(tmp_path, per_mode, dp.CALL_U, extra)


def test_call_us_domains_are_read_where_the_filter_held_the_domain_back_in_every_process(tmp_path):
    text = _call_u(tmp_path, [1, 1, 1])
    assert "the resource and synchronisation domains, to the bare client +0.000 over 10 rounds, not told from 0" in text
    assert "the synchronisation domain, to Score-P +0.000 over 10 rounds, not told from 0" in text
    assert "Score-P beyond the bare client with the same domains +0.07" in text
    assert "received resource and synchronisation callbacks in 2 of 2 processes (40-42 each)" in text
    assert "the filter held back the synchronisation domain in 3 of 3 processes" in text
    assert "synchronisation domain held back | 8x70" in text  # tabled
    targets = text.split("\n\n")[-1]
    assert "held back" not in targets and "resource and synchronisation" not in targets  # the default mode's targets


def test_call_us_filtered_mode_is_neither_tabled_nor_read_where_the_filter_held_nothing_back_somewhere(tmp_path):
    text = _call_u(tmp_path, [1, 0, 1])
    assert "the synchronisation domain, to Score-P: not read (the filter held nothing back in 1 of 3 processes)" in text
    assert "synchronisation domain held back | 8x70" not in text
    assert "the resource and synchronisation domains, to the bare client +0.000" in text  # the other parts still read
    assert "in 2 of 2 processes (41 each)" in _call_u(tmp_path / "c", [2, 2])
    missing = _call_u(tmp_path / "b", None)
    assert "the synchronisation domain, to Score-P: not read (the filter's counts were not recorded)" in missing


def _call_v(tmp_path, records=(75, 75), linked=(70, 70), kernels=(70, 70)):
    kernels_alone = [1.10, 1.15, 1.12, 1.18, 1.11, 1.14, 1.16, 1.13, 1.17, 1.12]
    per_mode = {
        dp.KERNELS: kernels_alone,
        dp.CLIENT: [x + 0.01 for x in kernels_alone],
        dp.RECORDS: [x + 0.01 + 0.002 * (-1) ** i for i, x in enumerate(kernels_alone)],  # as dear as the callbacks
        D: [x + 0.09 for x in kernels_alone],
    }
    counts = {"cupti_launch_records": list(records), "cupti_linked_kernels": list(linked), "cupti_kernel_records": list(kernels)}
    return _write(tmp_path, per_mode, dp.CALL_V, {dp.RECORDS: counts})


def test_call_vs_launch_records_are_read_against_cupti_alone_the_callbacks_and_the_default_mode(tmp_path):
    text = _call_v(tmp_path)
    assert text.count("What launch records cost, taken either way") == 1 and "The parts of the default" not in text
    assert "launch records from CUPTI's activity API, to CUPTI alone +0.010 over 10 rounds, a cost" in text
    assert "activity records against callbacks +0.000 over 10 rounds, not told from 0" in text
    assert "launch-only Score-P beyond the client with launch records +0.080 over 10 rounds, a cost" in text
    assert "counted 75 launch records per process, and in 2 of 2 processes every kernel record was linked" in text
    assert "(140 of 140 kernel records in all)" in text
    assert "launch activity records instead of callbacks (bare client), 4 MB buffers | 8x70" in text  # tabled
    assert "activity records" not in text.split("\n\n")[-1]  # the targets are the default mode's


def test_call_vs_kernels_without_a_launch_record_show_in_the_count(tmp_path):
    text = _call_v(tmp_path, linked=(70, 69))
    assert "in 1 of 2 processes every kernel record was linked to one by its correlation id (139 of 140" in text


def test_call_vs_client_that_counted_no_launch_record_is_neither_tabled_nor_read(tmp_path):
    """A process of the records mode that counted none ran without launch records: the mode's name would say
    what it did not do, so its row and its parts are left out, with why."""
    text = _call_v(tmp_path, records=(75, 0))
    assert "to CUPTI alone: not read (the client counted no launch record in 1 of 2 processes)" in text
    assert "instead of callbacks (bare client), 4 MB buffers | 8x70" not in text
    assert "launch callbacks, to CUPTI alone +0.010" in text  # the other parts still read
    assert "not read (the client's launch records were not counted)" in _call_v(tmp_path / "m", records=())
    uneven = _call_v(tmp_path / "u", linked=(70,))
    assert "not read (the client's counts of launch records and kernels are not one per process)" in uneven


def _call_w(tmp_path, records_mode: list[float], found=(139_188, 139_188), linked: int | None = 139_188, extra=None):
    client = [1.10, 1.15, 1.12, 1.18, 1.11, 1.14, 1.16, 1.13, 1.17, 1.12]
    counts = {
        "cupti_launch_records": [75] * 2,
        "cupti_linked_kernels": [70] * 2,
        "cupti_kernel_records": [70] * 2,
    }
    scorep = {"trace_bytes_per_step": 71_496.0, "kernels_found": found[0], "launches_counted": found[1], "experiments_counted": 2,
              "kernels_found_share": found[0] / found[1], "experiments_linked": 2, **(extra or {})}  # fmt: skip
    if linked is not None:
        scorep["kernels_linked"] = linked
    per_mode = {dp.RECORDS: client, D: [x + 0.09 for x in client], dp.SCOREP_RECORDS: records_mode}
    _write(tmp_path, per_mode, dp.CALL_W, {dp.RECORDS: counts, dp.SCOREP_RECORDS: scorep})
    return dp.bench_trace_launch_records(Facts(tmp_path), None)


def test_call_ws_records_mode_is_held_to_the_default_modes_bounds_by_the_same_rule(tmp_path):
    text = _call_w(tmp_path, [1.15, 1.16, 1.17, 1.18, 1.15, 1.16, 1.17, 1.18, 1.16, 1.17])
    records = text.split("\n\n")[-1]
    assert records.startswith(
        "Targets of the default mode with the records patch (Score-P with its launches from CUPTI's activity records"
    )
    assert "8x70: 1.17x against <= 1.25x (met: 95% interval of the median" in records
    assert "trace 71 kB per step against <= 100 kB (met)" in records
    assert "kernels found: 139,188 of 139,188 launches in 2 counted experiment(s) (met)" in records
    assert "kernels linked to a launch by correlation id: 139,188, in the 2 counted experiment(s)" in records
    # the launch-only targets line stays its own: records mode is judged in its own line
    assert "activity records" not in text.split("\n\n")[-2]
    assert "launch-only Score-P beyond Score-P with its launches from activity records" in text


def test_call_ws_records_mode_above_the_bound_or_losing_kernels_is_said_so(tmp_path):
    text = _call_w(tmp_path, [1.30, 1.31, 1.29, 1.32, 1.30, 1.31, 1.33, 1.30, 1.29, 1.31], found=(139_000, 139_188), linked=None)
    records = text.split("\n\n")[-1]
    assert "8x70: 1.31x against <= 1.25x (missed:" in records
    assert (
        "kernels found: 139,000 of 139,188 launches in 2 counted experiment(s) (missed)" in records
        and "correlation id" not in records
    )
    # an experiment that could not be counted may hold a lost kernel: never "met", as for the default mode
    uncounted = _call_w(tmp_path / "u", [1.15] * 10, extra={"experiments_uncountable": 1}).split("\n\n")[-1]
    assert "1 experiment(s) that could not be counted (not met)" in uncounted
    assert dp._records_mode_targets({}, "call W") == ""  # no such mode shipped: nothing said


def test_call_zs_shipped_block_says_what_the_documents_say_of_it():
    """ARTIFACT.md F and G say of call Z (records mode's present code, a Score-P built on a CPU, on an H100): the
    default mode's addition beyond records mode is a cost by the rule at both sizes, records mode met 8 x 70 and
    missed 32 x 70 as the default mode did, every kernel found and linked. Read here from the shipped rounds."""
    from pathlib import Path

    text = dp.bench_trace_cpu_built(Facts(Path(__file__).resolve().parents[1]), None)
    assert text.startswith("| mode |") and "NVIDIA H100 80GB HBM3" in text
    for config in ("8x70", "32x70"):
        assert f"At {config}, launch-only Score-P beyond Score-P with its launches from activity records +" in text
    parts = text.split("launch-only Score-P beyond Score-P with its launches from activity records +")[1:]
    assert len(parts) == 2 and all(p.split("(")[0].split("rounds, ")[1].startswith("a cost") for p in parts)
    default, records = text.split("\n\n")[-2:]
    assert "8x70: 1.21x against <= 1.25x (met:" in default and "32x70: 1.19x against <= 1.12x (missed:" in default
    assert "8x70: 1.17x against <= 1.25x (met:" in records and "32x70: 1.15x against <= 1.12x (missed:" in records
    assert "kernels linked to a launch by correlation id: 139,188, in the 2 counted experiment(s)" in records


def test_call_zfs_shipped_block_says_what_the_documents_say_of_it():
    """ARTIFACT.md F and G say of call ZF (the shipped build's default beside both bare clients at 32 x 70, on H100s):
    the launch records are not told from 0 beside CUPTI alone, Score-P's addition to the client with the same records
    is a cost by the rule, records mode missed 32 x 70 there, every kernel found and linked; no launch-only targets
    paragraph (the call did not run that mode). Read here from the shipped rounds."""
    from pathlib import Path

    text = dp.bench_trace_cupti_floor(Facts(Path(__file__).resolve().parents[1]), None)
    assert text.startswith("| mode |") and "NVIDIA H100 80GB HBM3" in text and "58 rounds (3 run(s)" in text
    launch_records = text.split("the launch records, to CUPTI alone ")[1]
    assert launch_records.startswith("-") and launch_records.split("(")[0].endswith("over 58 rounds, not told from 0 ")
    beyond = text.split("Score-P in records mode beyond the client with the same records +")[1]
    assert beyond.split("(")[0].endswith("over 58 rounds, a cost ")
    assert "without the records patch" not in text
    records = text.split("\n\n")[-1]
    assert "32x70: 1.16x against <= 1.12x (missed:" in records and "8x70" not in records
    assert "kernels linked to a launch by correlation id: 104,391, in the 3 counted experiment(s)" in records


def test_call_zfs_runs_and_parts_are_what_its_reading_in_f_says():
    """F's hand-written reading of call ZF rests on these figures of the shipped rounds: Score-P beyond the client with
    the same records is told from 0 in run ZF3 alone (bench-zr5h.json), no run lies wholly below 0; the launch records
    beside CUPTI alone and Score-P beyond CUPTI alone are not told from 0 over the pooled rounds."""
    from pathlib import Path

    from dnabert_scaling.analysis.stats import median_interval
    from dnabert_scaling.tools import cost_verdicts as cv

    data = docbench.bench_file(Facts(Path(__file__).resolve().parents[1]), dp.CUPTI_FLOOR_BENCH)
    beyond = cv.rounds_of(data, "32x70", dp.SCOREP_RECORDS, minus=dp.RECORDS, label="call ZF")
    per_run: dict[str, list[float]] = {}
    for _, name, x in beyond.values:
        per_run.setdefault(name, []).append(x)
    sides = {}
    for name, xs in per_run.items():
        iv = median_interval(xs, cv.CONFIDENCE)
        sides[name] = "above" if iv.lo > 0 else "below" if iv.hi < 0 else "around"
    assert sides == {"bench-zr3h.json": "around", "bench-zr4h.json": "around", "bench-zr5h.json": "above"}
    assert cv.judge([beyond], 0.0)[0] == "missed"  # a cost over the pooled rounds
    for high, low in ((dp.RECORDS, dp.KERNELS), (dp.SCOREP_RECORDS, dp.KERNELS)):
        assert cv.judge([cv.rounds_of(data, "32x70", high, minus=low, label="call ZF")], 0.0)[0] == "not established"
    # G: the 32 x 70 bound lies within CUPTI alone's interval there, in its lower half ("at the low edge")
    alone = median_interval(cv.rounds_of(data, "32x70", dp.KERNELS, label="call ZF").numbers, cv.CONFIDENCE)
    assert alone.lo <= 1.12 < (alone.lo + alone.hi) / 2
