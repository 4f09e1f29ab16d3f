"""Where a report's numbers come from, and the warning that a random-weight judge's numbers mean nothing.

The evaluation report (:mod:`.evaluation`) carries the provenance section after its results: the
rules that make the numbers (threshold, ground truth, fallbacks) in the open, every setting and
the ``reward_model`` block with the source of each key folded below them. Both reports of a run
open with the warning for a random-weight judge (the audit's own, :mod:`.audit`, too). They live
here, below both, so neither report imports the other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reward_eval.analysis.judges import judge_text
from reward_eval.report.document import Block, Details, Heading, Items, Para, Table
from reward_eval.report.table import THRESHOLD_SOURCES

RANDOM_MODEL_WARNING = (
    "These scores come from a random-weight model. They mean nothing about the task, the policy or "
    "a real judge; this report only shows that every stage of the evaluation runs."
)


def provenance_section(summary: Mapping[str, Any], settings: Mapping[str, Any]) -> list[Block]:
    """Where the numbers come from: threshold, backend and model, the fallback rule; then every
    setting and the ``reward_model`` block with each key's source, complete but folded."""
    overall = summary["overall"]
    source = THRESHOLD_SOURCES.get(summary["threshold_source"], summary["threshold_source"])
    backend, model = settings.get("backend"), settings.get("model")
    judge = f"backend {backend or 'not recorded'}, model {model or 'not recorded'}"
    judges = summary.get("judges") or []
    modes = ", ".join(summary.get("reward_modes_in_records") or []) or "not recorded"
    items = (
        f"{overall['n_episodes']} episodes over {len(summary['per_task'])} task(s); "
        f"{overall['n_judged']} judged, {overall['fallback_count']} got the fallback score.",
        f"Scores from the reward server: {judge}.",
        f"Judged by (as the server answered, per episode): {judge_text(judges)}.",
        f"Judged success = vlm_score >= {summary['threshold']:g} (threshold: {source}).",
        "Ground truth: the simulator's success (native_success) at any step of the episode.",
        "Fallback episodes carry the fallback score, not a judgement: they are excluded from the judged "
        "success rate, agreement, precision, recall, F1, AUROC and the score errors, and counted separately.",
        f"Reward mode of the run(s) that wrote the records: {modes}. Both modes are evaluated below.",
    )
    blocks: list[Block] = [Heading("Where the numbers come from"), Items(items)]
    plain = {k: v for k, v in settings.items() if k not in BLOCK_KEYS}
    if plain:
        rows = tuple((str(k), _text(v)) for k, v in plain.items())
        blocks.append(
            Details(f"Settings of this evaluation ({len(rows)})", (Table(("setting", "value"), rows),))
        )
    return blocks + block_section(settings)


# settings.json's record of the reward_model block, shown as a table of its own.
BLOCK_KEYS = ("reward_model", "reward_model_sources")
NOT_RECORDED = "not recorded"


def block_section(settings: Mapping[str, Any]) -> list[Block]:
    """The ``reward_model`` block the calls used, key by key with where each value came from
    (:func:`key_source`), folded; none for a run dir made before the block was recorded."""
    block, sources = settings.get("reward_model"), settings.get("reward_model_sources") or {}
    if not block:
        return []
    rows = tuple((str(key), _text(value), key_source(key, value, sources)) for key, value in block.items())
    note = (
        "The reward_model block the judge calls used, and where each value came from (the precedence "
        "rule: docs/evaluate/index.md, which settings a command judges with):"
    )
    summary = f"The reward_model block of the calls ({len(rows)} keys, each with its source)"
    return [Details(summary, (Para(note), Table(("key", "value", "from"), rows)))]


def key_source(key: str, value: Any, sources: Mapping[str, str]) -> str:
    """Where a key's value came from. A key merged key by key (``backend_kwargs``) is recorded per
    inner key (``backend_kwargs.prompt``): its row lists them, or says no source set one (an empty
    mapping); a key a run dir did not record says so."""
    if key in sources:
        return str(sources[key])
    inner = {k.removeprefix(f"{key}."): s for k, s in sources.items() if k.startswith(f"{key}.")}
    if inner:
        return "key by key: " + ", ".join(f"{k} from {s}" for k, s in inner.items())
    if isinstance(value, Mapping) and not value and sources:
        return "merged key by key; no source sets a key"
    return NOT_RECORDED


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
