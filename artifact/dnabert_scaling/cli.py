"""The ``dnabert-scaling`` command line.

Each subcommand lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported only when their subcommand runs, so ``--help`` is fast
and a subcommand's heavy imports (torch, otf2, nbconvert) cost nothing elsewhere.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dnabert_scaling import __version__
from dnabert_scaling.errors import ArtifactError, Stopped, escape_hidden, stop_on_signals

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "train": ("dnabert_scaling.run.train.rank", "one rank of DNABERT-2 fine-tuning under DDP (start under torchrun or srun)"),
    "synth-data": ("dnabert_scaling.run.workload.data", "write a synthetic GUE-format task (planted motifs decide the label)"),
    "sweep": ("dnabert_scaling.run.sweep.driver", "run the traced/untraced world-size sweep (local torchrun or SLURM)"),
    "busbw": ("dnabert_scaling.run.busbw", "all_reduce bus-bandwidth benchmark at the DDP bucket sizes"),
    "analyze": ("dnabert_scaling.analysis.cli", "metrics per world size from run directories or bare traces"),
    "check": ("dnabert_scaling.checker", "compare metrics with the claims in expected/claims.toml"),
    "report": ("dnabert_scaling.report.build", "write the paper-style HTML report"),
    "convert": ("dnabert_scaling.traces.convert", "convert Kineto traces to OTF2 (Score-P 9 layout)"),
    "summarize": ("dnabert_scaling.traces.summary", "per-rank GPU-time summary of one trace"),
    "predict": ("dnabert_scaling.analysis.predict", "predict multi-GPU step time and overlap from a one-GPU trace"),
    "selftest": ("dnabert_scaling.selftest", "quick end-to-end check of this installation"),
}


class DefaultsOnce(argparse.HelpFormatter):
    """Every option's help ends with its default, once: appended as ``(default: X)`` unless the help
    already names the default in its own words; no default shown for flags and unset (None) values."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            default is None
            or action.nargs == 0
            or default is argparse.SUPPRESS
            or not action.option_strings
            or isinstance(action, argparse._VersionAction)
            or "default" in text.lower()
            or "%(default)" in text
        ):
            return text
        return (text + " " if text else "") + "(default: %(default)s)"


DESCRIPTION = "DNABERT-2 DDP scaling study: traced runs, trace analysis, claims checker, report."


def build_parser(
    prog: str = "dnabert-scaling", description: str = DESCRIPTION, subcommands: dict[str, tuple[str, str]] | None = None
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in (SUBCOMMANDS if subcommands is None else subcommands).items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(
    argv: list[str] | None = None,
    prog: str = "dnabert-scaling",
    description: str = DESCRIPTION,
    subcommands: dict[str, tuple[str, str]] | None = None,
) -> int:
    """Run one subcommand (``prog``, ``description`` and ``subcommands``: another command of the same
    shape, e.g. ``python -m dnabert_scaling.tools``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    subcommands = SUBCOMMANDS if subcommands is None else subcommands
    parser = build_parser(prog, description, subcommands)
    if not argv:  # a command is required: the usage, and a non-zero exit
        parser.print_help(sys.stderr)
        print(f"{prog}: error: give a COMMAND", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "--version") or argv[0] not in subcommands:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
    name, rest = argv[0], argv[1:]
    module_name, help_text = subcommands[name]
    module = importlib.import_module(module_name)
    sub = argparse.ArgumentParser(prog=f"{prog} {name}", description=help_text, formatter_class=DefaultsOnce)
    module.add_arguments(sub)
    args = sub.parse_args(rest)
    received: list[int] = []
    try:
        return _run_reporting_errors(module, args, f"{prog} {name}", received)
    except BaseException as exc:
        if not received and not isinstance(exc, Stopped):
            raise
        # After a stop signal, whatever ends the command is that stop: a library unwinding from it
        # (nbclient's event loop) may raise something else on the way, but the cause is the signal.
        stop = exc if isinstance(exc, Stopped) else Stopped(received[0])
        print(f"{prog} {name}: {stop}", file=sys.stderr)
        return stop.exit_code


def shown(message: str) -> str:
    """An error message as the terminal gets it: the file names and trace names in it are the user's or the trace's,
    so their control, format and separator characters are written as escapes (``errors.escape_hidden``); the line
    breaks a message holds on purpose are kept."""
    return "\n".join(escape_hidden(line) for line in message.split("\n"))


def _run_reporting_errors(module, args: argparse.Namespace, command: str, received: list[int]) -> int:
    """``module.run(args)``: a user-facing error as one line and exit status 2 (``ArtifactError``,
    a write that failed); a stop signal's number is appended to ``received``."""
    try:
        stop_on_signals(received)
        return int(module.run(args) or 0)
    except Stopped:
        raise
    except ArtifactError as exc:
        if received:
            raise
        print(f"{command}: error: {shown(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a write that failed after the up-front checks (disk full, a folder removed)
        if received:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"{command}: error: {shown(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a SIGINT a subcommand's own handler turned into KeyboardInterrupt (sweep)
        print(f"{command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
