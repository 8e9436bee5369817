"""The report's text says no more than its data: a set whose ranks shared one GPU is never
headlined with its magnitudes, world sizes are named by what ran (GPUs, ranks on a shared GPU,
CPU ranks), footnotes agree with the checker, and a forecast is not drawn as a verdict."""

from __future__ import annotations

from pathlib import Path

from dnabert_scaling import checker
from dnabert_scaling.report import front, glance, results
from reportfixtures import cpu_results, gpu_results

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_FILE = ROOT / "expected" / "claims.toml"


def rehearsal_metrics(sizes=(1, 2, 4, 8)) -> dict:
    """A GPU sweep whose ranks all ran on one GPU (a rehearsal), placement as analyze records it."""
    m, _ = gpu_results(sizes, tracer="torch")
    for ws in sizes:
        m["world_sizes"][str(ws)]["traced"]["placement"] = {
            "ranks": ws,
            "hosts": 1,
            "gpus": 1,
            "ranks_per_gpu": ws,
            "shared_gpu": ws > 1,
            "identity": "uuid",
            "transports": ["NET/Socket"] if ws > 1 else [],
            "rehearsal": True,
        }
    runs = [m["world_sizes"][str(ws)]["traced"]["run"] for ws in sizes]
    m["fallbacks"] = [{"kind": "rehearsal", "what": "rehearsal", "used": "--rehearse", "reason": "one GPU", "runs": runs}]
    return m


def result_set(metrics: dict, tmp_path: Path, index: int = 0) -> results.ResultSet:
    verdicts = checker.evaluate(metrics, checker.load_claims(CLAIMS_FILE))
    return results.ResultSet(index, tmp_path, f"set {index}", "gpu", metrics, verdicts, "test")


def test_a_shared_gpu_set_is_not_headlined_with_its_magnitudes(tmp_path):
    rs = result_set(rehearsal_metrics(), tmp_path)
    text = front.headline(rs)
    assert "8 ranks on 1 shared GPU" in text and "time-slicing one GPU" in text and "not scaling evidence" in text
    invalid = [c["id"] for c in rs.verdicts["claims"] if c["verdict"] == checker.INVALID]
    assert invalid and f"{', '.join(invalid)} INVALID" in text
    assert "8 GPUs" not in text and " ms per step" not in text and "runs under compute" not in text
    assert "of the step" not in text and "efficiency" not in text
    # one GPU per rank: the magnitudes are the headline
    gpu = result_set(gpu_results((1, 4, 8))[0], tmp_path)
    assert front.headline(gpu).startswith("at 8 GPUs the AllReduce kernels take ")


def test_footnotes_count_what_the_set_ran_not_world_sizes_as_gpus(tmp_path):
    from dnabert_scaling.report.summary import not_run_reason

    rs = result_set(rehearsal_metrics((1, 2, 4)), tmp_path)
    notes = {not_run_reason(ch, rs) for c in rs.verdicts["claims"] for ch in c["checks"] if ch["code"] == "not_measured"}
    assert notes == {
        "world size 8 was not measured (measured: 1, 2, 4); this set has "
        "1 rank on 1 GPU (rehearsal), 2 ranks on 1 shared GPU, 4 ranks on 1 shared GPU"
    }


def _with_noddp(metrics: dict, runs: int) -> dict:
    """The untraced runs without the DDP wrapper, as analyze records them (``runs`` of each mode)."""
    for key, e in metrics["world_sizes"].items():
        t = e["throughput"]
        t["runs"] = t["runs"][:runs]
        t["samples_per_s"] = dict(t["samples_per_s"], n=runs)
        if key == "1":
            sps = t["samples_per_s"]["median"] * 1.01
            e["throughput_noddp"] = {
                "runs": [f"{r}-noddp" for r in t["runs"]],
                "samples_per_s": {"median": sps, "p10": sps, "p90": sps, "min": sps, "max": sps, "n": runs},
            }
        else:
            e["efficiency_vs_noddp"] = 0.77
    return metrics


