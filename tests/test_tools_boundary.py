"""The tools sub-package stays apart: no runtime module imports ``dnabert_scaling.tools``; the
tools' command line has the subcommand shape of ``dnabert-scaling``."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

PACKAGE = ROOT / "artifact" / "dnabert_scaling"
TOOLS = "dnabert_scaling.tools"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source`` (also inside functions), relative ones resolved,
    and of every string constant naming a module of the package (``importlib.import_module`` tables)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("dnabert_scaling."):
            found.append((node.lineno, node.value))
    return found


def names_tools(name: str) -> bool:
    return name == TOOLS or name.startswith(TOOLS + ".")


def runtime_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "tools" not in p.relative_to(PACKAGE).parts[:1])


def test_no_runtime_module_imports_the_tools():
    paths = runtime_modules()
    assert len(paths) > 50 and PACKAGE / "cli.py" in paths and PACKAGE / "run" / "slurm" / "submit.py" in paths
    seen_package_imports = 0
    offenders = []
    for path in paths:
        mod = module_name(path)
        for line, name in imported_modules(path.read_text(), mod, path.name == "__init__.py"):
            seen_package_imports += name.startswith("dnabert_scaling")
            if names_tools(name):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert seen_package_imports > 100  # the walk does see the package's own imports
    assert not offenders, "runtime modules import the tools:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source, module, is_package",
    [
        ("import dnabert_scaling.tools.synth\n", "dnabert_scaling.traces.loader", False),
        ("def f():\n    from dnabert_scaling.tools import compact\n", "dnabert_scaling.analysis.metrics", False),
        ("from ..tools.containerlint import main\n", "dnabert_scaling.analysis.cli", False),
        ("from .tools import synth\n", "dnabert_scaling", True),
        ("CMDS = {'x': ('dnabert_scaling.tools.containerlint', 'help')}\n", "dnabert_scaling.cli", False),
    ],
)
def test_the_walk_catches_every_spelling_of_a_tools_import(source, module, is_package):
    assert any(names_tools(name) for _, name in imported_modules(source, module, is_package))


def test_relative_imports_of_other_modules_are_not_taken_for_tools():
    found = imported_modules("from .toolsy import x\nfrom ..traces import tools_like\n", "dnabert_scaling.analysis.cli", False)
    assert [n for _, n in found] == [
        "dnabert_scaling.analysis.toolsy",
        "dnabert_scaling.analysis.toolsy.x",
        "dnabert_scaling.traces",
        "dnabert_scaling.traces.tools_like",
    ]
    assert not any(names_tools(n) for _, n in found)


def tools(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "dnabert_scaling.tools", *args], capture_output=True, text=True, timeout=120)


def test_tools_help_lists_the_subcommands():
    proc = tools("--help")
    assert proc.returncode == 0 and "lint-container" in proc.stdout and "python -m dnabert_scaling.tools" in proc.stdout
    sub = tools("lint-container", "--help")
    assert sub.returncode == 0 and "--build-arg KEY=VALUE" in sub.stdout and "DEF" in sub.stdout


def test_tools_without_a_subcommand_or_with_an_unknown_one_exit_2():
    none = tools()
    assert none.returncode == 2 and "give a COMMAND" in none.stderr
    unknown = tools("no-such-tool")
    assert unknown.returncode == 2 and "invalid choice: 'no-such-tool'" in unknown.stderr


def test_lint_container_bad_build_arg_is_a_clear_error_without_traceback():
    proc = tools("lint-container", "--build-arg", "NOEQUALS", str(ROOT / "containers" / "dnabert-scaling.def"))
    assert proc.returncode == 2
    assert "lint-container: error: --build-arg 'NOEQUALS': expected KEY=VALUE" in proc.stderr
    assert "Traceback" not in proc.stderr
