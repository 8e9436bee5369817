"""The generated block of call T (tools/docbench_parts.py) splits the default mode's cost beyond the bare
client into parts, each a paired per-round difference judged against 0: a cost only where its interval
lies wholly above 0, never from a median alone; a part whose modes did not both run is left out."""

from __future__ import annotations

import json

from dnabert_scaling.tools import docbench, docbench_parts as dp
from dnabert_scaling.tools.docfacts import Facts

D = docbench.DEFAULT_MODE


def _row(mode, ratios):
    return {"mode": mode, "config": "8x70", "ratio_median": sorted(ratios)[len(ratios) // 2], "ratio_min": min(ratios),
            "ratio_max": max(ratios), "rounds": len(ratios), "pooled_ratio_median": 1.0, "pooled_ratio_q1": 1.0,
            "pooled_ratio_q3": 1.0, "pairs": 30 * len(ratios), "round_ratios": [[i, x] for i, x in enumerate(ratios)],
            "trace_bytes_per_step": None, "kernels_found_share": None}  # fmt: skip


def _write(tmp_path, per_mode: dict[str, list[float]]):
    folder = tmp_path / "expected" / "reference" / dp.PARTS_DIR
    folder.mkdir(parents=True)
    n = len(next(iter(per_mode.values())))
    rounds = [{"round": i, "processes": {m: {"exit_status": 0} for m in ["untraced", *per_mode]}} for i in range(n)]
    doc = {"device": "GPU", "steps": 2, "warmup": 1, "step_sync": "stream", "configs": ["8x70"], "rounds": rounds,
           "modes": [_row("untraced", [1.0] * n), *(_row(m, xs) for m, xs in per_mode.items())]}  # fmt: skip
    (tmp_path / "expected" / "reference" / dp.PARTS_BENCH).write_text(json.dumps(doc))
    return dp.bench_trace_parts(Facts(tmp_path), None)


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
