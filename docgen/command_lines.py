"""Every command line shown in the docs must use flags its command accepts.

:func:`command_lines` finds them in a Markdown page: the lines of its shell code blocks
(backslash continuations joined, comments dropped) and the inline code spans that start a
command. :func:`problems` resolves each to the command it runs (:mod:`.commands`: a Python
command's parser, ``reward-eval``'s subcommands through any of its launchers,
``run_embodiment.sh``'s own flags, ``start_reward_server.sh``'s server flags) and reports a
flag the command does not accept, an unknown ``reward-eval`` command, a script path that does
not exist, and a ``reward_model.KEY`` (in the text or a YAML block) that the config lacks.
Placeholders stay legal: ``...``, ``[--optional]`` brackets, ``$VARIABLES``, ``NAME=value``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

from docgen.commands import (
    EVALUATE,
    REPO,
    RUN_EMBODIMENT,
    SERVER,
    START_SERVER,
    TINY_CHECKPOINT,
    VARIABLES,
    accepted_flags,
    python_commands,
    reward_eval_commands,
    script_flags,
)

SHELL_LANGUAGES = ("bash", "sh", "shell")
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)")
_INLINE = re.compile(r"(`+)(.+?)\1")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REWARD_KEY = re.compile(r"\breward_model\.([A-Za-z_]\w*)")
_SEPARATORS = {"&&", "||", "|", ";"}
# How a command is started in the docs, before its own arguments.
_STARTERS = ("bash", "python", "python3", ".venv/bin/python", "reward-eval", "libero-reward-server")


@dataclass(frozen=True)
class CommandLine:
    """One command line of a page: where it is (``path:line``) and its text, continuations joined."""

    where: str
    text: str


def command_lines(markdown: str, path: str) -> Iterator[CommandLine]:
    """The command lines of ``markdown``: shell code block lines, and inline spans that start a command."""
    for part in _parts(markdown):
        if part.language in SHELL_LANGUAGES:
            for number, text in _joined(part):
                yield CommandLine(f"{path}:{number}", text)
        elif part.language is None:
            for span in _INLINE.finditer(part.lines[0]):
                tokens = span.group(2).split()
                if tokens and (tokens[0] in _STARTERS or tokens[0].endswith(".sh")):
                    yield CommandLine(f"{path}:{part.line}", span.group(2))


def problems(line: CommandLine, flags_of: Callable[[str], Collection[str]]) -> list[str]:
    """What is wrong with ``line`` (empty: nothing); ``flags_of(name)`` gives a command's flags."""
    try:
        tokens = shlex.split(line.text, comments=True)
    except ValueError as exc:
        return [f"{line.where}: cannot be parsed as a shell line ({exc}): {line.text}"]
    found = []
    for segment in _segments(tokens):
        resolved = resolve(segment)
        if isinstance(resolved, str):
            found.append(f"{line.where}: {resolved}: {line.text}")
        elif resolved is not None:
            command, args = resolved
            found += [f"{line.where}: {message}: {line.text}" for message in _check(command, args, flags_of)]
    return found


def resolve(tokens: list[str]) -> tuple[str, list[str]] | str | None:
    """(command, its arguments) for a command of this project, ``None`` for any other command,
    or a problem (a script path that does not exist, an unknown ``reward-eval`` command)."""
    tokens = [VARIABLES.get(token, token) for token in _unbracketed(tokens)]
    for i, token in enumerate(tokens):
        rest = tokens[i + 1 :]
        if token == "-m" and rest:
            return _module(rest[0], rest[1:])
        if token.endswith(("/reward-eval", "reward-eval")):
            return _reward_eval(rest)
        if token.endswith("libero-reward-server"):
            return SERVER, rest
        if token.endswith(".sh"):
            return _script(token, rest)
    return None


def reward_model_keys(markdown: str) -> Iterator[str]:
    """Every ``reward_model.KEY`` of the text, and every key of a YAML block's ``reward_model:`` map."""
    yield from _REWARD_KEY.findall(markdown)
    for part in _parts(markdown):
        if part.language == "yaml":
            yield from _yaml_reward_keys(part.lines)


def flags_lookup() -> Callable[[str], frozenset[str]]:
    """``flags_of`` for :func:`problems`: each Python command's flags from its parser, once."""
    commands = python_commands()
    cache: dict[str, frozenset[str]] = {}

    def flags_of(name: str) -> frozenset[str]:
        if name not in cache:
            cache[name] = accepted_flags(commands[name].parser())
        return cache[name]

    return flags_of


