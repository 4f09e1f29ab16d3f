"""Benchmark 21 (issue 55): a VLM judge trained here, measured as the env's client sees it.

Every number goes through the commands a user runs: a labelled set's episodes written as a run
(:mod:`reward_eval.classifier.labelled_run`: each served MP4, what the env's client sends), then
``reward-eval rescore`` on a local reward server per engine, ``reward-eval audit`` for the
perturbations, and the same successes written again as runs under instructions the judge never
trained with (rescored: one call each, like any episode):

1. **AUROC** of the judge's score against native success, with a 95% percentile bootstrap interval
   (:func:`reward_eval.analysis.calibration.auroc_interval`), on each set: the labelled set's
   ``test`` split (never used to choose), its ``held_out`` split (what chose), and ``--fresh``
   sets made with another seed (``scripts/make_classifier_data.py --seed 1``), whole, with the
   episodes whose initial state the judge trained on counted apart; beside it, what a 0/1 reward
   at 0.5 pays: the share of successes judged successes (recall) and of failures (false positives);
2. **the engines**: the same episodes served by ``qwen_vl_hf`` and ``qwen_vl_vllm`` (``--engines``);
   the share of equal verdicts at the threshold and the largest score difference;
3. **near misses**: the judged-success rate of the fresh sets' failed ``beside`` episodes (objects
   let go at a point jittered by 7 cm) beside the classifier's (``--classifier``, set-up's);
4. **the audit**: ``reversed``, ``frozen``, ``clipped`` (and the others) of the successes; and each
   success under every other libero_10 task's instruction and under paraphrases of the other
   basket tasks' (:data:`PARAPHRASES`), none of which the fine-tune trained with (its wrong
   instructions leave the measured suite out, :mod:`reward_eval.finetune.instructions`); the own
   instruction's paraphrases are reported too (a judge that reads accepts them, one that learnt
   the training texts need not).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_trained_judge.py --judge DIR --env-config YAML \\
        --fresh /tmp/fresh-s1 --out /tmp/bench21 [--engines qwen_vl_hf,qwen_vl_vllm]

Writes ``OUT/bench21.json`` and prints the table; ``OUT/<set>-<engine>`` are the rescored runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from reward_eval.analysis.calibration import auroc_interval, calibration  # noqa: E402
from reward_eval.analysis.episode_log import episode_logs  # noqa: E402
from reward_eval.classifier.labelled_run import records, write_records_run  # noqa: E402
from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, SPLITS, load_set  # noqa: E402
from reward_eval.finetune.instructions import pair_of  # noqa: E402
from reward_eval.job.audit_run import libero_suite_tasks  # noqa: E402
from vlm_reward.client.episode_log import read_episode_log  # noqa: E402

TIMEOUT_S = 3600
THRESHOLD = 0.5  # the product's: a 0/1 reward at 0.5
# Rewordings of each basket task; "{a}" and "{b}" are its two objects.
PARAPHRASES = (
    "place the {a} and the {b} into the basket",
    "the {a} and the {b} go in the basket",
    "pick up the {a} and the {b} and drop them in the basket",
)


def paraphrases(text: str) -> list[str]:
    """The :data:`PARAPHRASES` of a "put both the A and the B in the basket" text."""
    a, b = text.removeprefix("put both the ").removesuffix(" in the basket").split(" and the ")
    return [p.format(a=a, b=b) for p in PARAPHRASES]


def instruction_rows(own: str, suite_texts: Sequence[str]) -> dict[str, list[str]]:
    """row -> the instructions a success of ``own`` is judged under: every other text of its suite,
    and the paraphrases of the other basket pairs and of its own."""
    others = [t for t in suite_texts if t != own]
    return {
        "other_task": others,
        "other_paraphrase": [p for t in others if pair_of(t) is not None for p in paraphrases(t)],
        "own_paraphrase": paraphrases(own),
    }


def reward_eval(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "reward_eval", *args]
    print("[bench21] " + " ".join(command[2:]), flush=True)
    subprocess.run(command, check=True, timeout=TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)


def write_run(out: Path, episodes: Sequence[Any], note: str) -> Path:
    """``episodes`` (episode records, not judged) as a run dir; returns it."""
    write_records_run(out, episodes, {"note": note})
    return out


def set_records(data: Path, splits: Sequence[str]) -> list[Any]:
    labelled = load_set(data)
    return [r for split in splits for r in records(labelled, split)]


def scores_of(run_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for log in episode_logs(run_dir):
        for r in read_episode_log(log):
            rows.append(
                {
                    "video": str(r.video_path),
                    "text": str(r.task_text),
                    "success": bool(r.native_success),
                    "score": None if r.fallback else float(r.vlm_score),
                }
            )
    return rows


def auroc_block(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["score"] is not None]
    scores, labels = [r["score"] for r in scored], [r["success"] for r in scored]
    cal = calibration(scores, labels)
    verdicts = [(s >= THRESHOLD, y) for s, y in zip(scores, labels, strict=True)]
    wins, losses = sum(labels), len(labels) - sum(labels)
    return {
        "episodes": len(rows),
        "successes": sum(labels),
        "fallbacks": len(rows) - len(scored),
        "auroc": cal["auroc"],
        "interval": auroc_interval(scores, labels),
        "accuracy_at_threshold": sum(v == y for v, y in verdicts) / max(1, len(scored)),
        # what a 0/1 reward at the threshold does to a policy: its successes paid, its failures paid
        "recall": sum(v and y for v, y in verdicts) / wins if wins else None,
        "false_positive_rate": sum(v and not y for v, y in verdicts) / losses if losses else None,
    }


def rescore(run: Path, out: Path, backend: str, model: str, env_config: Path | None) -> list[dict[str, Any]]:
    if not (out / "summary.json").is_file():
        extra = ["--env-config", str(env_config)] if env_config else []
        reward_eval("rescore", str(run), "--backend", backend, "--model", model, "--out", str(out), *extra)
    return scores_of(out)


def trained_states(data: Path) -> set[tuple[int, int]]:
    return {e.state for e in load_set(data).episodes if e.split == "train"}


def fresh_rows(fresh: Path, rows: list[dict[str, Any]], trained: set[tuple[int, int]]) -> dict[str, Any]:
    """The fresh set's AUROC whole and split by whether the judge trained on the initial state, and
    its ``beside`` failures' judged-success rate."""
    labelled = load_set(fresh)
    by_video = {str(labelled.path(e.served).resolve()): e for e in labelled.episodes}
    seen = [r for r in rows if by_video[r["video"]].state in trained]
    unseen = [r for r in rows if by_video[r["video"]].state not in trained]
    beside = [r for r in rows if by_video[r["video"]].variant == "beside" and not r["success"]]
    judged = [r for r in beside if r["score"] is not None]
    return {
        "all": auroc_block(rows),
        "trained_states": auroc_block(seen),
        "unseen_states": auroc_block(unseen),
        "beside_failures": len(beside),
        "beside_fpr": sum(r["score"] >= THRESHOLD for r in judged) / len(judged) if judged else None,
    }