def test_the_cpu_smoke_set_is_said_in_cpu_ranks(tmp_path):
    from dnabert_scaling.report import metric_tables

    rs = result_set(_with_noddp(cpu_results((1, 2))[0], 2), tmp_path)
    notes = " ".join(metric_tables._partition_notes(rs))
    assert "Efficiency against the 1 CPU rank run without the DDP wrapper: 2 CPU ranks 0.77." in notes
    assert "GPU run" not in notes and "2 GPUs" not in notes
    (ddp,) = [str(i) for i in front.fallback_items(rs) if "DDP wrapper" in str(i)]
    assert "<b>DDP wrapper at 1 CPU rank</b>" in ddp and "as their 1 CPU rank baseline" in ddp and "GPU" not in ddp


def test_the_ddp_wrapper_cost_says_how_many_runs_it_rests_on(tmp_path):
    def ddp_item(runs):
        rs = result_set(_with_noddp(gpu_results((1, 4))[0], runs), tmp_path)
        return next(str(i) for i in front.fallback_items(rs) if "DDP wrapper" in str(i))

    one = ddp_item(1)
    assert "<b>DDP wrapper at 1 GPU</b>" in one and "one untraced run each" in one and "medians" not in one
    assert "medians of 3 untraced runs each" in ddp_item(3)


def test_the_abstract_counts_the_verdicts_and_says_what_ran(tmp_path):
    sets = [
        result_set(rehearsal_metrics(), tmp_path, 0),
        result_set(gpu_results((1,))[0], tmp_path, 1),
        result_set(cpu_results((1, 2))[0], tmp_path, 2),
    ]
    counts = {
        v: sum(c["verdict"] == v for rs in sets for c in rs.verdicts["claims"])
        for v in (checker.PASS, checker.FAIL, checker.NOT_RUN, checker.INVALID)
    }
    text = front.abstract_html(results.Report(sets, {}))
    want = f"{counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['NOT RUN']} NOT RUN and {counts['INVALID']} INVALID"
    assert want in text and counts["INVALID"] > 0
    assert "re-derives those findings" not in text
    assert "No set ran more than one rank with a GPU of its own" in text
    # a set with one GPU per rank at 4 and 8: said, and the sentence above is not
    real = front.abstract_html(results.Report([*sets, result_set(gpu_results((1, 4, 8))[0], tmp_path, 3)], {}))
    assert "No set ran more than one rank" not in real and "one GPU per rank reach world size 8" in real


def test_the_smoke_set_says_what_it_shows_not_that_it_proves_the_pipeline(tmp_path):
    rs = result_set(cpu_results((1, 2))[0], tmp_path)
    first = str(front.fallback_items(rs)[0])
    assert "proves" not in first and "GPU analysis did not run" in first
    n = len(rs.verdicts["claims"])
    assert f"0 PASS, 0 FAIL, {n} NOT RUN and 0 INVALID" in first
    rs.verdicts["claims"][0]["verdict"] = "<script>alert(1)</script>"  # a verdict word from the file: escaped
    text = front.abstract_html(results.Report([rs], {}))
    assert "&lt;script&gt;" in text and "<script>" not in text


def test_a_forecast_beside_a_shared_gpu_world_size_is_not_said_unmeasured(tmp_path):
    import json

    from dnabert_scaling.report import predictions

    pred = json.loads((ROOT / "expected" / "reference-results" / "h200-buckets-b8" / "predictions.json").read_text())
    rs = result_set(rehearsal_metrics((1, 2, 4)), tmp_path)
    rows = predictions.predicted_rows(rs, pred, checker.load_claims(CLAIMS_FILE), [1, 4, 8])
    said = {(r["world_size"], r["measured_text"]) for c in rows for r in c["checks"] if r.get("band")}
    assert (4, "measured on a shared GPU (4 ranks on 1 shared GPU: INVALID), not compared") in said
    assert (8, "not measured") in said
    assert not [t for n, t in said if n == 4 and t == "not measured"]


