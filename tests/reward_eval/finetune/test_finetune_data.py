"""``reward_eval finetune --data`` end to end: a six-episode labelled set (a success and a failure
of each split) with two wrong instructions per success, the default training of the tiny
Qwen2.5-VL, both judges on real ``qwen_vl_hf`` servers. It proves the wiring the search and the
product's judge rely on: the labels and the split are the set's, the test split is reported apart,
no wrong instruction is a text of the suite it is measured on, and the served judge answers the
set's own MP4s (what the env's client sends) as it was trained (~40 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reward_eval.classifier.labelled_set import load_set
from reward_eval.finetune.dataset import HELD_OUT, TEST, TRAIN
from reward_eval.finetune.instructions import WRONG_INSTRUCTION
from tests.reward_eval.conftest import run_reward_eval
from tests.reward_eval.finetune.test_labelled_data import small_set

pytestmark = pytest.mark.slow

# libero_10's instructions, which the judge is measured on and must never be trained against.
LIBERO_10_TEXTS_TRAINED_HERE = (
    "put both the alphabet soup and the tomato sauce in the basket",
    "put both the cream cheese box and the butter in the basket",
    "put both the alphabet soup and the cream cheese box in the basket",
)


@pytest.fixture(scope="module")
def fine_tuned(
    tmp_path_factory: pytest.TempPathFactory, tiny_qwen_checkpoint: str, small_judge_config: Path
) -> tuple[Path, dict[str, Any], str]:
    root = tmp_path_factory.mktemp("finetune-data")
    data, out = small_set(root / "set"), root / "judge"
    result = run_reward_eval(
        "finetune",
        "--data",
        str(data),
        "--model",
        tiny_qwen_checkpoint,
        "--out",
        str(out),
        "--env-config",
        str(small_judge_config),
        "--counterfactuals",
        "none",
        "--wrong-instructions",
        "2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return data, json.loads((out / "finetune.json").read_text()), result.stdout


def _rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Every example with its split: the training ones (their readouts) and the judged held-out ones."""
    judged = summary["evaluation"]["judged"]["fine_tuned"]
    train = [{**row, "split": TRAIN} for row in summary["training"]["train_scores"]]
    return train + judged


def test_the_labels_and_the_split_are_the_sets(fine_tuned: tuple[Path, dict[str, Any], str]) -> None:
    data, summary, _ = fine_tuned
    labelled = load_set(data)
    success = {e.served.video.removesuffix(".mp4"): e.native_success for e in labelled.episodes}
    split = {e.served.video.removesuffix(".mp4"): e.split for e in labelled.episodes}
    assert summary["data"]["labelled_set"]["episodes_by_split"] == {HELD_OUT: 2, TEST: 2, TRAIN: 2}
    for row in _rows(summary):
        stem = next(s for s in success if s in Path(row["video"]).name)
        assert row["split"] == split[stem], row
        expected = success[stem] and row["source"] != WRONG_INSTRUCTION
        assert row["label"] is expected, row
    wrong = [r for r in summary["evaluation"]["judged"]["fine_tuned"] if r["source"] == WRONG_INSTRUCTION]
    assert len(wrong) == 2 * 2, "two per held-out and test success"
    assert not {r["task_text"] for r in wrong} & set(LIBERO_10_TEXTS_TRAINED_HERE)


def test_the_test_split_is_reported_apart_and_the_served_judge_answers_the_sets_videos_as_trained(
    fine_tuned: tuple[Path, dict[str, Any], str],
) -> None:
    _, summary, stdout = fine_tuned
    evaluation = summary["evaluation"]
    # Each split: a success and a failure, each as sent and re-encoded, and the success's two wrong texts.
    assert evaluation["fine_tuned"]["n"] == evaluation["test"]["fine_tuned"]["n"] == 6
    assert "test examples: 6" in stdout and WRONG_INSTRUCTION in evaluation["test"]["fine_tuned"]["audit"]
    sources = evaluation["sources"]
    assert sources["passed"] and len(sources["examples"]) == 2, (
        "the two training episodes, as the set holds them"
    )
    assert sources["max_abs_diff"] <= sources["tolerance"] and evaluation["serving"]["passed"]
    sep = summary["training"]["separation"]["after"]
    assert sep["margin"] > 0, f"the training episodes separated: {sep}"
