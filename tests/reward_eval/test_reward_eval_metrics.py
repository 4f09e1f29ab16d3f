"""Tests for reward_eval.analysis (metrics, episode_log): the judge's numbers against hand-computed ones.

Every expected value below was worked out by hand from the records in the same row (the
comments show the arithmetic), so a wrong formula, a wrong denominator or a fallback episode
leaking into the judge metrics fails a row.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reward_eval.analysis.metrics import (
    auroc,
    disagreements,
    resolve_threshold,
    summarize,
)
from vlm_reward.client.episode_log import read_episode_log
from vlm_reward.verdict import DEFAULT_SUCCESS_THRESHOLD


def rec(native: bool, score: float, task: int = 0, fallback: bool = False, **extra: Any) -> dict[str, Any]:
    """A record shaped like the env's JSONL line, with only the fields that matter here."""
    return {
        "task_id": task,
        "task_text": f"task number {task}",
        "native_success": native,
        "vlm_score": score,
        "fallback": fallback,
        "error": "boom" if fallback else None,
        "error_kind": "parse_error" if fallback else None,
        **extra,
    }


# ----------------------------------------------------------------------------- auroc

AUROC_CASES = [
    ("perfect", [0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], 1.0),
    ("inverted", [0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1], 0.0),
    ("all-tied", [0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1], 0.5),
    # pos {0.35, 0.8} vs neg {0.1, 0.4}: 0.35>0.1, 0.8>0.1, 0.8>0.4 -> 3 of 4 pairs
    ("one-swap", [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], 0.75),
    # pos {0.5, 0.9} vs neg {0.5, 0.2}: 0.5=0.5 counts 1/2, the other three pairs win -> 3.5/4
    ("tie-across-classes", [0.5, 0.5, 0.2, 0.9], [1, 0, 0, 1], 0.875),
    # pos {0.3} vs neg {0.3, 0.3, 0.1}: 1/2 + 1/2 + 1 -> 2/3
    ("tie-group-of-three", [0.3, 0.3, 0.3, 0.1], [1, 0, 0, 0], 2 / 3),
    ("two-episodes", [0.2, 0.7], [1, 0], 0.0),
]


@pytest.mark.parametrize(
    ("scores", "labels", "expected"), [c[1:] for c in AUROC_CASES], ids=[c[0] for c in AUROC_CASES]
)
def test_auroc_matches_hand_computed_values(scores: list[float], labels: list[int], expected: float) -> None:
    assert auroc(scores, [bool(x) for x in labels]) == pytest.approx(expected)


@pytest.mark.parametrize(
    "labels", [[True, True, True], [False, False], []], ids=["only-positives", "only-negatives", "empty"]
)
def test_auroc_is_none_with_one_class(labels: list[bool]) -> None:
    assert auroc([0.5] * len(labels), labels) is None


def test_auroc_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="equal length"):
        auroc([0.1, 0.2], [True])