def instruction_audit(
    successes: Sequence[Any], out: Path, model: str, env_config: Path | None
) -> dict[str, Any]:
    """Each success under the instructions of :func:`instruction_rows` (libero_10's texts), rescored
    as one run per row."""
    suite_texts = [task.instruction for task in libero_suite_tasks("libero_10").values()]
    texts = {str(r.task_text): instruction_rows(str(r.task_text), suite_texts) for r in successes}
    result = {}
    for row in ("other_task", "other_paraphrase", "own_paraphrase"):
        made = [replace(r, task_text=t) for r in successes for t in texts[str(r.task_text)][row]]
        run = out / f"instructions-{row}"
        if not (run / "settings.json").is_file():
            write_run(run, made, f"successes under {row}")
        scored = rescore(run, out / f"instructions-{row}-judged", "qwen_vl_hf", model, env_config)
        values = [s["score"] for s in scored if s["score"] is not None]
        result[row] = {
            "calls": len(scored),
            "fallbacks": len(scored) - len(values),
            "judged_success": sum(v >= THRESHOLD for v in values) / len(values) if values else None,
        }
    return result


def engines_block(by_engine: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    if len(by_engine) < 2:
        return None
    (a, ra), (b, rb) = list(by_engine.items())[:2]
    pairs = [
        (x["score"], y["score"]) for x, y in zip(ra, rb, strict=True) if None not in (x["score"], y["score"])
    ]
    same = sum((x >= THRESHOLD) == (y >= THRESHOLD) for x, y in pairs)
    return {
        "engines": [a, b],
        "pairs": len(pairs),
        "same_verdict": same / len(pairs) if pairs else None,
        "max_abs_diff": max((abs(x - y) for x, y in pairs), default=None),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--judge", required=True, help="the fine-tuned judge's checkpoint dir")
    p.add_argument("--env-config", type=Path, help="env YAML of the judge's request (max_pixels, nframes)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="the labelled set it trained on")
    p.add_argument("--fresh", type=Path, action="append", default=[], help="fresh labelled sets (repeatable)")
    p.add_argument("--classifier", help="a classifier checkpoint to compare near misses with (resnet)")
    p.add_argument("--engines", default="qwen_vl_hf", help="comma-separated backends (default %(default)s)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    engines = [e for e in args.engines.split(",") if e]
    sets = {"test": (args.data, ["test"]), "held_out": (args.data, ["held_out"])}
    sets |= {f"fresh{i}": (f, list(SPLITS)) for i, f in enumerate(args.fresh)}
    result: dict[str, Any] = {"judge": args.judge, "env_config": str(args.env_config), "sets": {}}
    trained = trained_states(args.data)
    for name, (data, splits) in sets.items():
        run = args.out / f"{name}-episodes"
        if not (run / "settings.json").is_file():
            write_run(run, set_records(data, splits), f"{data} {splits}")
        by_engine = {
            e: rescore(run, args.out / f"{name}-{e}", e, args.judge, args.env_config) for e in engines
        }
        block: dict[str, Any] = {e: auroc_block(rows) for e, rows in by_engine.items()}
        block["engines"] = engines_block(by_engine)
        if name.startswith("fresh"):
            block["fresh"] = fresh_rows(data, by_engine[engines[0]], trained)
            if args.classifier:
                rows = rescore(run, args.out / f"{name}-classifier", "resnet", args.classifier, None)
                block["classifier"] = {"auroc": auroc_block(rows), "fresh": fresh_rows(data, rows, trained)}
        result["sets"][name] = block
    audited = args.out / "test-qwen_vl_hf"
    if not (audited / "audit").is_dir():
        reward_eval(
            "audit",
            str(audited),
            "--backend",
            "qwen_vl_hf",
            "--model",
            args.judge,
            *(["--env-config", str(args.env_config)] if args.env_config else []),
        )
    result["audit"] = json.loads((audited / "audit" / "audit.json").read_text())["rows"]
    successes = [
        r
        for name, (data, splits) in sets.items()
        if name != "held_out"
        for r in set_records(data, splits)
        if r.native_success
    ]
    result["instructions"] = instruction_audit(successes, args.out, args.judge, args.env_config)
    (args.out / "bench21.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "audit"}, indent=1, default=str))
    print({k: v.get("positive_rate") for k, v in result["audit"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
