"""The command-line reference, from the argparse parsers and the scripts' own usage comments.

Per command: its description, its usage line, and one table of options per argument group with
the help text argparse would print (``%(default)s`` expanded); per shell script, its header
comment. Usage lines are formatted at a fixed width so a build does not depend on the terminal.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterable
from pathlib import Path

from docgen.commands import REPO, Command, script_usage
from docgen.markdown import code, table

USAGE_WIDTH = 100


def command_reference(commands: Iterable[Command], level: int = 2) -> str:
    """A section per command (heading ``level``): description, usage, option tables."""
    return "\n\n".join(parser_section(command.name, command.parser(), level) for command in commands)


def parser_section(name: str, parser: argparse.ArgumentParser, level: int = 2) -> str:
    """One command: heading, description, usage block, then a table per non-empty argument group."""
    parser.formatter_class = functools.partial(parser.formatter_class, width=USAGE_WIDTH)
    parts = [f"{'#' * level} {code(name)}"]
    if parser.description:
        parts.append(parser.description)
    parts.append(f"```text\n{parser.format_usage().strip()}\n```")
    for group in parser._action_groups:  # argparse keeps its groups private too
        rows = [_row(parser, action) for action in group._group_actions if action.help != argparse.SUPPRESS]
        if rows:
            parts += [f"**{group.title}**", table(("argument", "description"), rows)]
    if parser.epilog:
        parts.append(parser.epilog)
    return "\n\n".join(parts)


def scripts_reference(scripts: Iterable[Path], level: int = 2) -> str:
    """A section per shell script: its path and its header comment, verbatim."""
    return "\n\n".join(
        f"{'#' * level} {code(script.relative_to(REPO))}\n\n```text\n{script_usage(script)}\n```"
        for script in scripts
    )


def _row(parser: argparse.ArgumentParser, action: argparse.Action) -> tuple[str, str]:
    if not action.option_strings:
        return code(action.metavar or action.dest), _expand_help(parser, action)
    flags = ", ".join(action.option_strings)
    if action.nargs != 0:
        flags += " " + _metavar(action)
    return code(flags), _expand_help(parser, action)


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest.upper()


def _expand_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as ``--help`` prints it: ``%(default)s``, ``%(choices)s``, ``%(prog)s`` filled in."""
    if not action.help:
        return ""
    params = {key: value for key, value in vars(action).items() if value is not argparse.SUPPRESS}
    params["prog"] = parser.prog
    for key, value in list(params.items()):
        if hasattr(value, "__name__"):
            params[key] = value.__name__
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(choice) for choice in params["choices"])
    return action.help % params
