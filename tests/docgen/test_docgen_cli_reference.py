"""docgen.cli_reference and docgen.commands: every option of every command, as --help has it."""

from __future__ import annotations

import argparse

import pytest

from docgen.cli_reference import parser_section, scripts_reference
from docgen.commands import (
    REPO,
    RUN_EMBODIMENT,
    accepted_flags,
    documented_scripts,
    python_commands,
    script_flags,
    script_usage,
)

COMMANDS = python_commands()


@pytest.mark.parametrize("name", list(COMMANDS), ids=list(COMMANDS))
def test_every_flag_of_a_command_is_in_its_section(name: str) -> None:
    parser = COMMANDS[name].parser()
    text = parser_section(name, COMMANDS[name].parser())
    for flag in accepted_flags(parser):
        assert f"`{flag}" in text or f", {flag}" in text, flag
    assert "%(" not in text  # argparse's placeholders are filled in


def test_a_section_expands_help_like_argparse() -> None:
    parser = argparse.ArgumentParser(prog="tool", description="Does things.")
    group = parser.add_argument_group("knobs")
    group.add_argument(
        "--level", choices=["a", "b"], default="a", help="one of %(choices)s (default: %(default)s)"
    )
    group.add_argument("--quiet", action="store_true", help="say less")
    group.add_argument("--hidden", help=argparse.SUPPRESS)
    parser.add_argument("path", help="where %(prog)s looks")
    text = parser_section("tool", parser, level=3)
    assert text.startswith("### `tool`\n\nDoes things.\n\n```text\nusage: tool [-h]")
    assert "| `--level {a,b}` | one of a, b (default: a) |" in text
    assert "| `--quiet` | say less |" in text
    assert "| `path` | where tool looks |" in text
    assert "--hidden" not in text.split("```")[2]  # in no table (argparse's usage line hides it too)


def test_run_embodiment_flags_come_from_its_case_statement() -> None:
    assert script_flags(REPO / RUN_EMBODIMENT) == ("--dry-run", "--cpu-smoke", "--cpu-learn")


def test_every_script_has_a_usage_comment_and_a_section() -> None:
    scripts = documented_scripts()
    assert {s.name for s in scripts} >= {"run.sh", "test.sh", "setup.sh", "docs.sh", "run_embodiment.sh"}
    text = scripts_reference(scripts)
    for script in scripts:
        usage = script_usage(script)
        assert usage and not usage.startswith("!"), script
        assert f"## `{script.relative_to(REPO)}`" in text
