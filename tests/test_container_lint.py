"""containerlint: the real definition passes; broken ones fail with the right FILE:LINE message."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

DEF = ROOT / "containers" / "dnabert-scaling.def"
REAL = DEF.read_text()
HAS_SHELLCHECK = shutil.which("shellcheck") is not None


def lint(path: Path, *extra: str, context: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "dnabert_scaling.tools", "lint-container", "--context", str(context), *extra, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in the definition")


def full_context(tmp_path: Path) -> Path:
    """The repository as the build sees it, with any %files folder a fresh clone lacks (git keeps
    no empty folders) made empty."""
    ctx = tmp_path / "context"
    ctx.mkdir()
    for item in ROOT.iterdir():
        if item.name not in (".git", ".venv"):
            (ctx / item.name).symlink_to(item)
    for name in ("expected", "docs"):
        if not (ctx / name).exists():
            (ctx / name).mkdir()
    return ctx


def test_real_definition_passes(tmp_path):
    proc = lint(DEF, context=full_context(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 10: containers/build-scorep.sh and build.sh, the patch check scripts (cpu-build, run, syntax-check), 3 of slurm, 2 of CI
    assert "ok (18 sections, 10 shell script(s)" in proc.stdout
    assert ("and shellcheck" if HAS_SHELLCHECK else "shellcheck not installed") in proc.stdout


def test_real_definition_in_this_checkout():
    """In the checkout itself the only possible problem is a %files folder git has not got yet."""
    proc = lint(DEF)
    missing = [p for p in ("expected", "docs") if not (ROOT / p).exists()]
    if not missing:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 1
        assert sorted(re.findall(r"source '(\w+)' does not exist in the build directory", proc.stdout)) == sorted(missing)
        assert len(proc.stdout.strip().splitlines()) == len(missing), proc.stdout


def edit(text: str, old: str, new: str, count: int = 1) -> str:
    assert old in text, old
    return text.replace(old, new, count)


BROKEN = [
    # (name, transform, expected message (regex), needle of the reported line or None for "any line")
    (
        "tag_instead_of_digest",
        lambda t: edit(t, "BASE_IMAGE=nvidia/cuda@sha256:", "BASE_IMAGE=nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04#"),
        r"is not pinned by digest",
        "From: {{ BASE_IMAGE }}",
    ),
    (
        "tag_and_digest",
        lambda t: edit(t, "BASE_IMAGE=nvidia/cuda@sha256:", "BASE_IMAGE=nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04@sha256:"),
        r"has a tag and a digest",
        "From: {{ BASE_IMAGE }}",
    ),
    (
        "short_digest",
        lambda t: re.sub(r"(BASE_IMAGE=nvidia/cuda@sha256:)[0-9a-f]{64}", r"\g<1>abc123", t),
        r"64 lowercase hex digits",
        "From: {{ BASE_IMAGE }}",
    ),
    (
        "from_first",
        lambda t: edit(t, "Bootstrap: docker\nFrom: {{ BASE_IMAGE }}\n", "From: {{ BASE_IMAGE }}\nBootstrap: docker\n"),
        r"first header keyword must be 'Bootstrap:', not 'from'",
        "From: {{ BASE_IMAGE }}",
    ),
    ("header_without_colon", lambda t: edit(t, "Bootstrap: docker", "Bootstrap docker"), r"had no val", "Bootstrap docker"),
    (
        "unknown_header_keyword",
        lambda t: edit(t, "From: {{ BASE_IMAGE }}\n", "From: {{ BASE_IMAGE }}\nFrm: ubuntu\n"),
        r"invalid header keyword 'frm'",
        "Frm: ubuntu",
    ),
    ("no_bootstrap", lambda t: edit(t, "Bootstrap: docker\n", "# no bootstrap\n"), r"no 'Bootstrap:' header", None),
    (
        "local_base",
        lambda t: edit(t, "Bootstrap: docker", "Bootstrap: localimage"),
        r"must come from a registry",
        "Bootstrap: localimage",
    ),
    ("unknown_section", lambda t: edit(t, "%environment", "%enviroment"), r"invalid section %enviroment", "%enviroment"),
    (
        "percent_line_in_script",
        lambda t: edit(t, "    apt-get clean\n", "    apt-get clean\n%s done\n"),
        r"invalid section %s",
        "%s done",
    ),
    ("app_without_name", lambda t: edit(t, "%apprun check", "%apprun"), r"app section %apprun has no app name", None),
    (
        "undefined_build_var",
        lambda t: edit(t, 'MAKE_JOBS="{{ MAKE_JOBS }}"', 'MAKE_JOBS="{{ MAKE_THREADS }}"'),
        r"build variable MAKE_THREADS is not defined",
        "MAKE_THREADS",
    ),
    (
        "var_after_hash",
        lambda t: edit(t, '    SCOREP_MPI="{{ SCOREP_MPI }}"', '    n="${#PATH}"; SCOREP_MPI="{{ SCOREP_MPI }}"'),
        r"comes after '#' on its line",
        'n="${#PATH}"',
    ),
    ("no_test", lambda t: re.sub(r"%test\n.*?(?=\n%apprun sweep)", "", t, flags=re.S), r"no %test section", None),
    ("no_help", lambda t: re.sub(r"%help\n.*?(?=\n%files)", "", t, flags=re.S), r"no %help section", None),
    (
        "runscript_without_exec",
        lambda t: edit(t, '%runscript\n    exec dnabert-scaling "$@"', '%runscript\n    dnabert-scaling "$@"'),
        r"%runscript does not 'exec'",
        "%runscript",
    ),
    (
        "runscript_drops_arguments",
        lambda t: edit(t, '%runscript\n    exec dnabert-scaling "$@"', "%runscript\n    exec dnabert-scaling"),
        r"does not pass \"\$@\"",
        "%runscript",
    ),
    (
        "apprun_without_exec",
        lambda t: edit(t, '    exec dnabert-scaling check "$@"', '    dnabert-scaling check "$@"'),
        r"%apprun check does not 'exec'",
        "%apprun check",
    ),
    (
        "setup_section",
        lambda t: edit(t, "%files\n", "%setup\n    touch ${APPTAINER_ROOTFS}/x\n\n%files\n"),
        r"%setup runs on the build host",
        "%setup",
    ),
    (
        "bash_syntax_error",
        lambda t: edit(t, '    if [ -z "$SCOREP_SHA256" ]; then', '    if [ -z "$SCOREP_SHA256" ]; then (('),
        r"%post: bash -n",
        None,
    ),
    (
        "bashism_in_sh_section",
        lambda t: edit(t, "    set -eu\n    fail()", "    set -eu\n    names=(a b)\n    fail()"),
        r"%test: dash -n|%test: sh -n",
        None,
    ),
    (
        "bash_option_in_runscript",
        lambda t: edit(t, "%runscript\n", "%runscript -c /bin/bash\n"),
        r"'-c' is only honoured for %post",
        "%runscript -c",
    ),
    ("missing_label", lambda t: edit(t, "    BaseTag {{ BASE_TAG }}\n", ""), r"%labels has no BaseTag", "%labels"),
    (
        "label_differs_from_base",
        lambda t: edit(t, "    BaseImage {{ BASE_IMAGE }}", "    BaseImage nvidia/cuda:latest"),
        r"label BaseImage 'nvidia/cuda:latest' differs from From",
        "BaseImage nvidia/cuda:latest",
    ),
    (
        "undeclared_version_argument",
        lambda t: edit(t, "    SCOREP_SHA256=7bbde9a0", "    SCOREP_SHASUM=7bbde9a0"),
        r"%arguments does not declare SCOREP_SHA256",
        "%arguments",
    ),
    (
        "old_scorep",
        lambda t: edit(t, "    SCOREP_VERSION=8.4", "    SCOREP_VERSION=7.1"),
        r"SCOREP_VERSION=7.1: the project builds Score-P 8.4 \(verified, with its patches\) or 9.x",
        "SCOREP_VERSION=7.1",
    ),
    (
        "short_revision",
        lambda t: edit(t, "DNABERT2_REVISION=d064dece8a8b41d9fb8729fbe3435278786931f1", "DNABERT2_REVISION=main"),
        r"DNABERT2_REVISION='main' is not a full 40-hex commit",
        "DNABERT2_REVISION=main",
    ),
    (
        "arguments_not_key_value",
        lambda t: edit(t, "    MAKE_JOBS=8\n", "    MAKE_JOBS 8\n"),
        r"'MAKE_JOBS 8' is not a KEY=value pair",
        "MAKE_JOBS 8",
    ),
    (
        "missing_files_source",
        lambda t: edit(t, "    docs /opt/dnabert-scaling/src/docs", "    nodocs /opt/dnabert-scaling/src/docs"),
        r"source 'nodocs' does not exist in the build directory",
        "nodocs",
    ),
    ("duplicate_section", lambda t: t + '\n%runscript\n    exec true "$@"\n', r"%runscript appears twice", None),
]


@pytest.mark.parametrize("name, transform, message, needle", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_definition_fails_with_its_message(tmp_path, name, transform, message, needle):
    text = transform(REAL)
    path = tmp_path / f"{name}.def"
    path.write_text(text)
    proc = lint(path, "--no-scripts")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    hits = [ln for ln in proc.stdout.splitlines() if re.search(message, ln)]
    assert hits, f"expected /{message}/ in:\n{proc.stdout}"
    m = re.match(rf"^{re.escape(str(path))}:(\d+): ", hits[0])
    assert m, hits[0]
    if needle is not None:
        assert int(m.group(1)) == line_of(text, needle), hits[0]


@pytest.mark.skipif(not HAS_SHELLCHECK, reason="shellcheck is not installed (apt-get install shellcheck)")
def test_shellcheck_finds_what_bash_n_does_not(tmp_path):
    text = edit(REAL, "    PREFIX=/opt/dnabert-scaling\n", "    PREFIX=/opt/dnabert-scaling\n    local x=1\n")
    path = tmp_path / "local.def"
    path.write_text(text)
    proc = lint(path, "--no-scripts")
    assert proc.returncode == 1
    assert (
        f"{path}:{line_of(text, 'local x=1')}: %post: shellcheck error: 'local' is only valid in functions. [SC2168]"
        in proc.stdout
    )


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.def"
    empty.write_text("\n")
    proc = lint(empty)
    assert proc.returncode == 1 and "empty definition file" in proc.stdout
    proc = lint(tmp_path / "nope.def")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_build_args_override_defaults(tmp_path):
    ctx = full_context(tmp_path)
    proc = lint(DEF, "--no-scripts", "--build-arg", "SCOREP_VERSION=9.3", context=ctx)
    assert proc.returncode == 0, proc.stdout
    proc = lint(DEF, "--no-scripts", "--build-arg", "SCOREP_VERSION=10.0")
    assert proc.returncode == 1 and "SCOREP_VERSION=10.0: the project builds Score-P 8.4" in proc.stdout
    proc = lint(DEF, "--no-scripts", "--build-arg", "SCOREP_VERSION=8.3", context=ctx)
    assert proc.returncode == 1 and "SCOREP_VERSION=8.3: no " in proc.stdout and "series-8.3" in proc.stdout
    proc = lint(DEF, "--no-scripts", "--build-arg", "BASE_IMAGE=ubuntu:24.04")
    assert proc.returncode == 1 and "From: 'ubuntu:24.04' is not pinned by digest" in proc.stdout
    proc = lint(DEF, "--no-scripts", "--build-arg", "SCOREP_SHA256=xyz")
    assert proc.returncode == 1 and "SCOREP_SHA256='xyz' is not a sha256" in proc.stdout


def test_project_shell_scripts_are_checked(tmp_path):
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/usr/bin/env bash\nif true; then\n  echo x\n")
    proc = lint(DEF, "--shell", str(bad))
    assert proc.returncode == 1 and f"{bad}: bash -n:" in proc.stdout
    if HAS_SHELLCHECK:
        bad.write_text('#!/usr/bin/env bash\nfor f in $(ls); do echo "$f"; done\ncd /tmp\n')
        proc = lint(DEF, "--shell", str(bad))
        assert proc.returncode == 1 and "SC2045" in proc.stdout
