"""The trained classifier measured, as ``reward-eval train-classifier`` records it in ``finetune.json``.

Per measured split (held-out, test): the untrained and the trained classifier's judgements of its
episodes and their counterfactuals in the fine-tune's shape (:func:`judged_block`, so the
fine-tune's report renders them), and over all of them every served frame's score against the
simulator's progress and the judged successes per policy variant (:func:`trained_measures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vlm_reward.backends.classifier_targets import get_target
from vlm_reward.backends.resnet_checkpoint import ClassifierConfig

EPISODE_SOURCES = ("original", "failure")  # the measured episodes themselves, not counterfactuals


def judged_block(
    before: list[Any], after: list[Any], counterfactuals: Sequence[str], threshold: float
) -> dict[str, Any]:
    """One measured split's block in the fine-tune's shape: the untrained (``base``) and the trained
    classifier's judgements of its episodes and their counterfactuals, and the episodes' AUROC."""
    from reward_eval.analysis.calibration import calibration
    from reward_eval.finetune.metrics import judge_block

    def episodes_auroc(judged: list[Any]) -> float | None:
        episodes = [j for j in judged if j["source"] in EPISODE_SOURCES]
        return calibration([j["score"] for j in episodes], [j["label"] for j in episodes])["auroc"]

    return {
        "threshold": threshold,
        "base": judge_block(before, counterfactuals, threshold),
        "fine_tuned": judge_block(after, counterfactuals, threshold),
        "episodes_auroc": {"base": episodes_auroc(before), "fine_tuned": episodes_auroc(after)},
        "judged": {"base": before, "fine_tuned": after},
    }


def trained_measures(
    model: Any,
    config: ClassifierConfig,
    measured: dict[str, Any],
    after: dict[str, list[Any]],
    target: str,
    threshold: float,
) -> dict[str, Any]:
    """The trained classifier's frame measures per measured split and its judged successes per
    policy variant over all of them (:mod:`.measures`)."""
    from reward_eval.classifier import frame_data, held_out, measures

    target = get_target(target)
    frames = {}
    for split, m in measured.items():
        scores = held_out.frame_scores(model, config, m["videos"])
        served = [e.served for e in m["episodes"]]
        fractions = [g for f in served for g in f.goal_fraction]
        labels = [label for f in served for label in frame_data.frame_labels(f, target)]
        episodes = [(len(e.served.goal_fraction), e.native_success) for e in m["episodes"]]
        frames[split] = measures.frame_block(scores, fractions, labels, episodes)
    variants = {e.served.video: e.variant or e.policy for m in measured.values() for e in m["episodes"]}
    judged = [case for split in measured for case in after[split]]
    return {"frames": frames, "variants": measures.variant_block(judged, variants, threshold)}
