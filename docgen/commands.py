"""The project's command lines, each by its one definition: an argparse parser or a script's own flags.

What the CLI reference renders and what :mod:`.command_lines` checks the docs against. A
Python command is its ``build_parser()``; ``reward-eval`` dispatches to one parser per
subcommand (``reward_eval.cli.COMMANDS``); ``run_embodiment.sh`` takes its own mode flags (read
from its ``case`` statement) and passes the rest to Hydra as overrides; the launcher scripts
name the command they wrap (:data:`SCRIPTS`).
"""

from __future__ import annotations

import argparse
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVER = "python -m vlm_reward.libero_reward_server"
REWARD_EVAL = "python -m reward_eval"
TINY_CHECKPOINT = "python -m vlm_reward.tools.tiny_checkpoint"
RUN_EMBODIMENT = "examples/embodiment/scripts/run_embodiment.sh"
EVALUATE = "examples/embodiment/scripts/evaluate_reward_model.sh"
START_SERVER = "examples/embodiment/scripts/start_reward_server.sh"
# Shell variables the docs use for a script, defined where they first appear (EVAL=...).
VARIABLES = {"$EVAL": EVALUATE}
_CASE_FLAG = re.compile(r"^\s*(--[a-z][a-z-]*)\)", re.MULTILINE)


@dataclass(frozen=True)
class Command:
    """A Python command line: how the docs call it, and its parser (built on demand)."""

    name: str
    module: str  # where build_parser() lives

    def parser(self) -> argparse.ArgumentParser:
        """The command's parser, from its module's ``build_parser()``."""
        return importlib.import_module(self.module).build_parser()


def reward_eval_commands() -> dict[str, Command]:
    """``reward-eval``'s subcommands by name, each with its own parser."""
    from reward_eval.cli import COMMANDS

    return {
        name: Command(f"{REWARD_EVAL} {name}", f"reward_eval.commands.{module}")
        for name, (module, _) in COMMANDS.items()
    }


def python_commands() -> dict[str, Command]:
    """Every Python command line of the project by how the docs write it."""
    return {
        SERVER: Command(SERVER, "vlm_reward.server.cli"),
        **{command.name: command for command in reward_eval_commands().values()},
        TINY_CHECKPOINT: Command(TINY_CHECKPOINT, "vlm_reward.tools.tiny_checkpoint"),
    }


def accepted_flags(parser: argparse.ArgumentParser) -> frozenset[str]:
    """Every option string ``parser`` accepts (argparse has no public accessor for them)."""
    return frozenset(flag for action in parser._actions for flag in action.option_strings)


def script_flags(script: Path) -> tuple[str, ...]:
    """The flags a shell script handles itself: the ``--flag)`` patterns of its ``case`` statements."""
    return tuple(_CASE_FLAG.findall(script.read_text()))


def script_usage(script: Path) -> str:
    """A script's header comment (after the shebang, up to its first command): its usage text."""
    lines = []
    for line in script.read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        lines.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(lines).strip("\n")


def documented_scripts() -> list[Path]:
    """The shell scripts a user runs: ``scripts/*.sh`` and ``examples/embodiment/scripts/*.sh``."""
    return sorted([*REPO.glob("scripts/*.sh"), *REPO.glob("examples/embodiment/scripts/*.sh")])
