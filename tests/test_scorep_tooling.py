"""Score-P tooling of issue 10: the build recipe's refusals, the launch/kernel counter and the
preflight on real traces (the unpatched Score-P 8.4 run that lost its kernels, and the patched
one shipped in expected/reference/), the revision stamped into copies without .git."""

import json
import subprocess

import pytest

from conftest import DATA, ROOT

RECIPE = ROOT / "containers" / "build-scorep.sh"
LOST = DATA / "traces" / "scorep84-h200-dnabert2-incomplete" / "ws1-scorep-r0" / "traces" / "scorep-rank0"
PATCHED = ROOT / "expected" / "reference" / "h200-scorep-b8" / "ws1-scorep-r0" / "traces" / "scorep-rank0"


def _scripts_module(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def recipe(*args, env=None):
    return subprocess.run(["bash", str(RECIPE), *map(str, args)], capture_output=True, text=True, env=env, timeout=60)


def fake_cuda(tmp_path):
    """A toolkit folder with cuda.h and a fake nvcc, but no nvToolsExt.h and no CUPTI."""
    cuda = tmp_path / "cuda"
    (cuda / "include").mkdir(parents=True)
    (cuda / "include" / "cuda.h").write_text("/* fake */\n")
    (cuda / "bin").mkdir()
    nvcc = cuda / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\nexit 0\n")
    nvcc.chmod(0o755)
    return cuda


def test_recipe_needs_source_and_prefix(tmp_path):
    proc = recipe("--prefix", tmp_path / "p")
    assert proc.returncode == 1 and "--source is required" in proc.stderr
    proc = recipe("--source", tmp_path / "scorep-9.4.tar.gz", "--prefix", tmp_path / "p")
    assert proc.returncode == 1 and "no such file" in proc.stderr
    proc = recipe("--bogus")
    assert proc.returncode == 1 and "unknown option '--bogus'" in proc.stderr


def test_recipe_refuses_a_tarball_it_cannot_name(tmp_path):
    bad = tmp_path / "scorep-latest.tar.gz"
    bad.write_bytes(b"")
    proc = recipe("--source", bad, "--prefix", tmp_path / "p")
    assert proc.returncode == 1 and "expected a release tarball named scorep-X.Y" in proc.stderr


def test_recipe_refuses_cuda_without_cupti(tmp_path):
    tarball = tmp_path / "scorep-9.4.tar.gz"
    tarball.write_bytes(b"")
    proc = recipe("--source", tarball, "--prefix", tmp_path / "p", "--cuda", fake_cuda(tmp_path))
    assert proc.returncode == 1 and "CUPTI not found" in proc.stderr


def test_recipe_wants_nvtx2_headers_for_scorep8_on_cuda13(tmp_path):
    cuda = fake_cuda(tmp_path)
    lib = cuda / "targets" / "x86_64-linux" / "lib"
    inc = cuda / "targets" / "x86_64-linux" / "include"
    lib.mkdir(parents=True)
    inc.mkdir(parents=True)
    (inc / "cupti.h").write_text("/* fake */\n")
    (lib / "libcupti.so").write_bytes(b"")
    tarball = tmp_path / "scorep-8.4-src.tar.xz"
    tarball.write_bytes(b"")
    proc = recipe("--source", tarball, "--prefix", tmp_path / "p", "--cuda", cuda)
    assert proc.returncode == 1 and "give --nvtx2-include DIR" in proc.stderr, proc.stderr
    proc = recipe("--source", tarball, "--prefix", tmp_path / "p", "--cuda", cuda, "--nvtx2-include", tmp_path)
    assert proc.returncode == 1 and "no nvToolsExt.h there" in proc.stderr


def test_patches_are_named_for_their_version():
    patches = sorted((ROOT / "containers" / "scorep-patches").glob("*.patch"))
    assert [p.name for p in patches] == [
        "8.4-cupti-launch-callbacks.patch",
        "8.4-cupti-launch-records.patch",
        "8.4-cupti-overlap-kept.patch",
        "8.4-cupti-stream-order.patch",
        "8.4-cupti-stream-ref-cache.patch",
    ]
    # the launches from CUPTI's activity records: no callback, per-thread locations, correlation ids
    records = patches.pop(1).read_text()
    for changed in ("scorep_cupti_callbacks.c", "scorep_cupti_activity.c", "scorep_cupti4_activity.c"):
        assert f"+++ b/src/adapters/cuda/{changed}" in records
    # RmaGet/RmaPut written with the location's attribute list: a copy's id must not go to the next kernel
    assert records.count("+                           tracing_data->otf_attribute_list,") == 2
    assert "cuptiActivityEnableDriverApi( cbid, enable )" in records and '"CUDA launches[%" PRIu32 "]"' in records
    assert records.count('"CUPTI_CORRELATION_ID"') == 1 and "+        case CUPTI_ACTIVITY_KIND_DRIVER:" in records
    cache = patches.pop().read_text()  # the stream reference cache: a confvar, forgotten on every destruction
    for changed in ("scorep_cuda.h", "scorep_cuda_confvars.inc.c", "scorep_cupti_callbacks.c"):
        assert f"+++ b/src/adapters/cuda/{changed}" in cache
    assert '"stream_ref_cache"' in cache and cache.count("+            stream_ref_cache_invalidate();") == 2
    assert "+        stream_ref_cache_in_use = false;\n+        stream_ref_cache_invalidate();" in cache  # disabling forgets too
    overlap = patches.pop(1).read_text()  # the kernel writer only: a kernel before the stream's last timestamp is kept
    assert "+++ b/src/adapters/cuda/scorep_cupti_activity.c" in overlap and overlap.count("+++ ") == 1
    assert (
        '-                UTILS_WARN_ONCE( "[CUPTI Activity] Skipping ..." );' in overlap
        and "+                stop  = start;" in overlap
    )
    text = patches[1].read_text()
    assert "+++ b/src/adapters/cuda/scorep_cupti4_activity.c" in text and "handle_pending_buffers" in text
    text = patches[0].read_text()
    for changed in ("scorep_cuda.h", "scorep_cuda_confvars.inc.c", "scorep_cupti_callbacks.c"):
        assert f"+++ b/src/adapters/cuda/{changed}" in text
    assert '"driver_callbacks"' in text and "cuptiEnableCallback" in text
    assert "+        scorep_strm = scorep_cupti_stream_get_create( scorep_ctx, strm_id );" in text


def test_counter_on_the_lost_and_the_patched_trace():
    otf2 = pytest.importorskip("otf2")  # noqa: F841
    count = _scripts_module("scorep_count").count

    lost = count(LOST)
    assert lost["launches"] > 30000 and lost["kernels"] < 0.05 * lost["launches"]
    assert set(lost["launches_by_location"]) == {"Master thread", "Orphan thread 4"}
    patched = count(PATCHED)
    assert patched["launches"] == patched["kernels"] == 25289  # re-recorded 2026-12-03: launch-only, bucket hook on
    assert patched["step_windows"] == 20 and patched["steps_complete"] == 20


def test_preflight_judges_kernels_on_real_traces():
    pytest.importorskip("otf2")
    from dnabert_scaling.analysis.completeness import trace_completeness
    from dnabert_scaling.traces.otf2_reader import read_otf2
    from dnabert_scaling.run.tracing.preflight import kernels_only

    lost = trace_completeness(kernels_only(read_otf2(LOST / "traces.otf2")))
    assert lost["status"] == "incomplete" and lost["ratio"] < 0.05
    trace = read_otf2(PATCHED / "traces.otf2")
    kernels = trace_completeness(kernels_only(trace))
    assert kernels["status"] == "complete" and kernels["ratio"] == 1.0 and kernels["launches"] > 19000
    every = trace_completeness(trace)  # the device-to-device copies and memsets Score-P 8.4 never writes:
    assert every["status"] == "complete" and every["ratio"] == 1.0  # named and left out, not counted as lost
    assert {"memset", "memcpy DtoD"} <= set(every["per_rank"]["0"]["kinds_not_recorded"])


def _kept(tmp_path, monkeypatch, status, **figures):
    path = tmp_path / "preflight.json"
    path.write_text(
        json.dumps(
            {
                "schema": "dnabert-scaling/scorep-preflight/1",
                "status": status,
                "steps": 3,
                "steps_measured": 3,
                "bound": 0.999,
                **figures,
            }
        )
    )
    monkeypatch.setenv("DNABERT_SCALING_SCOREP_PREFLIGHT", str(path))
    import dnabert_scaling.run.tracing.scorep as sp

    monkeypatch.setattr(sp, "scorep_available", lambda: (True, "Score-P at /opt/scorep"))
    monkeypatch.setattr(sp, "under_scorep", lambda: False)
    return path


def test_auto_uses_scorep_after_a_complete_preflight(tmp_path, monkeypatch):
    from dnabert_scaling.run.tracing import resolve_tracer

    _kept(tmp_path, monkeypatch, "complete", launches=22539, activities=22539, ratio=1.0, steps_below_bound=0)
    assert resolve_tracer("auto") == ("scorep", None)


def test_auto_falls_back_with_the_preflight_figures(tmp_path, monkeypatch):
    from dnabert_scaling.run.tracing import resolve_tracer

    path = _kept(tmp_path, monkeypatch, "incomplete", launches=3881, activities=184, ratio=184 / 3881, steps_below_bound=3)
    tracer, fallback = resolve_tracer("auto")
    assert tracer == "torch" and fallback.what == "tracer"
    assert "Score-P recorded 4.7% of the launched kernels in the preflight" in fallback.reason
    assert "184 GPU activities for 3,881 launches, 3 of 3 steps below 99.9%" in fallback.reason
    assert str(path) in fallback.reason
    assert resolve_tracer("scorep") == ("scorep", None)  # explicit: Score-P runs, the gate judges


def test_failed_preflight_falls_back_with_its_reason(tmp_path, monkeypatch):
    from dnabert_scaling.run.tracing import resolve_tracer

    _kept(tmp_path, monkeypatch, "failed", reason="the Score-P preflight run failed (exit status 1): boom")
    tracer, fallback = resolve_tracer("auto")
    assert tracer == "torch" and "exit status 1): boom" in fallback.reason


def test_revision_stamped_into_a_copy(tmp_path, monkeypatch):
    from dnabert_scaling import provenance

    monkeypatch.delenv("DNABERT_SCALING_REVISION", raising=False)
    outer = tmp_path / "checkout"  # the GPU machine's copy of another checkout, with its .git
    (outer / ".git").mkdir(parents=True)
    pkg = outer / ".gpu-run" / "artifact" / "dnabert_scaling"
    pkg.mkdir(parents=True)
    (outer / ".gpu-run" / "REVISION").write_text("0123abcd\n")
    assert provenance.git_revision(pkg) == "0123abcd"  # the copy's stamp, not the outer .git
    monkeypatch.setenv("DNABERT_SCALING_REVISION", "feedbeef")
    assert provenance.git_revision(pkg) == "feedbeef"
    monkeypatch.delenv("DNABERT_SCALING_REVISION")
    bare = tmp_path / "bare" / "artifact"
    bare.mkdir(parents=True)
    assert provenance.git_revision(bare) is None
    assert provenance.stamped_revision(ROOT / "artifact") is None  # this checkout: git decides