def test_a_forecast_is_drawn_outlined_and_named_not_as_a_verdict(tmp_path):
    import json
    import re
    import shutil

    from dnabert_scaling.report import summary

    from reportfixtures import set_metric

    shipped = ROOT / "expected" / "reference-results" / "h200-buckets-b8" / "predictions.json"
    shutil.copy(shipped, tmp_path)
    metrics = gpu_results((1,), tracer="torch")[0]  # analysed from the Kineto trace the forecast replays: it is this set's
    sha = json.loads(shipped.read_text())["source"]["sha256"]
    set_metric(metrics, 1, "traced.inputs", [{"rank": 0, "path": "rank0.json.gz", "sha256": sha}])
    rs = result_set(metrics, tmp_path)
    html = str(summary.summary_html(results.Report([rs], {"claims": str(CLAIMS_FILE)}), [1, 4, 8]))
    cells = re.findall(r'<div class="ds-pred"[^>]*>(.*?)</div>', html, re.S)
    assert cells, "the set's forecasts are on the first screen"
    for cell in cells:
        assert cell.startswith("forecast ") and "pred." not in cell
        (cls,) = re.findall(r'<span class="([^"]+)">', cell)[:1]
        assert "ds-forecast" in cls.split() and not {"ds-pass", "ds-fail", "ds-notrun", "ds-invalid"} & set(cls.split())
    # measured verdicts keep the filled badges
    assert 'class="ds-badge ds-pass"' in html


def test_the_partition_table_names_what_it_did_not_measure():
    """A Score-P set (Score-P 8.4 records no device-to-device copy and no memset): the table's note says
    its exposed-copy figure counts only the copies recorded; a one-GPU set has no AllReduce, said in
    words rather than a ratio of 0; the placement row counts one rank in the singular."""
    from dnabert_scaling.report.metric_tables import _kinds_not_recorded, _partition_notes, _gpu_cell
    from dnabert_scaling.report.results import load_set
    from dnabert_scaling.report.summary import placements

    shipped = ROOT / "expected" / "reference-results"
    scorep, torch = load_set(0, shipped / "h200-scorep-b8"), load_set(1, shipped / "h200-scorep-b8-torch")
    assert _kinds_not_recorded(scorep) == ["memset", "memcpy DtoD"] and _kinds_not_recorded(torch) == []
    assert any(n.startswith("The tracer recorded no memset and no memcpy DtoD activity") for n in _partition_notes(scorep))
    assert not any("recorded no" in n for n in _partition_notes(torch))
    assert _gpu_cell(scorep.gpu(1), "allreduce_to_backward", "x")["text"] == "no AllReduce"
    unknown = {k: v for k, v in scorep.gpu(1).items() if k != "allreduce_kernel_s"}  # not measured is not none
    assert _gpu_cell(unknown, "allreduce_to_backward", "x")["text"] != "no AllReduce"
    assert placements(scorep)[0].startswith("1: 1 rank on 1 GPU")


def test_no_efficiency_baseline_is_named_where_no_efficiency_was_measured():
    from dnabert_scaling.report.metric_tables import _partition_notes
    from dnabert_scaling.report.results import load_set

    shipped = ROOT / "expected" / "reference-results"
    rehearsal = load_set(0, shipped / "h200-rehearsal")  # traced only: no untraced repeats, no efficiency
    assert all(rehearsal.entry(n).get("efficiency") is None for n in rehearsal.world_sizes)
    assert not any(n.startswith("Efficiency baseline") for n in _partition_notes(rehearsal))
    assert any(n.startswith("Efficiency baseline") for n in _partition_notes(load_set(1, shipped / "h200-b32")))


