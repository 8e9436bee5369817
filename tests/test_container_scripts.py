"""The image's scripts run outside the image (Apptainer cannot be installed here).

The sections are extracted (templated, as Apptainer would) by containerlint --extract and run with
/bin/sh like Apptainer runs them, against stand-in commands where the image's own are missing;
the data fetcher runs on local data. What cannot run here: the build itself, the Score-P build,
the downloads from Hugging Face and perftools, and %test inside a built image.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import DATA, PYTHON, ROOT

DEF = ROOT / "containers" / "dnabert-scaling.def"
FETCH = ROOT / "containers" / "fetch_assets.py"
BUILD = ROOT / "containers" / "build.sh"


@pytest.fixture(scope="module")
def sections(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sections")
    proc = subprocess.run(
        [
            PYTHON,
            "-m",
            "dnabert_scaling.tools",
            "lint-container",
            "--no-scripts",
            "--context",
            str(ROOT),
            "--extract",
            str(out),
            str(DEF),
        ],
        capture_output=True,
        text=True,
    )
    assert (out / "runscript.sh").is_file(), proc.stdout + proc.stderr
    return out


def fake_bin(tmp_path: Path, name: str, body: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(0o755)
    return bindir


def sh(script: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", str(script), *args], capture_output=True, text=True, env=env, timeout=60)


RECORD = 'printf "%s\\n" "$@" > "$RECORD"; exit "${FAKE_RC:-0}"'


def test_runscript_execs_the_cli_with_every_argument(sections, tmp_path):
    bindir = fake_bin(tmp_path, "dnabert-scaling", RECORD)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "RECORD": str(tmp_path / "args"), "FAKE_RC": "7"}
    proc = sh(sections / "runscript.sh", "train", "--out", "a dir", "", env=env)
    assert proc.returncode == 7  # exec: the CLI's exit status is the container's
    assert (tmp_path / "args").read_text().split("\n")[:-1] == ["train", "--out", "a dir", ""]


@pytest.mark.parametrize("app", ["sweep", "analyze", "check", "report", "selftest"])
def test_apps_exec_their_subcommand(sections, tmp_path, app):
    bindir = fake_bin(tmp_path, "dnabert-scaling", RECORD)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "RECORD": str(tmp_path / "args")}
    proc = sh(sections / f"apprun-{app}.sh", "--x", "y z", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "args").read_text().split("\n")[:-1] == [app, "--x", "y z"]
    assert (sections / f"apphelp-{app}.sh").read_text().strip()


def source_environment(sections: Path, env: dict) -> dict:
    script = f'. "{sections / "environment.sh"}" && env -0'
    proc = subprocess.run(["/bin/sh", "-c", script], capture_output=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return dict(item.split("=", 1) for item in proc.stdout.decode().split("\0") if "=" in item)


def test_environment_points_at_the_baked_data_and_writable_caches(sections, tmp_path):
    out = source_environment(sections, {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert out["DNABERT_SCALING_WEIGHTS"] == "/opt/dnabert-scaling/models/DNABERT-2-117M"
    assert out["DNABERT_SCALING_GUE"] == "/opt/dnabert-scaling/data/GUE"
    assert out["HF_HUB_OFFLINE"] == "1" and out["HF_DATASETS_OFFLINE"] == "1" and out["TRANSFORMERS_OFFLINE"] == "1"
    cache = f"{tmp_path}/dnabert-scaling-{os.getuid()}"
    for key in ("HF_HOME", "HF_MODULES_CACHE", "TRITON_CACHE_DIR", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        assert out[key].startswith(cache + "/"), (key, out[key])
    assert out["PATH"].split(":")[:3] == ["/opt/dnabert-scaling/venv/bin", "/opt/scorep/bin", "/usr/local/cuda/bin"]
    assert out["LD_LIBRARY_PATH"] == "/opt/scorep/lib:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/extras/CUPTI/lib64"


def test_environment_keeps_what_the_caller_set(sections, tmp_path):
    """--env / a bound copy of the data win over the image's defaults; no TMPDIR means /tmp."""
    out = source_environment(
        sections,
        {
            "PATH": "/usr/bin:/bin",
            "DNABERT_SCALING_GUE": "/scratch/GUE",
            "TRITON_CACHE_DIR": "/scratch/triton",
            "LD_LIBRARY_PATH": "/site/lib",
        },
    )
    assert out["DNABERT_SCALING_GUE"] == "/scratch/GUE" and out["TRITON_CACHE_DIR"] == "/scratch/triton"
    assert out["HF_HOME"] == f"/tmp/dnabert-scaling-{os.getuid()}/hf"
    assert (
        out["LD_LIBRARY_PATH"]
        == "/opt/scorep/lib:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/extras/CUPTI/lib64:/site/lib"
    )


