"""The command line's own texts: a command is required, every option says what it does and its
default once."""

import argparse
import importlib
import re

import pytest

from dnabert_scaling.cli import SUBCOMMANDS, DefaultsOnce, main


def test_no_command_is_an_error_with_the_usage(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dnabert-scaling") and "give a COMMAND" in err and "summarize" in err


def _parser(name):
    p = argparse.ArgumentParser(prog=f"dnabert-scaling {name}", formatter_class=DefaultsOnce)
    importlib.import_module(SUBCOMMANDS[name][0]).add_arguments(p)
    return p


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_has_help_and_its_default_once(name):
    p = _parser(name)
    fmt = p._get_formatter()
    for action in p._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS or action.dest == "help":
            continue
        assert action.help, f"{name} {action.option_strings[0]}: no help text"
        text = fmt._expand_help(action)
        mentions = text.lower().count("default")
        if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
            assert mentions >= 1, f"{name} {action.option_strings[0]}: default {action.default!r} not shown: {text!r}"
        assert "(default: " not in text or text.count("(default") == 1, f"{name} {action.option_strings[0]}: {text!r}"
        assert not re.search(r"\(default[^)]*\).*\(default", text), f"{name} {action.option_strings[0]}: twice: {text!r}"


def test_defaults_are_appended_unless_the_help_names_them():
    p = argparse.ArgumentParser(formatter_class=DefaultsOnce)
    p.add_argument("--a", default=3, help="a number")
    p.add_argument("--b", default="x", help="a letter (default x, the usual)")
    p.add_argument("--c", default=None, help="unset")
    p.add_argument("--flag", action="store_true", help="a flag")
    p.add_argument("--off", dest="on", action="store_false", help="turn it off")
    text = " ".join(p.format_help().split())
    assert "a number (default: 3)" in text
    assert "a letter (default x, the usual)" in text and "(default: x)" not in text
    assert "unset (default" not in text and "a flag (default" not in text and "turn it off (default" not in text


def test_the_plain_baseline_switch_reads_without_a_double_negative():
    p = _parser("sweep")
    assert p.parse_args(["--skip-plain-baseline"]).baseline_no_ddp is False
    assert p.parse_args([]).baseline_no_ddp is True
    assert p.parse_args(["--no-baseline-no-ddp"]).baseline_no_ddp is False  # the old spelling still works
    assert "--no-baseline-no-ddp" not in p.format_help()