def test_a_score_p_method_is_credited_only_with_what_it_placed_itself(tmp_path):
    """The analysis notes quote how well the Score-P methods reproduce the exact attribution, with the share
    of GPU time each placed itself: a stream order that fell back to the time window is said to have, and
    a figure from an analysis that did not record the share says so."""
    from dnabert_scaling.report import appendices

    m, _ = gpu_results((1, 4), tracer="torch")
    gpu = m["world_sizes"]["4"]["traced"]["gpu"]
    gpu["phase_method"] = "correlation"
    gpu["phase_validation"] = {
        "stream-order": {"activities": 0.85, "time": 0.193, "placed": 0.0},
        "time-window": {"activities": 0.85, "time": 0.193, "placed": 1.0},
    }
    m["world_sizes"]["1"]["traced"]["gpu"]["phase_method"] = "correlation"
    m["world_sizes"]["1"]["traced"]["gpu"]["phase_validation"] = {"stream-order": {"activities": 1.0, "time": 0.9996}}
    text = appendices.notes_html(result_set(m, tmp_path))
    assert "stream-order 19.3% of GPU time, of which it placed 0.0% itself and the time window the rest" in text
    assert "time-window 19.3% of GPU time)" in text
    assert "stream-order 100.0% of GPU time (how much of it the method placed itself is not recorded" in text
    gpu["phase_validation"]["stream-order"]["placed"] = 1.0
    assert "stream-order 19.3% of GPU time, all of it placed by the method itself" in appendices.notes_html(
        result_set(m, tmp_path)
    )


def test_the_ddp_wrapper_is_said_to_cost_throughput_not_to_be_a_share_of_it(tmp_path):
    rs = result_set(_with_noddp(gpu_results((1, 4))[0], 1), tmp_path)
    ddp = next(str(i) for i in front.fallback_items(rs) if "DDP wrapper" in str(i))
    assert "costs " in ddp and "of the throughput without it" in ddp


def test_every_table_and_figure_of_a_shared_gpu_world_size_is_under_a_warning(tmp_path):
    """The idle sentences, rankings, kernel classes, rank skew and distributions of a rehearsal's larger world
    sizes are magnitudes of ranks time-slicing one GPU: a banner above the parts that hold them says so, and a set
    with a GPU per rank has none."""
    from dnabert_scaling.report import set_section

    banner = str(set_section.shared_banner(result_set(rehearsal_metrics(), tmp_path)))
    assert "World sizes 2, 4, 8: ranks share a GPU (a rehearsal)." in banner and "no finding" in banner
    assert str(set_section.shared_banner(result_set(gpu_results((1, 4, 8))[0], tmp_path))) == ""
    html = str(set_section.set_section_html(result_set(rehearsal_metrics(), tmp_path), 2, [], [1, 4, 8]))
    assert html.count("ranks share a GPU (a rehearsal).</b>") == 2  # above 2.3 and 2.4


def test_the_first_screen_says_what_the_evidence_is_from_the_sets():
    """Devices, no GPU per rank anywhere, the fallbacks (every set's, and some sets'), forecasts never
    verdicts: said above the verdict table, from the shipped sets' metrics."""
    import json
    from pathlib import Path

    from dnabert_scaling.report import results

    root = Path(__file__).resolve().parents[1] / "expected" / "reference-results"
    folders = sorted(p.parent for p in root.glob("*/metrics.json"))
    sets = [
        results.ResultSet(i, f, f.name, f.name, json.loads((f / "metrics.json").read_text()), None, "t")
        for i, f in enumerate(folders)
    ]
    text = glance.at_a_glance(sets)
    assert "No set ran more than one rank with a GPU of its own" in text
    assert f"Fallbacks in all {len(sets)} sets: data (synthetic" in text
    rehearsals = sum(any(f.get("kind") == "rehearsal" for f in s.metrics.get("fallbacks") or []) for s in sets)
    assert 2 <= rehearsals < len(sets)
    assert (
        f"In some sets: rehearsal (ranks placed round-robin on the devices present (--rehearse)) in {rehearsals} of {len(sets)}."
        in text
    )
    # where the evidence was recorded: all of it shipped in expected/, none run on the machine that made the report
    assert text.startswith(
        f"All evidence here: NVIDIA H100 80GB HBM3, NVIDIA H200, all {len(sets)} sets from the traces shipped in expected/, "
        "re-analysed here."
    )
    assert sets[0].number == 2  # a set's number is its section's
    mine = results.ResultSet(len(sets), Path("/tmp/elsewhere/results"), "mine", "cpu", {"fallbacks": []}, None, "t")
    text = glance.at_a_glance([*sets, mine])
    assert (
        f"Sets 2-{len(sets) + 1}: the traces shipped in expected/, re-analysed here; set {len(sets) + 2}: the results folder given."
        in text
    )
    assert glance._numbers([1, 3, 4, 5, 8, 9]) == "1, 3-5, 8, 9"