SUMMARY_OK = "    CUDA support:          yes\n    libcupti support:      yes\n"


@pytest.mark.parametrize(
    "summary, message",
    [
        ("    CUDA support:          no\n", "Score-P was built without CUDA support"),
        ("    CUDA support:          yes\n    libcupti support:      no\n", "Score-P was built without CUPTI"),
        (SUMMARY_OK, "a Python package does not import"),  # this venv has no scorep bindings
    ],
)
def test_image_test_fails_for_what_it_checks(sections, tmp_path, summary, message):
    """%test with stand-ins for Score-P's tools: it stops at the first broken piece, saying which."""
    (tmp_path / "summary.txt").write_text(summary)
    bindir = fake_bin(tmp_path, "scorep-info", f'cat "{tmp_path / "summary.txt"}"')
    fake_bin(tmp_path, "scorep-config", "exit 0")
    venv_bin = Path(PYTHON).parent
    env = {
        "PATH": f"{bindir}:{venv_bin}:/usr/bin:/bin",
        "DNABERT_SCALING_WEIGHTS": str(tmp_path),
        "DNABERT_SCALING_GUE": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
    }
    proc = sh(sections / "test.sh", env=env)
    assert proc.returncode == 1
    assert f"image test failed: {message}" in proc.stderr, proc.stderr


# --- fetch_assets.py ---------------------------------------------------------------------------------


def fetch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, str(FETCH), *args], capture_output=True, text=True, timeout=120)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """A snapshot folder shaped like the released one (the golden tiny masked-LM checkpoint)."""
    src = tmp_path / "snapshot"
    src.mkdir()
    for f in (DATA / "golden" / "tiny-mlm-checkpoint").iterdir():
        if f.is_file():
            (src / f.name).write_bytes(f.read_bytes())
    (src / "tokenizer.json").write_bytes(
        (ROOT / "artifact" / "dnabert_scaling" / "resources" / "dnabert2" / "tokenizer.json").read_bytes()
    )
    return src


def test_weights_are_verified_and_recorded(tmp_path, checkpoint):
    digest = sha(checkpoint / "pytorch_model.bin")
    dest = tmp_path / "models" / "DNABERT-2-117M"
    size = (checkpoint / "pytorch_model.bin").stat().st_size
    proc = fetch("weights", "--from-dir", str(checkpoint), "--sha256", digest, "--size", str(size), "--dest", str(dest))
    assert proc.returncode == 0, proc.stderr
    sums = dict(line.split("  ")[::-1] for line in (dest / "SHA256SUMS").read_text().splitlines())
    assert sums["pytorch_model.bin"] == digest and set(sums) >= {"config.json", "tokenizer.json"}
    assert f"pytorch_model.bin sha256: {digest}" in (dest / "SOURCE.txt").read_text()
    # the result loads as the training code loads it
    from dnabert_scaling.run.workload.model import load_pretrained

    _, report = load_pretrained(dest, num_labels=2)
    assert {k.split(".")[0] + "." + k.split(".")[1] for k in report.missing} == {
        "bert.pooler",
        "classifier.weight",
        "classifier.bias",
    }

    again = fetch("weights", "--from-dir", str(checkpoint), "--sha256", digest, "--dest", str(dest))
    assert again.returncode == 1 and "exists and is not empty (use --force" in again.stderr


@pytest.mark.parametrize("problem", ["wrong sha256", "wrong size", "no config.json", "bad hex"])
def test_weights_problems_are_errors(tmp_path, checkpoint, problem):
    want, extra = sha(checkpoint / "pytorch_model.bin"), []
    if problem == "wrong sha256":
        want, message = "0" * 64, "pytorch_model.bin: sha256 "
    elif problem == "wrong size":
        extra, message = ["--size", "1"], "bytes, expected 1"
    elif problem == "no config.json":
        (checkpoint / "config.json").unlink()
        message = "config.json: missing from the checkpoint"
    else:
        want, message = "abc", "--sha256: 'abc' is not a sha256"
    proc = fetch("weights", "--from-dir", str(checkpoint), "--sha256", want, "--dest", str(tmp_path / "w"), *extra)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr


def test_weights_need_a_pinned_revision(tmp_path):
    proc = fetch("weights", "--sha256", "0" * 64, "--dest", str(tmp_path / "w"))
    assert proc.returncode == 1 and "--revision is required" in proc.stderr
    proc = fetch("weights", "--revision", "main", "--sha256", "0" * 64, "--dest", str(tmp_path / "w"))
    assert proc.returncode == 1 and "pin a full 40-hex commit" in proc.stderr


