"""The classifier's training targets: one registry, each target's label of the simulator's verdict,
recorded in the checkpoint's config and named by the judge identity (an old config reads as success)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlm_reward.backends.classifier_targets import DEFAULT_TARGET, TARGETS, get_target, target_names
from vlm_reward.backends.resnet_checkpoint import CONFIG_FILE, WEIGHTS_FILE, ClassifierConfig, read_config

# (success, goal_fraction) of a basket task's frames: nothing placed, one object of two, both.
VERDICTS = ((False, 0.0), (False, 0.5), (True, 1.0))


@pytest.mark.parametrize(
    ("name", "labels", "graded"),
    [
        ("success", (0.0, 0.0, 1.0), False),
        ("half_goal", (0.0, 1.0, 1.0), False),
        ("goal_fraction", (0.0, 0.5, 1.0), True),
    ],
    ids=["success", "half_goal", "goal_fraction"],
)
def test_each_target_labels_the_simulators_verdict(name, labels, graded) -> None:
    target = get_target(name)
    assert tuple(target.label(s, g) for s, g in VERDICTS) == labels
    assert target.graded is graded and target.description


def test_the_registry_lists_the_default_first_and_refuses_an_unknown_name() -> None:
    assert target_names() == tuple(TARGETS) and target_names()[0] == DEFAULT_TARGET == "success"
    with pytest.raises(ValueError, match="classifier target 'progress' is not one of success, half_goal"):
        get_target("progress")
    with pytest.raises(ValueError, match="classifier target 'progress' is not one of"):
        ClassifierConfig(target="progress")


@pytest.mark.parametrize(
    ("config", "identity"),
    [
        (ClassifierConfig(), "mean P(success) of the last 1 frame, target success"),
        (
            ClassifierConfig(last_k=3, target="half_goal"),
            "mean P(half the goal) of the last 3 frames, target half_goal",
        ),
        (
            ClassifierConfig(target="goal_fraction"),
            "mean goal fraction of the last 1 frame, target goal_fraction",
        ),
    ],
    ids=["success", "half_goal", "goal_fraction"],
)
def test_the_judge_identity_names_the_target(config, identity) -> None:
    assert config.describe_aggregate() == identity


def test_a_config_written_before_targets_reads_as_success(tmp_path: Path) -> None:
    body = {
        "format": "rlinf-resnet-reward/1",
        "classifier": {"arch": "resnet18", "image_size": 32, "last_k": 1},
    }
    (tmp_path / CONFIG_FILE).write_text(json.dumps(body))
    (tmp_path / WEIGHTS_FILE).write_bytes(b"")
    config = read_config(tmp_path)
    assert config.target == "success" and config == ClassifierConfig(image_size=32)