def test_the_shared_gpu_checks_of_a_set_share_one_short_note(tmp_path):
    """Every check the checker marks INVALID for a shared GPU refers to one note per set, which names the world
    sizes and what ran there once (the checker's reason repeats the whole placement at each world size)."""
    from dnabert_scaling.report.summary import Notes, _measured_cell

    rs = result_set(rehearsal_metrics(), tmp_path)
    notes = Notes()
    cells = [_measured_cell(c, rs, notes) for c in rs.verdicts["claims"]]
    shared = [c for c in rs.verdicts["claims"] if any(ch.get("code") == "shared_gpu" for ch in c["checks"])]
    assert len(shared) >= 2  # several claims rest on magnitudes
    note = (
        "world sizes 2, 4, 8 ran 2 ranks on 1 shared GPU, 4 ranks on 1 shared GPU, 8 ranks on 1 shared GPU, NCCL over "
        "NET/Socket: not one GPU per rank, so times, shares and throughput there are no scaling evidence; the checks "
        "that rest on them are INVALID and only structural checks are judged"
    )
    assert note in notes.texts
    ref = notes.texts.index(note) + 1
    by_id = {c["id"]: cell for c, cell in zip(rs.verdicts["claims"], cells)}
    assert all(ref in by_id[c["id"]]["notes"] for c in shared)
    assert not any("GPUs told apart by" in t for t in notes.texts)  # the placement's long phrase is not repeated
    # one GPU per rank: no such note
    gpu = result_set(gpu_results((1, 4, 8))[0], tmp_path)
    gpu_notes = Notes()
    for c in gpu.verdicts["claims"]:
        _measured_cell(c, gpu, gpu_notes)
    assert not any("not one GPU per rank" in t for t in gpu_notes.texts)


def test_a_cpu_set_is_not_said_to_have_an_unknown_gpu(tmp_path):
    from dnabert_scaling.report.summary import placement_line, placements

    def unknown(m: dict) -> dict:
        for ws in (1, 2):
            m["world_sizes"][str(ws)]["traced"]["placement"] = {
                "ranks": ws,
                "hosts": 1,
                "identity": "unknown",
                "shared_gpu": False,
            }
        return m

    cpu = results.ResultSet(0, tmp_path, "cpu", "cpu-smoke", unknown(cpu_results((1, 2))[0]), None, "t")
    assert cpu.device == "cpu" and placement_line(cpu)
    assert not any("GPU identity" in t for t in placement_line(cpu) + placements(cpu))
    gpu = results.ResultSet(0, tmp_path, "gpu", "gpu", unknown(gpu_results((1, 2))[0]), None, "t")
    assert gpu.device == "cuda" and "(GPU identity unknown)" in placement_line(gpu)[0]


def test_the_fallbacks_every_set_took_are_named_once_before_the_sets_not_in_each_banner(tmp_path):
    """The box before the sets names the fallbacks every set took; a set's banner, "besides what every set
    shares", does not name them again (its detail box under x.1 keeps their runs and reasons)."""
    import json
    import re
    import types

    from dnabert_scaling.report import set_section

    root = Path(__file__).resolve().parents[1] / "expected" / "reference-results"
    sets = [
        results.ResultSet(i, root / name, name, "reference", json.loads((root / name / "metrics.json").read_text()), None, "t")
        for i, name in enumerate(["h200-b8", "h200-scorep-b8"])
    ]
    report = types.SimpleNamespace(sets=sets)
    common = set_section.common_fallbacks(report)
    assert ("data", "synthetic planted-motif task shaped like prom_300_all") in common
    box = str(set_section.shared_fallbacks_html(report))
    assert "<b>Data</b>: synthetic planted-motif task" in box and "runs and reasons of the fallbacks every set took" in box
    section = str(set_section.set_section_html(sets[0], 2, set_section.shared_fallbacks(report), [1, 4, 8], None, common))
    banner = re.search(r"Differs from the study's set-up</b>(.*?)</div>", section, re.S).group(1)
    assert "Synthetic data" not in banner and "Random weights" not in banner
    assert "Synthetic data" in section  # the detail under 2.1