def make_gue_zip(tmp_path: Path, rows=(5, 2, 2), header="sequence,label") -> Path:
    archive = tmp_path / "GUE.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for group, task in (("prom", "prom_300_all"), ("EMP", "H3"), ("mouse", "0")):
            for split, n in zip(("train", "dev", "test"), rows):
                body = header + "\n" + "".join(f"ACGTACGT{i},{i % 2}\n" for i in range(n))
                zf.writestr(f"GUE/{group}/{task}/{split}.csv", body)
        zf.writestr("__MACOSX/GUE/._x", "junk")
    return archive


def test_gue_zip_download_is_verified_and_checked(tmp_path):
    archive = make_gue_zip(tmp_path)
    dest = tmp_path / "data" / "GUE"
    proc = fetch(
        "gue",
        "--zip-url",
        archive.as_uri(),
        "--zip-sha256",
        sha(archive),
        "--expect-rows",
        "prom_300_all=5,2,2",
        "--dest",
        str(dest),
    )
    assert proc.returncode == 0, proc.stderr
    assert (dest / "GUE" / "prom" / "prom_300_all" / "train.csv").is_file() and not (dest / "__MACOSX").exists()
    assert "3 GUE task(s)" in proc.stdout and "prom_300_all 5/2/2" in proc.stdout
    assert len((dest / "SHA256SUMS").read_text().splitlines()) == 9
    # train finds the task under $DNABERT_SCALING_GUE/*/<task> or deeper: the layout is the official one
    assert sorted(p.parent.name for p in dest.rglob("train.csv")) == ["0", "H3", "prom_300_all"]


@pytest.mark.parametrize(
    "kwargs, args, message",
    [
        ({}, ["--zip-sha256", "0" * 64], "sha256 "),
        (
            {},
            ["--expect-rows", "prom_300_all=47356,5920,5920"],
            "task prom_300_all has 5/2/2 train/dev/test rows, expected 47356/5920/5920",
        ),
        ({}, ["--expect-rows", "covid=1,1,1"], "task 'covid' is missing"),
        ({"header": "seq,y"}, [], "header 'seq,y', expected 'sequence,label'"),
        ({}, ["--zip-sha256", ""], "--zip-url needs --zip-sha256"),
    ],
)
def test_gue_problems_are_errors(tmp_path, kwargs, args, message):
    archive = make_gue_zip(tmp_path, **kwargs)
    base = ["gue", "--zip-url", archive.as_uri(), "--dest", str(tmp_path / "GUE")]
    if "--zip-sha256" not in args:
        base += ["--zip-sha256", sha(archive)]
    proc = fetch(*base, *args)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr


def test_gue_from_a_local_copy_with_a_broken_task(tmp_path):
    src = tmp_path / "GUE" / "prom" / "prom_300_all"
    src.mkdir(parents=True)
    (src / "train.csv").write_text("sequence,label\nACGT,1\n")
    (src / "dev.csv").write_text("sequence,label\nACGT,1,extra\n")
    proc = fetch("gue", "--from-dir", str(tmp_path / "GUE"), "--dest", str(tmp_path / "out"))
    assert proc.returncode == 1 and "dev.csv:2: 3 columns, the header has 2" in proc.stderr
    (src / "dev.csv").write_text("sequence,label\nACGT,1\n")
    proc = fetch("gue", "--from-dir", str(tmp_path / "GUE"), "--dest", str(tmp_path / "out"), "--force")
    assert proc.returncode == 1 and "test.csv: missing" in proc.stderr


# --- build.sh ------------------------------------------------------------------------------------------


def test_build_script_lints_then_needs_apptainer(tmp_path):
    env = {**os.environ, "PATH": f"{Path(PYTHON).parent}:/usr/bin:/bin"}
    proc = subprocess.run(["bash", str(BUILD), "--lint-only"], capture_output=True, text=True, env=env, timeout=120)
    if (ROOT / "expected").exists() and (ROOT / "docs").exists():
        assert proc.returncode == 0 and "containerlint:" in proc.stdout, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 2 and "is missing: %files copies it into the image" in proc.stderr
        return
    proc = subprocess.run(
        ["bash", str(BUILD), "--notest", "--build-arg", "MAKE_JOBS=2"], capture_output=True, text=True, env=env, timeout=120
    )
    if subprocess.run(["sh", "-c", "command -v apptainer || command -v singularity"], capture_output=True).returncode:
        assert proc.returncode == 2 and "apptainer not found" in proc.stderr
    proc = subprocess.run(["bash", str(BUILD), "--build-arg", "NOEQUALS"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "--build-arg 'NOEQUALS': expected KEY=VALUE" in proc.stderr
