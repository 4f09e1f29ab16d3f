"""What ``train-classifier`` shows beyond the fine-tune's page and table: the test split, the
frames against the simulator's progress, the judged successes per policy variant.

From the summary's ``evaluation`` block only (``finetune.json``): the lines the command prints
(:func:`result_lines`) and the sections it adds to ``finetune/report.html``
(:func:`report_blocks`), saying the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_eval.classifier.measures import variant_lines
from reward_eval.finetune.report import comparison_rows, terminal_table
from reward_eval.report.document import Block, Heading, Items, Para, Table
from reward_eval.report.table import num

SPLIT_NAMES = {"held_out": "held-out", "test": "test"}


def auroc_line(name: str, aurocs: Mapping[str, float | None]) -> str:
    """The AUROC of the split's episodes alone, untrained and trained."""
    base, trained = num(aurocs["base"]), num(aurocs["fine_tuned"])
    return f"{name} episodes alone (no counterfactual): AUROC {base} untrained, {trained} trained"


def frame_line(name: str, block: Mapping[str, Any]) -> str:
    """The trained classifier's frame scores of one split against the goal fraction."""
    levels = block["mean_score_by_goal_fraction"]
    means = " / ".join(f"{num(v)}" for v in levels.values())
    line = (
        f"{name} served frames ({block['frames']}): Pearson with goal_fraction "
        f"{num(block['pearson_goal_fraction'])}; mean score at goal_fraction {' / '.join(levels)}: {means}"
    )
    voc = block.get("frame_voc_successes")  # absent in summaries written before it was measured
    if voc is None:
        return line
    return f"{line}; per-frame VOC of successes {num(voc['mean'])} ({voc['n_voc']}/{voc['n_episodes']})"


def result_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """The terminal's view of ``evaluation``: each measured split's table and episodes' AUROC, the
    frames' measures, the judged successes per variant."""
    lines = [terminal_table(evaluation), auroc_line("held-out", evaluation["episodes_auroc"])]
    if "test" in evaluation:
        test = evaluation["test"]
        lines += [terminal_table(test, "test"), auroc_line("test", test["episodes_auroc"])]
    lines += [frame_line(SPLIT_NAMES[s], b) for s, b in evaluation.get("frames", {}).items()]
    if variants := evaluation.get("variants"):
        lines.append("judged successes per variant (held-out and test episodes, trained classifier):")
        lines += [f"  {line}" for line in variant_lines(variants)]
    return lines


def report_blocks(evaluation: Mapping[str, Any]) -> list[Block]:
    """The page's sections of the same (after the fine-tune's held-out table)."""
    blocks: list[Block] = []
    if "test" in evaluation:
        blocks += [
            Heading("Untrained and trained classifier on the test examples"),
            Para(
                "The test split: initial states neither trained on nor used to choose a default "
                f"(held-out states chose them). {auroc_line('Test', evaluation['test']['episodes_auroc'])}."
            ),
            Table(("metric", "untrained", "trained"), tuple(comparison_rows(evaluation["test"]))),
        ]
    if frames := evaluation.get("frames"):
        blocks += [
            Heading("Every served frame against the simulator's progress"),
            Items(tuple(frame_line(SPLIT_NAMES[s], b) for s, b in frames.items())),
        ]
    if variants := evaluation.get("variants"):
        blocks += [
            Heading("Judged successes per policy variant"),
            Items(tuple(variant_lines(variants))),
        ]
    return blocks
