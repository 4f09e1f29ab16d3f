"""Which judges scored a set of episodes: pure functions over episode records.

Every judged record names its judge (:class:`vlm_reward.verdict.JudgeIdentity`:
backend, model, score mode, prompt preset and fingerprint). Metrics over episodes judged by two
different judges mix two instruments, so every report lists the judges with their episode
counts and says so when there is more than one. Fallback episodes were judged by nobody and are
not counted; records older than the judge keys count as "not recorded". A report's title names the
judge by its backend's kind (:func:`evaluation_title`): a classifier is not called a VLM.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vlm_reward.backends import resolve_backend
from vlm_reward.client.episode_record import EpisodeRecord

NOT_RECORDED = "not recorded (a log older than the judge's identity)"
GENERIC_KIND = "judge"  # what a report calls a judge whose kind it cannot tell


def judges_of(records: Sequence[EpisodeRecord]) -> list[dict[str, Any]]:
    """``[{"judge": text, "episodes": n}, ...]`` over the judged (non-fallback) records, most
    episodes first; records without the judge keys are one entry, :data:`NOT_RECORDED`."""
    return count_judges([None if r.judge is None else str(r.judge) for r in records if not r.fallback])


def count_judges(judges: Iterable[str | None]) -> list[dict[str, Any]]:
    """The judges named by each judged call (``None``: not recorded) with their counts, most first."""
    counts = Counter(NOT_RECORDED if judge is None else judge for judge in judges)
    return [{"judge": judge, "episodes": n} for judge, n in counts.most_common()]


def mixed(judges: Sequence[Mapping[str, Any]]) -> bool:
    """Whether more than one known judge scored the episodes."""
    return len([j for j in judges if j["judge"] != NOT_RECORDED]) > 1


def judge_text(judges: Sequence[Mapping[str, Any]]) -> str:
    """One line: the judge, or each judge with its episode count."""
    if not judges:
        return "none (every episode got the fallback score)"
    if len(judges) == 1:
        return str(judges[0]["judge"])
    return "; ".join(f"{j['judge']} ({j['episodes']} episodes)" for j in judges)


def mixed_warning(judges: Sequence[Mapping[str, Any]]) -> str | None:
    """The warning a report over several judges carries, or ``None`` for one judge."""
    if not mixed(judges):
        return None
    return (
        f"These episodes were scored by {len(judges)} different judges: {judge_text(judges)}. "
        "The metrics below mix them; re-score the run with one judge (rescore) to compare like with like."
    )


def backend_of(records: Sequence[EpisodeRecord], requested: str | None = None) -> str | None:
    """The backend that judged ``records``, as the server answered, when every judged record names
    the same one; else ``requested`` (the backend the calls asked for; ``None``: the server's own)."""
    backends = {r.judge.backend for r in records if not r.fallback and r.judge is not None}
    return next(iter(backends)) if len(backends) == 1 else requested


def judge_kind(backend: str | None) -> str:
    """What a backend's judge is, in a report's words: its class's ``judge_kind`` ("video VLM",
    "ResNet success classifier"), or "judge" for none or one this process has not registered."""
    if backend is None:
        return GENERIC_KIND
    try:
        return resolve_backend(backend).judge_kind
    except ValueError:  # a plugin's backend, registered in the server's process only
        return GENERIC_KIND


def evaluation_title(backend: str | None, subject: str) -> str:
    """An evaluation report's title: the judge named as what it is, against the simulator."""
    kind = judge_kind(backend)
    return f"{kind[0].upper()}{kind[1:]} vs native success: {subject}"