def _pairwise_auroc(scores: list[float], labels: list[bool]) -> float:
    """The definition: P(positive scores above negative), ties 1/2, over all pairs."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]), st.booleans()), min_size=2, max_size=40
    ).filter(lambda rows: len({y for _, y in rows}) == 2)
)
def test_auroc_equals_the_pairwise_definition(rows: list[tuple[float, bool]]) -> None:
    # Few distinct scores, so most draws contain ties: the rank formula must handle them exactly.
    scores, labels = [s for s, _ in rows], [y for _, y in rows]
    assert auroc(scores, labels) == pytest.approx(_pairwise_auroc(scores, labels))


# ----------------------------------------------------------------------------- summarize: overall block

SUMMARY_CASES = [
    (
        "mixed",
        # at 0.5: T0.9 tp, T0.6 tp, T0.3 fn, F0.7 fp, F0.2 tn, F0.1 tn
        [rec(True, 0.9), rec(True, 0.6), rec(True, 0.3), rec(False, 0.7), rec(False, 0.2), rec(False, 0.1)],
        {
            "n_episodes": 6,
            "n_judged": 6,
            "tp": 2,
            "fp": 1,
            "tn": 2,
            "fn": 1,
            "native_success_rate": 0.5,
            "vlm_success_rate": 0.5,
            "agreement": 4 / 6,
            "precision": 2 / 3,
            "recall": 2 / 3,
            "specificity": 2 / 3,
            "f1": 2 / 3,
            "auroc": 7 / 9,  # 0.9 beats 3 negatives, 0.6 and 0.3 beat 2 each
            "mean_vlm_score_native_success": 0.6,
            "mean_vlm_score_native_failure": (0.7 + 0.2 + 0.1) / 3,
            "fallback_count": 0,
        },
    ),
    (
        "all-native-successes",
        [rec(True, 0.8), rec(True, 0.4)],
        {
            "tp": 1,
            "fn": 1,
            "fp": 0,
            "tn": 0,
            "precision": 1.0,
            "recall": 0.5,
            "specificity": None,  # no native failure
            "f1": 2 / 3,
            "auroc": None,
            "mean_vlm_score_native_failure": None,
        },
    ),
    (
        "no-native-success",
        [rec(False, 0.1), rec(False, 0.7)],
        {
            "native_success_rate": 0.0,
            "precision": 0.0,  # one predicted positive, wrong
            "recall": None,  # nothing to recall
            "specificity": 0.5,
            "f1": 0.0,
            "auroc": None,
            "mean_vlm_score_native_success": None,
        },
    ),
    (
        "no-predicted-success",
        [rec(True, 0.1), rec(False, 0.2)],
        {
            "vlm_success_rate": 0.0,
            "precision": None,
            "recall": 0.0,
            "f1": 0.0,
            "agreement": 0.5,
            "auroc": 0.0,
        },
    ),
    (
        "all-fallbacks",
        [rec(True, 1.0, fallback=True), rec(False, 0.0, fallback=True)],
        {
            "n_episodes": 2,
            "n_judged": 0,
            "fallback_count": 2,
            "fallback_rate": 1.0,
            "native_success_rate": 0.5,
            "vlm_success_rate": None,
            "agreement": None,
            "precision": None,
            "recall": None,
            "f1": None,
            "auroc": None,
            "tp": 0,
            "error_counts": {"parse_error": 2},
        },
    ),
    (
        "fallback-left-out-of-judge-metrics",
        # the fallback (score 1.0 on a native failure) would be a false positive if it counted
        [rec(True, 0.9), rec(False, 0.1), rec(False, 1.0, fallback=True)],
        {
            "n_episodes": 3,
            "n_judged": 2,
            "fallback_count": 1,
            "fallback_rate": 1 / 3,
            "native_success_rate": 1 / 3,
            "fp": 0,
            "agreement": 1.0,
            "precision": 1.0,
            "auroc": 1.0,
            "vlm_success_rate": 0.5,
        },
    ),
    (
        "score-at-threshold-is-success",
        [rec(True, 0.5), rec(False, 0.49)],
        {"tp": 1, "tn": 1, "agreement": 1.0, "auroc": 1.0},
    ),
]


@pytest.mark.parametrize(
    ("records", "expected"), [c[1:] for c in SUMMARY_CASES], ids=[c[0] for c in SUMMARY_CASES]
)
def test_overall_block(records: list[dict], expected: dict[str, Any]) -> None:
    summary = summarize(records)
    overall = summary["overall"]
    for key, value in expected.items():
        assert overall[key] == (
            value if value is None or isinstance(value, dict) else pytest.approx(value)
        ), key
    assert overall["tp"] + overall["fp"] + overall["tn"] + overall["fn"] == overall["n_judged"]
    # JSON-safe: no NaN or inf sneaks in for the undefined ratios.
    json.dumps(summary, allow_nan=False)


def test_continuous_view_and_reward_signal() -> None:
    # judged: |0.9 - 1| = 0.1, |0.2 - 0| = 0.2; the fallback (score 1.0) only enters reward_signal
    records = [rec(True, 0.9), rec(False, 0.2), rec(False, 1.0, fallback=True)]
    overall = summarize(records)["overall"]
    assert overall["continuous"] == pytest.approx(
        {"mean_score": 0.55, "mean_abs_error": 0.15, "brier": 0.025}
    )
    # binary s: 1, 0, 1 (fallback 1.0 >= 0.5); continuous s: 0.9, 0.2, 1.0
    assert overall["reward_signal"] == pytest.approx({"native": 1 / 3, "binary": 2 / 3, "continuous": 0.7})


def test_continuous_view_is_none_without_judged_episodes() -> None:
    overall = summarize([rec(True, 1.0, fallback=True)])["overall"]
    assert overall["continuous"] == {"mean_score": None, "mean_abs_error": None, "brier": None}
    assert overall["reward_signal"]["continuous"] == 1.0


def test_latency_percentiles_and_error_counts() -> None:
    records = [rec(True, 0.9, latency_s=float(s)) for s in (1, 2, 3, 4, 5)]
    records[0].update(error="late answer", error_kind=None)  # an error without a kind
    records.append(rec(False, 0.0, fallback=True, error_kind="timeout"))
    overall = summarize(records)["overall"]
    # linear interpolation over 1..5: p90 sits at 3.6 of 4 steps -> 4.6; p99 at 3.96 -> 4.96
    assert overall["latency"] == pytest.approx(
        {"n": 5, "mean": 3.0, "p50": 3.0, "p90": 4.6, "p99": 4.96, "max": 5.0}
    )
    assert overall["error_counts"] == {"timeout": 1, "unknown": 1}


def test_latency_is_none_when_no_record_has_one() -> None:
    latency = summarize([rec(True, 0.9)])["overall"]["latency"]
    assert latency == {"n": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}


# ----------------------------------------------------------------------------- per task


def test_per_task_blocks_split_by_task_in_numeric_order() -> None:
    records = [
        rec(True, 0.9, task=10),
        rec(False, 0.8, task=10),
        rec(True, 0.2, task=2),
        rec(True, 0.7, task=2),
    ]
    per_task = summarize(records)["per_task"]
    assert list(per_task) == ["2", "10"]  # numeric, not "10" < "2"
    assert per_task["10"]["task_text"] == "task number 10"
    assert (per_task["10"]["n_episodes"], per_task["10"]["tp"], per_task["10"]["fp"]) == (2, 1, 1)
    assert per_task["10"]["native_success_rate"] == 0.5
    assert per_task["2"]["native_success_rate"] == 1.0
    assert per_task["2"]["recall"] == 0.5
    assert per_task["2"]["auroc"] is None  # only native successes in task 2


def test_single_task_block_equals_overall() -> None:
    records = [rec(True, 0.9, task=3), rec(False, 0.4, task=3), rec(False, 0.6, task=3, latency_s=1.0)]
    summary = summarize(records)
    assert list(summary["per_task"]) == ["3"]
    task = dict(summary["per_task"]["3"])
    assert task.pop("task_text") == "task number 3"
    assert task == summary["overall"]


# ----------------------------------------------------------------------------- threshold


def test_threshold_override_changes_vlm_success() -> None:
    # The logged vlm_success says the opposite of the scores: summarize must not read it.
    records = [rec(True, 0.7, vlm_success=False, success_threshold=0.5), rec(False, 0.3, vlm_success=True)]
    at_default = summarize(records)
    assert (at_default["threshold"], at_default["threshold_source"]) == (0.5, "records")
    assert at_default["overall"]["agreement"] == 1.0
    strict = summarize(records, threshold=0.8)
    assert (strict["threshold"], strict["threshold_source"]) == (0.8, "argument")
    assert (strict["overall"]["tp"], strict["overall"]["fn"], strict["overall"]["agreement"]) == (0, 1, 0.5)
    assert strict["overall"]["auroc"] == at_default["overall"]["auroc"] == 1.0  # threshold-free
    assert disagreements(records, 0.8) == [0]
    assert disagreements(records, 0.5) == []


THRESHOLD_SOURCE_CASES = [
    ("from-records", [rec(True, 0.65, success_threshold=0.7)], None, (0.7, "records")),
    ("default", [rec(True, 0.65)], None, (DEFAULT_SUCCESS_THRESHOLD, "default")),
    ("argument-wins", [rec(True, 0.65, success_threshold=0.7)], 0.6, (0.6, "argument")),
]


@pytest.mark.parametrize(
    ("records", "threshold", "expected"),
    [c[1:] for c in THRESHOLD_SOURCE_CASES],
    ids=[c[0] for c in THRESHOLD_SOURCE_CASES],
)
def test_resolve_threshold(records: list[dict], threshold: float | None, expected: tuple[float, str]) -> None:
    assert resolve_threshold(records, threshold) == expected
    # 0.65 is a success only below 0.7
    assert summarize(records, threshold)["overall"]["tp"] == int(expected[0] <= 0.65)


def test_mixed_record_thresholds_need_an_explicit_one() -> None:
    records = [rec(True, 0.9, success_threshold=0.5), rec(True, 0.9, success_threshold=0.7)]
    with pytest.raises(ValueError, match=r"different success_threshold values \[0.5, 0.7\]"):
        summarize(records)
    assert summarize(records, threshold=0.6)["threshold"] == 0.6


@pytest.mark.parametrize(
    "bad", [1.5, -0.1, math.nan, True, "0.5"], ids=["above-1", "negative", "nan", "bool", "str"]
)
def test_bad_threshold_is_rejected(bad: Any) -> None:
    with pytest.raises(ValueError, match="threshold must be a number in"):
        summarize([rec(True, 0.9)], threshold=bad)


# ----------------------------------------------------------------------------- bad input

BAD_RECORD_CASES = [
    ("missing-score", {"task_id": 0, "native_success": True}, "lacks \\['vlm_score'\\]"),
    ("score-above-1", rec(True, 1.5), "vlm_score must be a number in \\[0, 1\\], got 1.5"),
    ("score-nan", rec(True, math.nan), "vlm_score must be a number"),
    ("score-none", rec(True, None), "vlm_score must be a number"),  # type: ignore[arg-type]
    ("native-string", rec("yes", 0.5), "native_success must be true/false, got 'yes'"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(
    ("bad", "message"), [c[1:] for c in BAD_RECORD_CASES], ids=[c[0] for c in BAD_RECORD_CASES]
)
def test_malformed_record_is_named_by_index(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"episode record 1.*{message}"):
        summarize([rec(True, 0.9), bad])


def test_native_success_as_0_1_is_accepted() -> None:
    overall = summarize([rec(1, 0.9), rec(0, 0.1)])["overall"]  # type: ignore[arg-type]
    assert (overall["tp"], overall["tn"]) == (1, 1)


def test_empty_records_raise() -> None:
    with pytest.raises(ValueError, match="no episode records"):
        summarize([])


@pytest.mark.parametrize(
    ("records", "error"),
    [("not a list", TypeError), ([["task_id", 0]], TypeError), (iter([rec(True, 0.9)]), TypeError)],
    ids=["string", "list-not-mapping", "iterator"],
)
def test_wrong_container_types_raise_type_error(records: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        summarize(records)


# ----------------------------------------------------------------------------- read_episode_log


def test_read_episode_log_reads_the_env_episode_log(tmp_path: Path) -> None:
    """Round trip through the env's own writer and record, so the reader follows the real format."""
    from vlm_reward.client.config import RewardModelConfig
    from vlm_reward.client.episode_log import EpisodeLogWriter
    from vlm_reward.client.episode_record import EpisodeRecord
    from vlm_reward.client.scoring import ScoreResult

    cfg = RewardModelConfig(enable=True, success_threshold=0.6)
    log = EpisodeLogWriter(str(tmp_path / "vlm_episodes_train_rank0.jsonl"))
    for i, (score, native) in enumerate([(0.9, True), (0.55, True), (0.2, False)]):
        result = ScoreResult(
            score=score, raw_value=score, answer=f"<answer>{score}</answer>", latency_s=0.5, fallback=False
        )
        meta = {"task_id": i % 2, "task_text": f"task {i % 2}", "trial_id": i}
        log.write(EpisodeRecord.judged(meta, result, native, cfg))
    log.close()
    records = read_episode_log(log.path)
    assert [r.vlm_score for r in records] == [0.9, 0.55, 0.2]
    summary = summarize(records)
    assert (summary["threshold"], summary["threshold_source"]) == (0.6, "records")
    assert summary["overall"]["fn"] == 1  # 0.55 < 0.6 on a native success
    assert summary["reward_modes_in_records"] == ["binary"]
    assert set(summary["per_task"]) == {"0", "1"}


LINE = json.dumps(rec(True, 0.9))
LOAD_ERROR_CASES = [
    ("truncated-line", LINE + '\n\n{"task_id": 1, "vlm', "line 3: not valid JSON"),
    ("array-line", LINE + "\n[1, 2]\n", "line 2: expected a JSON object, got list"),
    ("missing-key", LINE + '\n{"task_id": 1}\n', r"line 2 lacks \['native_success', 'vlm_score'\]"),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in LOAD_ERROR_CASES], ids=[c[0] for c in LOAD_ERROR_CASES]
)
def test_read_episode_log_names_the_bad_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_episode_log(path)


def test_read_episode_log_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_text(f"\n{LINE}\n   \n{json.dumps(rec(False, 0.1))}\n")
    assert [(r.native_success, r.vlm_score) for r in read_episode_log(path)] == [(True, 0.9), (False, 0.1)]
