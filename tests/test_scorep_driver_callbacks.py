"""Which CUDA driver API callbacks Score-P is asked for: ``records`` where the installed Score-P carries
the project's launch-callbacks and launch-records patches (read from its ``share/scorep-patches.txt``),
``launch`` where it carries the first only, else ``all`` with a fallback recorded in the provenance."""

from __future__ import annotations

import stat

import pytest

from dnabert_scaling.run.tracing import scorep as sp

STREAM = "patch: 8.4-cupti-stream-order.patch sha256 " + "a" * 64
LAUNCH = "patch: 8.4-cupti-launch-callbacks.patch sha256 " + "b" * 64
RECORDS = "patch: 8.4-cupti-launch-records.patch sha256 " + "c" * 64 + " verified"


def _install(root, patches_txt: str | None):
    """A Score-P install tree: bin/scorep-config (an executable) and, if given, share/scorep-patches.txt."""
    (root / "bin").mkdir(parents=True)
    tool = root / "bin" / "scorep-config"
    tool.write_text("#!/bin/sh\necho 8.4\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    if patches_txt is not None:
        (root / "share").mkdir()
        (root / "share" / "scorep-patches.txt").write_text(patches_txt)
    return root


@pytest.mark.parametrize(
    "patches_txt, mode",
    [
        (None, "all"),  # not built by containers/build-scorep.sh
        ("Score-P 8.4 built by containers/build-scorep.sh\n", "all"),  # built as released
        (f"Score-P 8.4 built by containers/build-scorep.sh\n{STREAM}\n", "all"),  # the first patch only
        (f"Score-P 8.4 built by containers/build-scorep.sh\n{LAUNCH}\n{STREAM}\n", "launch"),
        (f"Score-P 8.4 built by containers/build-scorep.sh\n{STREAM}\n{LAUNCH}\n{RECORDS}\n", "records"),
        # the records patch builds on the launch-callbacks one: alone it is no install of the series
        (f"Score-P 8.4 built by containers/build-scorep.sh\n{STREAM}\n{RECORDS}\n", "all"),
    ],
)
def test_mode_follows_the_installed_patches(tmp_path, monkeypatch, patches_txt, mode):
    _install(tmp_path / "sp", patches_txt)
    monkeypatch.setenv("PATH", str(tmp_path / "sp" / "bin"))
    monkeypatch.delenv("SCOREP_CUDA_DRIVER_CALLBACKS", raising=False)
    assert sp.scorep_prefix() == tmp_path / "sp"
    got, why = sp.default_driver_callbacks()
    assert got == mode
    assert (why is None) == (mode in ("launch", "records"))
    if why:
        assert "8.4-cupti-launch-callbacks.patch" in why
        assert ("has no share/scorep-patches.txt" in why) == (patches_txt is None)
    env = sp.scorep_environment(0, tmp_path / "run", base_env={})
    assert env["SCOREP_CUDA_DRIVER_CALLBACKS"] == mode
    # the caller's variable wins over the install's default, an explicit argument over both
    assert (
        sp.scorep_environment(0, tmp_path / "run", base_env={"SCOREP_CUDA_DRIVER_CALLBACKS": "all"})[
            "SCOREP_CUDA_DRIVER_CALLBACKS"
        ]
        == "all"
    )
    assert sp.scorep_environment(0, tmp_path / "run", driver_callbacks="launch")["SCOREP_CUDA_DRIVER_CALLBACKS"] == "launch"


def test_no_scorep_on_path_means_all(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert sp.scorep_prefix() is None
    assert sp.default_driver_callbacks()[0] == "all"


def test_fallback_recorded_when_every_driver_call_is_recorded(tmp_path, monkeypatch):
    _install(tmp_path / "sp", f"{STREAM}\n")
    monkeypatch.setenv("PATH", str(tmp_path / "sp" / "bin"))
    fb = sp.driver_callbacks_fallback({"SCOREP_CUDA_ENABLE": "driver,kernel", "SCOREP_CUDA_DRIVER_CALLBACKS": "all"})
    assert fb is not None and fb.what == "tracer" and "does not list it" in fb.reason
    # launch mode, or no driver records at all: nothing to report
    assert sp.driver_callbacks_fallback({"SCOREP_CUDA_ENABLE": "driver,kernel", "SCOREP_CUDA_DRIVER_CALLBACKS": "launch"}) is None
    assert sp.driver_callbacks_fallback({"SCOREP_CUDA_ENABLE": "kernel,memcpy"}) is None
    # 'references' implies driver records in Score-P 8.4
    assert sp.driver_callbacks_fallback({"SCOREP_CUDA_ENABLE": "kernel,references"}) is not None
    # the patched install, but 'all' asked for: the reason names the variable
    _install(tmp_path / "sp2", f"{LAUNCH}\n")
    monkeypatch.setenv("PATH", str(tmp_path / "sp2" / "bin"))
    fb = sp.driver_callbacks_fallback({"SCOREP_CUDA_ENABLE": "driver", "SCOREP_CUDA_DRIVER_CALLBACKS": "all"})
    assert fb is not None and fb.reason == "SCOREP_CUDA_DRIVER_CALLBACKS=all was given"


def test_records_mode_is_a_fallback_only_where_the_install_lacks_its_patch(tmp_path, monkeypatch):
    env = {"SCOREP_CUDA_ENABLE": "driver,kernel,memcpy,references", "SCOREP_CUDA_DRIVER_CALLBACKS": "records"}
    # the launch-callbacks patch alone takes 'records' for an unknown value: every driver call
    _install(tmp_path / "sp", f"{LAUNCH}\n")
    monkeypatch.setenv("PATH", str(tmp_path / "sp" / "bin"))
    fb = sp.driver_callbacks_fallback(env)
    assert fb is not None and "8.4-cupti-launch-records.patch" in fb.reason and "does not list it" in fb.reason
    records = "patch: 8.4-cupti-launch-records.patch sha256 candidate"
    _install(tmp_path / "sp2", f"{LAUNCH}\n{records}\n")
    monkeypatch.setenv("PATH", str(tmp_path / "sp2" / "bin"))
    assert sp.driver_callbacks_fallback(env) is None
    # the default where both patches are installed; 'launch' asked for there is no fallback either
    assert sp.default_driver_callbacks() == ("records", None)
    assert sp.scorep_environment(0, tmp_path / "run", base_env={})["SCOREP_CUDA_DRIVER_CALLBACKS"] == "records"
    assert sp.driver_callbacks_fallback({**env, "SCOREP_CUDA_DRIVER_CALLBACKS": "launch"}) is None
