"""``reward-eval train-classifier``: a few training steps on a handful of the shipped set's episodes
(RLinf's class built through its config, its loss, the checkpoint the backend reads), and each bad
input refused in one sentence with its documented exit status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, load_set, write_manifest
from reward_eval.commands import train_classifier
from vlm_reward.backends.resnet_checkpoint import WEIGHTS_FILE, read_config


def subset(root: Path) -> Path:
    """A success and two failures of each split of the shipped set, copied into ``root``."""
    shipped = load_set(DEFAULT_DATA_DIR)
    chosen = []
    for split in ("train", "held_out"):
        pool = shipped.split(split)
        chosen += [e for e in pool if e.native_success][:1] + [e for e in pool if not e.native_success][:2]
    for e in chosen:
        for frames in e.frame_sets():
            shutil.copy(shipped.path(frames), root / frames.video)
    write_manifest(root, chosen, dict(shipped.settings))
    return root


@pytest.mark.slow
def test_a_few_steps_write_a_checkpoint_the_backend_reads(tmp_path: Path, capsys) -> None:
    (tmp_path / "data").mkdir()
    data = subset(tmp_path / "data")
    out = tmp_path / "ckpt"
    argv = [str(data), "--out", str(out), "--image-size", "32", "--epochs", "4", "--batch-size", "16",
            "--lr", "3e-4", "--frames-per-episode", "4", "--last-k", "2"]  # fmt: skip
    status = train_classifier.main(argv)
    summary = json.loads((out / "finetune.json").read_text())
    training = summary["training"]
    assert training["steps"] == len(training["step_losses"]) > 0 and len(training["epoch_losses"]) == 4
    evaluation = summary["evaluation"]
    assert evaluation["base"]["n"] == evaluation["fine_tuned"]["n"] > 6  # episodes and counterfactuals
    assert set(evaluation["fine_tuned"]["audit"]) >= {"original", "reversed", "frozen", "failure"}
    assert (out / "finetune" / "report.html").is_file()
    if status == train_classifier.EXIT_CLASS_PRIOR:  # a few steps may not leave the prior: said so
        assert summary["outcome"] == "class_prior" and not (out / WEIGHTS_FILE).exists()
        return
    assert status == 0 and summary["outcome"] == "done"
    config = read_config(out)
    assert (config.arch, config.image_size, config.last_k) == ("resnet18", 32, 2)
    assert "held-out episodes alone" in capsys.readouterr().out


def test_one_class_exits_3_in_one_sentence(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shipped = load_set(DEFAULT_DATA_DIR)
    failures = [e for e in shipped.episodes if not e.native_success and e.after is None]
    chosen = [e for e in failures if e.split == "train"][:2] + [e for e in failures if e.split == "held_out"][
        :1
    ]
    for e in chosen:
        shutil.copy(shipped.path(e.served), data / e.served.video)
    write_manifest(data, chosen, {})
    status = train_classifier.main([str(data), "--out", str(tmp_path / "ckpt"), "--image-size", "32"])
    assert status == train_classifier.EXIT_BAD_DATA
    assert "hold one class only (0 successes" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (
            ["--image-size", "512"],
            "--image-size 512 is larger than the set's 128 px frames; use at most 128.",
        ),
        (["DATA_IS_NOT_A_SET"], "is not a labelled frame set"),
        (["--arch", "vgg16"], "invalid choice: 'vgg16'"),
    ],
    ids=["image-size-larger-than-frames", "not-a-set", "unknown-arch"],
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
