"""``reward_eval``'s ``--tiny-family``: which tiny checkpoint a local server gets without ``--model``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reward_eval.commands import run as run_cmd
from reward_eval.job import options


def _scoring_args(argv: list[str]):
    parser = run_cmd.build_parser()
    args = parser.parse_args(argv)
    options.check_scoring_options(parser, args)
    return args


@pytest.mark.parametrize(
    ("argv", "directory", "model_type"),
    [([], "tiny-qwen2.5-vl", "qwen2_5_vl"), (["--tiny-family", "qwen3_vl"], "tiny-qwen3-vl", "qwen3_vl")],
    ids=["default-qwen2_5_vl", "qwen3_vl"],
)
def test_the_tiny_family_picks_the_checkpoint_built(
    tmp_path: Path, argv: list[str], directory: str, model_type: str
) -> None:
    model, random_model = options.resolve_model(_scoring_args(argv), tmp_path)
    assert random_model is True and Path(model) == tmp_path / directory
    assert json.loads((Path(model) / "config.json").read_text())["model_type"] == model_type


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "/m", "--tiny-family", "qwen3_vl"], "--tiny-family picks the tiny checkpoint built"),
        (["--endpoint", "http://h:1/score", "--tiny-family", "qwen3_vl"], "only configure a local server"),
        (["--tiny-family", "llava"], "argument --tiny-family: invalid choice: 'llava'"),
    ],
    ids=["with-model", "with-endpoint", "unknown-family"],
)
def test_a_tiny_family_that_cannot_apply_is_an_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _scoring_args(argv)
    assert message in capsys.readouterr().err
