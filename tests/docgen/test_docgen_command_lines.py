"""docgen.command_lines: every command line in the docs and the README uses flags its command accepts."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from docgen.command_lines import (
    CommandLine,
    command_lines,
    flags_lookup,
    problems,
    resolve,
    reward_model_keys,
)
from docgen.commands import REPO, RUN_EMBODIMENT, SERVER, TINY_CHECKPOINT, reward_eval_commands
from vlm_reward.client.config import RewardModelConfig

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FLAGS = flags_lookup()


def _problems(text: str) -> list[str]:
    return problems(CommandLine("page.md:1", text), FLAGS)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("bash $EVAL run --tasks 0,1 --policy expert", []),
        ("bash $EVAL run --task 0,1", ["python -m reward_eval run has no flag --task"]),
        ("reward-eval audit RUN --fail-above=0.2", []),
        ("python -m reward_eval rescue RUN", ["reward-eval has no command 'rescue'"]),
        (".venv/bin/python -m vlm_reward.libero_reward_server --model M [--max-wait-ms 20] [...]", []),
        (
            "python -m vlm_reward.libero_reward_server --model M --api-key KEY",
            [f"{SERVER} has no flag --api-key"],
        ),
        ("... start_reward_server.sh PRIMO-R1 /models/PRIMO-R1 --max-nframes 32", []),
        (
            "bash examples/embodiment/scripts/start_reward_server.sh qwen_vl_hf M --nframes 8",
            [f"{SERVER} has no flag"],
        ),
        (f"bash {RUN_EMBODIMENT} --dry-run libero_10_grpo_openvlaoft env.train.reward_model.enable=True", []),
        (
            f"bash {RUN_EMBODIMENT} libero_10 --cpu-smoke",
            [f"{RUN_EMBODIMENT} takes --cpu-smoke only as its first"],
        ),
        (f"bash {RUN_EMBODIMENT} --gpus 8", [f"{RUN_EMBODIMENT} has no flag --gpus"]),
        (
            "bash examples/embodiment/run_embodiment.sh ... x=1",
            ["no script examples/embodiment/run_embodiment.sh"],
        ),
        ("RAY_ADDRESS=local bash scripts/run.sh --model /m --policy random", []),
        ("bash scripts/run.sh --modle /m", ["python -m reward_eval run has no flag --modle"]),
        ("SETUP_VLLM=0 bash scripts/setup.sh   # sets up .venv only", []),
        ("vllm serve /models/Q --data-parallel-size 4", []),
        ("python -m vlm_reward.tools.tiny_checkpoint OUT [--family qwen3_vl]", []),
        ("bash $EVAL report RUN --threshold -1", []),
        ("bash $EVAL run --tasks 'unbalanced", ["cannot be parsed as a shell line"]),
    ],
    ids=[
        "eval-ok",
        "eval-bad-flag",
        "flag-equals",
        "unknown-command",
        "server-brackets",
        "server-bad-flag",
        "start-server-ok",
        "start-server-bad",
        "embodiment-ok",
        "embodiment-late-flag",
        "embodiment-bad",
        "missing-script",
        "run-sh-ok",
        "run-sh-bad",
        "setup",
        "not-ours",
        "tiny",
        "negative-number",
        "bad-quote",
    ],
)
def test_problems(line: str, expected: list[str]) -> None:
    found = _problems(line)
    assert len(found) == len(expected), found
    for problem, fragment in zip(found, expected, strict=True):
        assert fragment in problem


def test_command_lines_joins_continuations_and_finds_inline_commands() -> None:
    page = "\n".join(
        [
            "Run `bash $EVAL report RUN --threshold 0.4`, not `--threshold` alone.",
            "```bash",
            "EVAL=examples/embodiment/scripts/evaluate_reward_model.sh",
            "bash $EVAL run --tasks 0 \\",
            "    --episodes-per-task 2",
            "# a comment",
            "```",
            "```yaml",
            "bash $EVAL run --not-a-shell-block",
            "```",
        ]
    )
    found = [(line.where, line.text.split()) for line in command_lines(page, "p.md")]
    assert found == [
        ("p.md:1", ["bash", "$EVAL", "report", "RUN", "--threshold", "0.4"]),
        ("p.md:3", ["EVAL=examples/embodiment/scripts/evaluate_reward_model.sh"]),
        ("p.md:4", ["bash", "$EVAL", "run", "--tasks", "0", "--episodes-per-task", "2"]),
        ("p.md:6", ["#", "a", "comment"]),
    ]


def test_resolve_ignores_other_commands() -> None:
    assert resolve(["pip", "install", "vllm==0.32.0"]) is None
    assert resolve(["python", "-m", "vllm.entrypoints.openai.api_server", "--port", "8000"]) is None


def test_reward_model_keys_in_text_and_yaml() -> None:
    page = "\n".join(
        [
            "Set `env.train.reward_model.api_key_env=NAME` or `reward_model.ca_bundle`.",
            "```yaml",
            "env:",
            "  reward_model:",
            "    enable: True",
            "    endpoint: [a, b]  # replicas",
            "    backend_kwargs:",
            "      prompt: roboreward",
            "  other: 1",
            "```",
        ]
    )
    assert list(reward_model_keys(page)) == [
        "api_key_env",
        "ca_bundle",
        "enable",
        "endpoint",
        "backend_kwargs",
    ]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_command_line_of_a_page_uses_flags_its_command_accepts(page: Path) -> None:
    text = page.read_text()
    found = [
        problem
        for line in command_lines(text, str(page.relative_to(REPO)))
        for problem in problems(line, FLAGS)
    ]
    assert not found, "\n".join(found)
    unknown = sorted(set(reward_model_keys(text)) - set(RewardModelConfig.model_fields))
    assert not unknown, f"reward_model keys the config does not have: {unknown}"


def test_the_pages_show_every_kind_of_command() -> None:
    """The check is not vacuous: the docs run each command kind it resolves, and each reward-eval command."""
    resolved = set()
    for page in PAGES:
        for line in command_lines(page.read_text(), page.name):
            result = resolve(shlex.split(line.text, comments=True))
            if isinstance(result, tuple):
                resolved.add(result[0])
    expected = {SERVER, RUN_EMBODIMENT, TINY_CHECKPOINT}
    expected |= {command.name for command in reward_eval_commands().values()}
    assert expected <= resolved, expected - resolved
