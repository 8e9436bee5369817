"""The tools' command line: ``python -m dnabert_scaling.tools <subcommand> [options]``.

The same shape as ``dnabert-scaling`` (``dnabert_scaling.cli``): each subcommand's module provides
``add_arguments(parser)`` and ``run(args) -> int``, is imported only when its subcommand runs, and an
:class:`~dnabert_scaling.errors.ArtifactError` becomes a message and exit status 2.
"""

from __future__ import annotations

import sys

from dnabert_scaling.cli import main as run_command

PROG = "python -m dnabert_scaling.tools"
DESCRIPTION = "Build, test and shipping tools of the dnabert-scaling artifact (no runtime stage uses them)."

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "docs": (
        "dnabert_scaling.tools.docs",
        "rewrite the figures of README.md, ARTIFACT.md and expected/README.md from the shipped files; --check: diff, exit 1 when stale (make docs)",
    ),
    "lint-container": (
        "dnabert_scaling.tools.containerlint",
        "static checks of an Apptainer definition file and the project's shell scripts (make lint-container)",
    ),
}


def main(argv: list[str] | None = None) -> int:
    return run_command(list(sys.argv[1:] if argv is None else argv), PROG, DESCRIPTION, SUBCOMMANDS)