def _check(command: str, args: list[str], flags_of: Callable[[str], Collection[str]]) -> list[str]:
    if command == RUN_EMBODIMENT:
        own = script_flags(REPO / RUN_EMBODIMENT)
        unknown = f"(its own: {', '.join(own)}; the rest are Hydra overrides)"
        return [
            f"{RUN_EMBODIMENT} takes {arg} only as its first argument"
            if arg in own
            else f"{RUN_EMBODIMENT} has no flag {arg} {unknown}"
            for position, arg in enumerate(args)
            if _is_flag(arg) and (position > 0 or arg not in own)
        ]
    if command == "":
        return []
    accepted = flags_of(command)
    return [
        f"{command} has no flag {flag.split('=', 1)[0]}"
        for flag in args
        if _is_flag(flag) and flag.split("=", 1)[0] not in accepted
    ]


def _module(module: str, args: list[str]) -> tuple[str, list[str]] | str | None:
    if module in ("vlm_reward.libero_reward_server", "vlm_reward.server.cli"):
        return SERVER, args
    if module == "reward_eval":
        return _reward_eval(args)
    if module == "vlm_reward.tools.tiny_checkpoint":
        return TINY_CHECKPOINT, args
    return None


def _reward_eval(args: list[str]) -> tuple[str, list[str]] | str:
    commands = reward_eval_commands()
    if not args:
        return "", args  # the command named, not run: nothing to check
    if args[0] not in commands:
        return f"reward-eval has no command {args[0]!r} (commands: {', '.join(commands)})"
    return commands[args[0]].name, args[1:]


def _script(token: str, args: list[str]) -> tuple[str, list[str]] | str:
    if "/" in token and not token.startswith("$") and not (REPO / token).is_file():
        return f"no script {token} in the repository"
    name = token.rsplit("/", 1)[-1]
    if name == EVALUATE.rsplit("/", 1)[-1]:
        return _reward_eval(args)
    if name == START_SERVER.rsplit("/", 1)[-1]:
        return SERVER, args[2:]  # BACKEND MODEL_PATH, then the server's own flags
    if name == RUN_EMBODIMENT.rsplit("/", 1)[-1]:
        return RUN_EMBODIMENT, args
    if token.endswith("scripts/run.sh"):
        return _reward_eval(["run", *args])
    return "", args  # set-up, test and docs scripts: no flags of ours to check


@dataclass(frozen=True)
class _Part:
    line: int  # the line number of its first line
    language: str | None  # a code block's language ("text" when it names none); None: a prose line
    lines: list[str]


def _parts(markdown: str) -> Iterator[_Part]:
    """The page as prose lines (one part each) and fenced code blocks (one part each)."""
    block: _Part | None = None
    fence = ""
    for number, line in enumerate(markdown.splitlines(), start=1):
        opening = _FENCE.match(line)
        if block is None and opening:
            fence, block = opening.group(2), _Part(number + 1, opening.group(3) or "text", [])
        elif block is not None and line.strip().startswith(fence):
            yield block
            block = None
        elif block is not None:
            block.lines.append(line)
        else:
            yield _Part(number, None, [line])


def _joined(block: _Part) -> Iterator[tuple[int, str]]:
    """A shell block's command lines with their line numbers, backslash continuations joined."""
    pending, start = "", 0
    for number, line in enumerate(block.lines, start=block.line):
        if line.rstrip().endswith("\\"):
            start = start or number
            pending += line.rstrip()[:-1] + " "
            continue
        if pending or line.strip():
            yield start or number, pending + line
        pending, start = "", 0


def _segments(tokens: list[str]) -> Iterator[list[str]]:
    segment: list[str] = []
    for token in tokens:
        if token in _SEPARATORS:
            yield segment
            segment = []
        else:
            segment.append(token)
    yield segment


def _unbracketed(tokens: list[str]) -> list[str]:
    stripped = [token.strip("[]") for token in tokens]
    while stripped and _ASSIGNMENT.match(stripped[0]):  # NAME=value before the command
        stripped.pop(0)
    return [token for token in stripped if token and token != "..."]


def _is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not re.fullmatch(r"-[\d.]+", token)


def _yaml_reward_keys(lines: list[str]) -> Iterator[str]:
    """The keys one level below each ``reward_model:`` line of a YAML block."""
    base: int | None = None
    level: int | None = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if base is not None and indent <= base:
            base = level = None
        if base is None:
            if line.strip() == "reward_model:":
                base = indent
            continue
        level = indent if level is None else level
        key = re.match(r"\s*([A-Za-z_]\w*)\s*:", line)
        if indent == level and key:
            yield key.group(1)