def test_a_set_counts_as_shipped_by_what_it_was_derived_from_not_by_its_folder_name(tmp_path):
    """A reader's own run in a folder named like kick-tires' output is the reader's, not the shipped
    evidence; a re-analysis of the shipped traces under any name is the shipped evidence, with its copy named."""
    import json

    shipped = results.SHIPPED_RESULTS / "h200-b8"
    own = tmp_path / "reference-h200-b8" / "results"  # the name kick-tires gives; the reader's own traces
    own.mkdir(parents=True)
    (own / "metrics.json").write_text(json.dumps({"sources": ["runs/mine"]}))
    assert not results.is_shipped_reference(own) and results.results_folder_note(own) == ""
    same = tmp_path / "anything" / "results"  # the shipped traces, re-analysed under another name
    same.mkdir(parents=True)
    for name in ("metrics.json", "verdicts.json"):
        (same / name).write_text((shipped / name).read_text())
    assert results.is_shipped_reference(same)
    assert "expected/reference-results/h200-b8" in results.results_folder_note(same)
    for bad in ("{", json.dumps({"sources": "expected/reference/h200-b8"}), json.dumps([1])):  # unreadable: not shipped
        (same / "metrics.json").write_text(bad)
        assert not results.is_shipped_reference(same)
    assert results.is_shipped_reference(shipped)  # the shipped copy itself, by where it lies
    # metrics already read (a ResultSet's) decide without reading the file again
    shipped_metrics = json.loads((shipped / "metrics.json").read_text())
    assert results.is_shipped_reference(own, shipped_metrics) and not results.is_shipped_reference(same, {"sources": ["x"]})


def test_a_set_is_called_the_shipped_results_only_where_its_content_is_theirs(tmp_path):
    """The note "a fresh clone ships the same results" is said of a folder only where its metrics and verdicts are
    the shipped copy's: one hand-edited number, or verdicts of other claims, and it is the reader's
    results of the shipped traces (still labelled by the traces they name), not the shipped results."""
    import json

    shipped = results.SHIPPED_RESULTS / "h200-b8"
    same = tmp_path / "results"
    same.mkdir()
    for name in ("metrics.json", "verdicts.json"):
        (same / name).write_text((shipped / name).read_text())
    assert "h200-b8" in results.results_folder_note(same)
    metrics = json.loads((shipped / "metrics.json").read_text())
    metrics["world_sizes"]["1"]["throughput"] = 1.0  # one number edited
    (same / "metrics.json").write_text(json.dumps(metrics))
    assert results.results_folder_note(same) == "" and results.is_shipped_reference(same)
    assert results.default_label(metrics, same).startswith("Reference traces")
    (same / "metrics.json").write_text((shipped / "metrics.json").read_text())
    verdicts = json.loads((shipped / "verdicts.json").read_text())
    verdicts["claims"][0]["verdict"] = "FAIL" if verdicts["claims"][0]["verdict"] != "FAIL" else "PASS"
    (same / "verdicts.json").write_text(json.dumps(verdicts))
    assert results.results_folder_note(same) == ""
    (same / "verdicts.json").unlink()
    assert results.results_folder_note(same) == ""


def test_a_word_in_a_folder_name_does_not_make_a_set_reference_traces(tmp_path):
    """A reader's own GPU run in a folder whose name holds "reference" is labelled as GPU runs, not as
    the reference traces; so are metrics whose sources merely contain the word."""
    own = tmp_path / "reference-run" / "results"
    own.mkdir(parents=True)
    metrics = {
        "sources": ["runs/reference-like"],
        "provenance": {"gpu_name": "NVIDIA A100"},
        "world_sizes": {"1": {"world_size": 1, "traced": {"device_type": "cuda"}}},
    }
    (own / "metrics.json").write_text(__import__("json").dumps(metrics))
    assert results.default_label(metrics, own).startswith("GPU runs")


