"""``reward-eval train-classifier``: a few training steps on a handful of the shipped set's episodes
(RLinf's class built through its config, its loss, the checkpoint the backend reads and scores as
the command measured it), the class-prior exit, and each bad input refused in one sentence with its
documented exit status."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reward_eval.classifier.labelled_set import (
    DEFAULT_DATA_DIR,
    MEASURED,
    LabelledEpisode,
    load_set,
    write_manifest,
)
from reward_eval.commands import train_classifier
from vlm_reward.backends import ScoreJob
from vlm_reward.backends.resnet import ResNetBackend
from vlm_reward.backends.resnet_checkpoint import CONFIG_FILE, WEIGHTS_FILE, read_config

# A few steps that leave the class prior as served: the fitted loss (eval mode, every training
# frame) above the irreducible one ends at 0.14-0.35 of the prior's (seeds 0-3, both targets, on
# this machine; "at the prior" is 0.95). Fewer (6 epochs, 4 frames an episode) ended anywhere from
# 0.24 to 2.3 by seed: batch norm's running statistics had not caught up with the weights.
FEW_STEPS = ["--image-size", "32", "--epochs", "30", "--batch-size", "8", "--lr", "1e-3",
             "--frames-per-episode", "8", "--last-k", "4"]  # fmt: skip
LEFT_THE_PRIOR = 0.6  # the largest excess-loss ratio accepted: above every seed's, below 0.95
# The few steps' progress judge over the held-out and the test split's 48 frames: Pearson with the
# goal fraction 0.440 / 0.697 (seed 0), the same to the last digit with AVX2-capped kernels; mean
# score at goal fraction 0 / 0.5 / 1: 0.28 / 0.46 / 0.97 held out. An earlier session recorded
# 0.62 / 0.73 for seed 0 and 0.68 / 0.64 for seed 1, not reproduced here. The default training's
# judge reaches 0.97 (benchmark 15); this bounds the fixture's with a margin below 0.44.
FEW_STEPS_PEARSON = 0.3
# Its per-frame VOC of each split's one success (Spearman of the 16 frame scores against their
# order): 0.35 held out, 0.57 test (the few-step success classifier's 0.22 and 0.37); the default
# training's 0.83 (benchmark 15). The bound: the score rises through the success, not falls.
FEW_STEPS_FRAME_VOC = 0.0
# The few steps' success classifier (seed 0), held out / test: Pearson with its own frame labels (the
# simulator's success per frame) 0.622 / 0.685, mean score at goal fraction 0 / 0.5 / 1 0.017 / 0.096 /
# 0.975 and 0.013 / 0.061 / 0.733 (2026-11-29, this machine, AVX-512 kernels). Not pinned: the same code
# and set gave its per-frame VOC as 0.22 / 0.37 in an earlier session and -0.01 / 0.14 in this one, so
# a few-step model's measures move between sessions; the bound is well below both splits' Pearson.
FEW_STEPS_SUCCESS_PEARSON = 0.4
SCORE_TOLERANCE = 1e-4  # the backend's batch against the command's one pass: float32 rounding


def pick(pool: list[LabelledEpisode]) -> list[LabelledEpisode]:
    """A success, a failure that placed one object of two (goal fraction 0.5) and one that placed none."""
    success = [e for e in pool if e.native_success][:1]
    half = [e for e in pool if not e.native_success and max(e.served.goal_fraction) == 0.5][:1]
    none = [e for e in pool if not e.native_success and max(e.served.goal_fraction) == 0.0][:1]
    return success + half + none


def subset(root: Path) -> Path:
    """:func:`pick` of each split of the shipped set, copied into ``root``."""
    shipped = load_set(DEFAULT_DATA_DIR)
    chosen = [e for split in ("train", *MEASURED) for e in pick(shipped.split(split))]
    for e in chosen:
        for frames in e.frame_sets():
            shutil.copy(shipped.path(frames), root / frames.video)
    write_manifest(root, chosen, dict(shipped.settings))
    return root


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module", params=["success", "goal_fraction"])
def trained(request, data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("ckpt") / request.param
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = train_classifier.main([str(data), "--out", str(out), "--target", request.param, *FEW_STEPS])
    summary = read_summary(out)
    return {
        "target": request.param,
        "out": out,
        "status": status,
        "summary": summary,
        "out_text": printed.getvalue(),
    }


def read_summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "finetune.json").read_text())


@pytest.mark.slow
def test_a_few_steps_leave_the_class_prior_and_write_a_checkpoint(trained, data: Path) -> None:
    summary, out = trained["summary"], trained["out"]
    training = summary["training"]
    assert trained["status"] == 0 and summary["outcome"] == "done", summary["message"]
    assert training["steps"] == len(training["step_losses"]) > 0 and len(training["epoch_losses"]) == 30
    excess = training["fitted_loss"] - training["irreducible_loss"]
    assert excess < LEFT_THE_PRIOR * (training["prior_floor"] - training["irreducible_loss"])
    config = read_config(out)
    assert (config.arch, config.image_size, config.last_k, config.target) == (
        "resnet18",
        32,
        4,
        trained["target"],
    )
    recorded = json.loads((out / CONFIG_FILE).read_text())
    labelled = load_set(data)
    assert recorded["trained_on"] == [list(s) for s in sorted({e.state for e in labelled.split("train")})]
    assert set(recorded["test"]) == {
        f"task {t} trial {k}" for t, k in {e.state for e in labelled.split("test")}
    }
    assert (out / "finetune" / "report.html").is_file()


@pytest.mark.slow
def test_the_backend_scores_each_measured_episode_as_the_command_measured_it(trained, data: Path) -> None:
    """Loaded by the backend from the checkpoint's files (RLinf's own loader), the classifier gives
    every held-out and test episode the score the command judged it with."""
    summary, out = trained["summary"], trained["out"]
    labelled = load_set(data)
    backend = ResNetBackend(str(out))
    backend.load()
    assert backend.describe_model("ckpt") == f"ckpt [{read_config(out).describe_aggregate()}]"
    assert f"target {trained['target']}" in backend.describe_model("ckpt")
    evaluation = summary["evaluation"]
    for split, block in (("held_out", evaluation), ("test", evaluation["test"])):
        judged = {
            j["video"]: j["score"]
            for j in block["judged"]["fine_tuned"]
            if j["source"] in ("original", "failure")
        }
        episodes = labelled.split(split)
        jobs = [ScoreJob("", str(labelled.path(e.served)), 16, 10**6, 4.0) for e in episodes]
        scores = [answer.probability for answer in backend.generate(jobs)]
        assert len(scores) == len(judged) == len(episodes) == 3
        for e, score in zip(episodes, scores, strict=True):
            assert score == pytest.approx(judged[e.served.video], abs=SCORE_TOLERANCE), (
                split,
                e.served.video,
            )


@pytest.mark.slow
def test_the_summary_measures_the_target_the_frames_and_the_variants(trained) -> None:
    evaluation, data_block = trained["summary"]["evaluation"], trained["summary"]["data"]
    levels = {"success": ("0", "1"), "goal_fraction": ("0", "0.5", "1")}[trained["target"]]
    assert list(data_block["by_class"]) == [f"train/{trained['target']} = {level}" for level in levels]
    assert set(evaluation["frames"]) == {"held_out", "test"}
    for block in evaluation["frames"].values():
        means = block["mean_score_by_goal_fraction"]
        assert block["frames"] == 3 * 16 and set(means) == {"0", "0.5", "1"}
        assert -1.0 <= block["pearson_goal_fraction"] <= 1.0
        voc = block["frame_voc_successes"]
        assert (voc["n_episodes"], voc["undefined"]) == (1, {}), "pick's one success, its 16 frames ranked"
        if trained["target"] == "goal_fraction":  # a progress judge, even a few steps' one, orders them
            assert means["0"] < means["0.5"] < means["1"], means
            assert block["pearson_goal_fraction"] > FEW_STEPS_PEARSON
            assert voc["mean"] > FEW_STEPS_FRAME_VOC, "its score rises through the success"
        else:  # a success classifier tells the frames where the goal is reached from all the others
            assert means["1"] > max(means["0"], means["0.5"]), means
            assert block["pearson_target"] > FEW_STEPS_SUCCESS_PEARSON
    assert sum(row["episodes"] for row in evaluation["variants"].values()) == 6
    assert evaluation["test"]["fine_tuned"]["n"] > 3  # the test episodes and their success's counterfactuals
    printed = trained["out_text"]
    for line in (
        "held-out episodes alone",
        "test episodes alone",
        "Pearson with goal_fraction",
        "per-frame VOC of successes",
        "judged a success",
    ):
        assert line in printed


@pytest.mark.slow
@pytest.mark.parametrize("target", ["success", "goal_fraction"])
def test_training_that_learns_nothing_ends_at_the_class_prior_and_writes_no_checkpoint(
    target: str, data: Path, tmp_path: Path, capsys
) -> None:
    """One epoch at a learning rate of 1e-9 leaves the random classifier as it was: its fitted loss
    is on the prior floor (measured 0.70-0.73 against 0.693; the graded target's 0.462-0.481 against
    0.462, above its irreducible 0.231), so the command refuses to write it."""
    out = tmp_path / "ckpt"
    status = train_classifier.main(
        [str(data), "--out", str(out), "--target", target, *FEW_STEPS, "--epochs", "1", "--lr", "1e-9"]
    )
    summary = read_summary(out)
    assert status == train_classifier.EXIT_CLASS_PRIOR == 4
    assert summary["outcome"] == "class_prior" and "it learnt the class prior" in summary["message"]
    assert not (out / WEIGHTS_FILE).exists() and not (out / CONFIG_FILE).exists()
    assert "training failed: the training loss ended at" in capsys.readouterr().err


def test_one_label_value_exits_3_in_one_sentence(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shipped = load_set(DEFAULT_DATA_DIR)
    failures = [e for e in shipped.episodes if not e.native_success and max(e.served.goal_fraction) == 0.0]
    chosen = [e for e in failures if e.split == "train"][:2] + [e for e in failures if e.split == "held_out"][
        :1
    ]
    for e in chosen:
        shutil.copy(shipped.path(e.served), data / e.served.video)
    write_manifest(data, chosen, {})
    status = train_classifier.main([str(data), "--out", str(tmp_path / "ckpt"), "--image-size", "32"])
    assert status == train_classifier.EXIT_BAD_DATA
    assert "hold one label value only for target success ({0.0: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (
            ["--image-size", "512"],
            "--image-size 512 is larger than the set's 128 px frames; use at most 128.",
        ),
        (["DATA_IS_NOT_A_SET"], "is not a labelled frame set"),
        (["--arch", "vgg16"], "invalid choice: 'vgg16'"),
        (["--target", "progress"], "invalid choice: 'progress'"),
    ],
    ids=["image-size-larger-than-frames", "not-a-set", "unknown-arch", "unknown-target"],
)
def test_bad_options_exit_2_in_one_sentence(tmp_path: Path, capsys, argv, problem) -> None:
    argv = [str(tmp_path) if a == "DATA_IS_NOT_A_SET" else a for a in argv]
    with pytest.raises(SystemExit) as exit_:
        train_classifier.parse_args([*argv, "--out", str(tmp_path / "ckpt")])
    assert exit_.value.code == 2
    assert problem in capsys.readouterr().err


def test_existing_out_needs_overwrite(tmp_path: Path, capsys) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "x").write_text("")
    with pytest.raises(SystemExit) as exit_:
        train_classifier.parse_args(["--out", str(tmp_path / "ckpt")])
    assert exit_.value.code == 2 and "pass --overwrite" in capsys.readouterr().err


def test_the_defaults_are_the_configs_and_the_protocols() -> None:
    from vlm_reward.backends.resnet_checkpoint import ClassifierConfig
    from vlm_reward.protocol import DEFAULT_NFRAMES

    args = train_classifier.build_parser().parse_args(["--out", "x"])
    config = ClassifierConfig()
    assert train_classifier.classifier_config(args) == config
    assert args.frames_per_episode == DEFAULT_NFRAMES
