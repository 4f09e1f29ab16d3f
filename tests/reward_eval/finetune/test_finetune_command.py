"""``reward_eval finetune`` on bad input: one sentence and the documented exit status each; and a
data set that can only reach the class prior, trained for real on the tiny judge and reported as
such; the verdict on the check of itself (synthetic run dirs; the class-prior run takes ~15 s, the
others milliseconds)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reward_eval import cli
from reward_eval.commands import finetune as cmd


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        status = cli.main(["finetune", *argv])
    except SystemExit as exc:  # argparse's exit for bad options
        status = int(exc.code)
    return status, capsys.readouterr().err


@pytest.fixture
def runs(make_run: Callable[..., Path]) -> dict[str, Path]:
    return {
        "mixed": make_run("mixed", [(0, True), (1, False), (2, True), (3, False)]),
        "failures": make_run("failures", [(0, False), (1, False)]),
        "one_state": make_run("one_state", [(0, True), (0, False)]),
        "no_videos": make_run("no_videos", [(0, True)]),
    }


def _unsupported(tmp_path: Path) -> str:
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "config.json").write_text(
        json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    )
    return str(tmp_path / "llama")


CASES = [
    (
        "no-kept-video",
        "no_videos",
        [],
        3,
        r"no_videos has no kept video; fine-tuning needs runs made with --keep-videos",
    ),
    (
        "one-class",
        "failures",
        ["--counterfactuals", "none"],
        3,
        r"training split holds only failure examples \(2\)",
    ),
    ("empty-held-out", "one_state", [], 3, r"the held-out split would be empty; give more initial states"),
    (
        "unknown-perturbation",
        "mixed",
        ["--counterfactuals", "reversed,mirrored"],
        2,
        r"unknown perturbation 'mirrored'; valid: reversed, frozen, clipped, shuffled, wrong_task, or none",
    ),
    (
        "unsupported-family",
        "mixed",
        ["--model", "UNSUPPORTED"],
        2,
        r"unsupported model family \(model_type 'llama'.*supported families: qwen2_5_vl \(Qwen2.5-VL\), "
        r"qwen3_vl",
    ),
    (
        "out-is-base",
        "mixed",
        ["--out", "BASE"],
        2,
        r"is the base checkpoint or a run dir; write the judge elsewhere",
    ),
    (
        "out-exists",
        "mixed",
        ["--out", "EXISTING"],
        2,
        r"--out .*existing exists; pass --overwrite to replace it or --resume to continue it",
    ),
]


@pytest.mark.parametrize(("name", "run", "extra", "status", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_sentence_and_its_exit_status(
    capsys: pytest.CaptureFixture[str],
    runs: dict[str, Path],
    tmp_path: Path,
    tiny_qwen_checkpoint: str,
    name: str,
    run: str,
    extra: list[str],
    status: int,
    message: str,
) -> None:
    import re

    if name == "no-kept-video":
        for video in (runs[run] / "videos").iterdir():
            video.unlink()
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "config.json").write_text("{}")
    placeholders = {
        "UNSUPPORTED": lambda: _unsupported(tmp_path),
        "EXISTING": lambda: str(tmp_path / "existing"),
        "BASE": lambda: tiny_qwen_checkpoint,
    }
    extra = [placeholders[a]() if a in placeholders else a for a in extra]
    options = {
        "--model": tiny_qwen_checkpoint,
        "--out": str(tmp_path / "judge"),
        **dict(zip(extra[::2], extra[1::2], strict=True)),
    }
    got, err = _run(capsys, str(runs[run]), *[x for kv in options.items() for x in kv])
    assert got == status, err
    last = err.strip().splitlines()[-1]  # argparse prints its usage first
    assert re.search(message, last) and "Traceback" not in err, err


def test_a_data_set_that_cannot_be_told_apart_ends_at_the_class_prior(
    capsys: pytest.CaptureFixture[str],
    make_run: Callable[..., Path],
    tmp_path: Path,
    tiny_qwen_checkpoint: str,
    small_judge_config: Path,
) -> None:
    """Every initial state has a success and a failure showing the same video: no judge can do
    better than the label frequencies, and the command says so instead of writing a judge."""
    run = make_run("same", [(s, success) for s in range(4) for success in (True, False)], same_video=True)
    out = tmp_path / "judge"
    status, err = _run(
        capsys,
        str(run),
        "--model",
        tiny_qwen_checkpoint,
        "--out",
        str(out),
        "--counterfactuals",
        "none",
        "--env-config",
        str(small_judge_config),
    )
    assert status == cmd.EXIT_CLASS_PRIOR, err
    assert "fine-tune failed: the fine-tuned judge gives every training example nearly the same score" in err
    summary = json.loads((out / "finetune.json").read_text())
    assert summary["outcome"] == "class_prior" and "learnt the class prior" in summary["message"]
    scores = [s["after"] for s in summary["training"]["train_scores"]]
    # Identical videos, identical P(yes) up to float noise (1e-6 seen between two such examples);
    # rounding to 6 places instead split 0.500127 from 0.500128 at a rounding boundary.
    assert max(scores) - min(scores) < 1e-5, "identical videos, identical P(yes)"
    assert summary["training"]["final_loss"] == pytest.approx(summary["training"]["prior_floor"], abs=1e-3)
    assert not (out / "model.safetensors").exists(), "no judge written"
    assert "class prior" in (out / "finetune" / "report.html").read_text()


def _served(scores: tuple[float, ...]) -> list[dict[str, Any]]:
    rows = (("a_original_sent.mp4", "original", True), ("b_failure_sent.mp4", "failure", False))
    return [
        {"video": f"/out/finetune/videos/{video}", "source": source, "label": label, "score": score}
        for (video, source, label), score in zip(rows, scores, strict=True)
    ]


def _evaluation(sent: tuple[float, float]) -> dict[str, Any]:
    """A fine-tune's check of itself whose training examples are served as trained (0.99, 0.01) and
    whose training episodes, served from the files the env sent, score ``sent``."""
    from reward_eval.finetune.serving_check import serving_check, source_check

    trainer = {row["video"]: row["score"] for row in _served((0.99, 0.01))}
    kept = [
        {**row, "episode": episode, "video": f"/run/videos/{episode}.mp4"}
        for row, episode in zip(_served(sent), ("e0", "e1"), strict=True)
    ]
    return {
        "serving": serving_check(_served((0.99, 0.01)), trainer, 0.02, "qwen_vl_hf"),
        "sources": source_check(kept, {"e0": 0.99, "e1": 0.01}, {"e0": 0.99, "e1": 0.01}, 0.02, 0.5),
    }


@pytest.mark.parametrize(
    ("sent", "status"),
    [((0.99, 0.01), cmd.EXIT_OK), ((0.0096, 0.0098), cmd.EXIT_SERVING_SKEW)],
    ids=["agree", "issue-55"],
)
def test_the_episodes_the_env_sent_served_unlike_training_fail_the_check_with_status_5(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    sent: tuple[float, float],
    status: int,
) -> None:
    """The command's verdict on its check of itself (the report's writing faked): training examples
    served as trained but the episodes the env sent served apart from them (issue 55's numbers) is
    exit status 5, named on stderr and in the summary."""
    written: dict[str, Any] = {}
    monkeypatch.setattr(cmd, "write_summary", lambda out, summary: written.update(summary))
    monkeypatch.setattr(cmd, "write_report", lambda out, summary: out / "report.html")
    monkeypatch.setattr(cmd, "terminal_table", lambda evaluation: "table")
    args = argparse.Namespace(out=tmp_path / "judge")
    got = cmd.finish(args, {"outcome": "done", "message": "", "evaluation": _evaluation(sent)})
    out, err = capsys.readouterr()
    assert got == status, err
    assert "served judge on its 2 training episodes as the env sent them" in out
    if status == cmd.EXIT_SERVING_SKEW:
        assert written["outcome"] == "serving_skew" and "as the env sent them up to 0.98" in err
        assert "[reward-eval] served judge on its 2 training examples" in out, "the copies were fine"
    else:
        assert written["outcome"] == "done" and "serve it:" in out