def test_a_set_that_records_no_device_is_not_called_gpu(tmp_path):
    """Metrics whose world sizes record no device (their runs failed before saying) are never labelled GPU
    runs nor shown as GPU on the first screen or in the hardware column, whatever the machine's provenance."""
    from dnabert_scaling.report import summary

    metrics = {
        "provenance": {"gpu_name": "NVIDIA A100"},
        "world_sizes": {"1": {"world_size": 1, "traced": {"run": "ws1-torch-r0", "device_type": None}}},
        "measured_world_sizes": [],
        "fallbacks": [],
    }
    assert results.default_label(metrics, tmp_path) == ("Runs on a device not recorded: world size 1 (measured: none)")
    rs = results.ResultSet(0, tmp_path, "x", "unknown-device", metrics, None, "t")
    assert rs.device is None and rs.measured == [] and rs.world_sizes == [1]
    text = glance.at_a_glance([rs])
    assert text.startswith("All evidence here: device not recorded.") and "GPU." not in text, text
    assert summary.hardware(rs)["device"] == "device not recorded"


def test_ranks_with_no_recorded_placement_are_not_called_gpus_of_their_own(tmp_path):
    """Bare traces of 8 ranks (no run records): the report never says "8 GPUs", "one GPU per rank" or
    that no fallback was taken; it says the placement was not recorded, and the checks that rest on
    magnitudes are NOT RUN for that reason."""
    from dnabert_scaling.report import summary

    m = gpu_results((1, 8), placement=False)[0]
    m["fallbacks"] = [{"kind": "bare_traces", "what": "run records", "used": "traces without their run folders", "reason": "t"}]
    rs = results.ResultSet(
        0, tmp_path, "bare", "gpu", m, checker.evaluate(m, checker.load_claims(checker.default_claims_path())), "t"
    )
    assert not rs.own_gpus(8) and rs.placement_unknown(8) and rs.own_gpus(1)
    assert rs.ranks(8) == "8 ranks (placement not recorded)"
    text = glance.one_gpu_per_rank_text([rs])
    assert "one GPU per rank reach" not in text and "World size 8 ran GPU ranks with no recorded placement" in text
    assert summary.placement_line(rs) == ["placement not recorded at 8"]
    c3 = next(c for c in rs.verdicts["claims"] if c["id"] == "C3")
    assert c3["verdict"] == "NOT RUN"
    assert summary.not_run_reason(c3["checks"][0], rs).startswith("world size 8 ran 8 ranks (placement not recorded)")
    own = results.ResultSet(0, tmp_path, "own", "gpu", gpu_results((1, 8))[0], None, "t")
    assert own.ranks(8) == "8 GPUs" and "one GPU per rank reach world size 8" in glance.one_gpu_per_rank_text([own])


def test_a_number_no_measurement_reaches_is_not_written_out_in_full():
    """1e300 (say, in a hand-edited file that got past no rule) is shown as 1.000e+300, never as a
    page-wide row of digits that pushes the first screen's columns off it."""
    assert results.fmt(1e300) == "1.000e+300" and results.fmt(-2.5e9) == "-2.500e+09"
    assert results.fmt(65946.0) == "65,946" and results.fmt(1.31) == "1.31"


def test_a_report_of_one_gpu_sets_does_not_speak_of_their_multi_rank_runs(tmp_path):
    """Sets of world size 1 only: no multi-rank run to have shared a GPU or run on CPU."""
    one = results.ResultSet(0, tmp_path, "one", "gpu", gpu_results((1,))[0], None, "t")
    text = glance.one_gpu_per_rank_text([one])
    assert "No set ran more than one rank" in text and "multi-rank run here" not in text
    shared = result_set(rehearsal_metrics((1, 2)), tmp_path)
    assert "every multi-rank run here shared one GPU" in glance.one_gpu_per_rank_text([one, shared])
