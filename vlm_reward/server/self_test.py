"""The server's self-test: labelled episodes the judge must get right before it serves.

A wrong checkpoint, a broken processor or a mis-set prompt preset still answers every
request, with scores that mean nothing. With ``--self-test [DIR]`` the server scores a small
set of labelled episode videos through its own request path as soon as the weights have
loaded; ``/health`` (and ``/score``) answer 503 ``self_testing`` meanwhile, then 200 if the
judge misjudged at most ``--self-test-tolerance`` of them, else 503 ``self_test_failed``
for good, with the count and the cases it got wrong.

A set is a directory with ``manifest.json`` (:func:`load_self_test`, :func:`write_manifest`)
and its MP4s. The default set (:data:`DEFAULT_SELF_TEST_DIR`, shipped with the package) holds
real LIBERO episodes of the scripted expert, successes and near misses (objects dropped
before the basket), and the successes' counterfactuals (played backwards, frozen, cut in
half), which must read as failures; ``scripts/make_judge_self_test.py`` regenerates it.

A verdict is ``score >= threshold`` (the env's success rule); a case the backend fails on
(an unreadable answer, an inference error) counts as misjudged. :func:`grade` is pure.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vlm_reward.argtypes import json_object, unit_interval
from vlm_reward.protocol import DEFAULT_NFRAMES, ScoreRequest, ScoreResponse
from vlm_reward.settings_flags import flag, flag_name
from vlm_reward.verdict import DEFAULT_SUCCESS_THRESHOLD, is_success
from vlm_reward.video_io import probe_video

DEFAULT_SELF_TEST_DIR = Path(__file__).resolve().parents[1] / "self_test_data"
MANIFEST = "manifest.json"
DEFAULT_TOLERANCE = 0.25  # of the default set's 10-odd cases: at most a quarter wrong


# The request fields a self-test may set: what the judge is asked, not the video or the backend.
REQUEST_FIELDS = tuple(
    name
    for name in ScoreRequest.model_fields
    if name not in ("task_text", "video_path", "video_b64", "backend")
)


def request_json(text: str) -> dict[str, Any]:
    """argparse type of ``--self-test-request``: a JSON object of :data:`REQUEST_FIELDS`, checked as
    the server checks a request (argparse's error naming the bad field)."""
    fields = json_object(text)
    if unknown := sorted(set(fields) - set(REQUEST_FIELDS)):
        raise argparse.ArgumentTypeError(
            f"unknown request fields {unknown}; valid: {', '.join(REQUEST_FIELDS)}"
        )
    try:
        ScoreRequest(task_text="check", video_b64="check", **fields)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(
            f"not a valid request: {exc.errors()[0]['msg']} ({fields})"
        ) from None
    return dict(fields)


@dataclass(frozen=True)
class SelfTestSettings:
    """``--self-test [DIR]``, ``--self-test-tolerance`` and ``--self-test-threshold``: each field
    is its flag (:mod:`vlm_reward.settings_flags`); without ``--self-test`` there is no self-test."""

    directory: str = flag(
        str(DEFAULT_SELF_TEST_DIR),
        name="self-test",
        metavar="DIR",
        optional_value=True,
        help="a set of labelled episodes (manifest.json + MP4s); without DIR the set shipped with "
        "the server (LIBERO expert successes, near misses and counterfactuals)",
    )
    tolerance: float = flag(
        DEFAULT_TOLERANCE,
        name="self-test-tolerance",
        parse=unit_interval,
        metavar="FRACTION",
        help="largest fraction of the set the judge may misjudge and still serve (default: %(default)s)",
    )
    threshold: float = flag(
        DEFAULT_SUCCESS_THRESHOLD,
        name="self-test-threshold",
        parse=unit_interval,
        help="a score at or above this is the judge's 'success'; the launchers pass the env's "
        "success_threshold (default: %(default)s)",
    )
    request: dict[str, Any] = flag(
        default_factory=dict,
        name="self-test-request",
        parse=request_json,
        metavar="JSON",
        help="what each self-test request asks, as the env asks it: any of "
        f"{', '.join(REQUEST_FIELDS)}; the launchers pass the env's reward_model values "
        "(default: the request's own defaults)",
    )


def self_test_flags(threshold: float, request: Mapping[str, Any]) -> list[str]:
    """The server flags that make its self-test judge as an env does: a score at or above
    ``threshold`` is a success, and every case is asked with ``request`` (the env's judge-facing
    ``reward_model`` values). The launchers add them to every server they start for an env."""
    threshold_flag, request_flag = (flag_name(SelfTestSettings, n) for n in ("threshold", "request"))
    return [threshold_flag, repr(float(threshold)), request_flag, json.dumps(dict(request))]


@dataclass(frozen=True)
class SelfTestCase:
    """One labelled episode: its video, its instruction, and whether it is a success."""

    video: Path
    task_text: str
    success: bool
    kind: str  # success, failure, or the perturbation a counterfactual was made with

    def describe(self) -> str:
        return f"{self.video.name} ({self.kind}, {'success' if self.success else 'failure'})"


def load_self_test(directory: str | os.PathLike[str]) -> list[SelfTestCase]:
    """The cases of the set in ``directory``; ``ValueError`` naming the problem (no manifest,
    a case without its keys, a missing video, no case at all)."""
    root = Path(directory)
    path = root / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"self-test set {root}: cannot read {MANIFEST} ({exc}).") from None
    entries = data.get("cases") if isinstance(data, dict) else None
    if not entries:
        raise ValueError(f'self-test set {root}: {MANIFEST} has no "cases".')
    return [_case(root, i, entry) for i, entry in enumerate(entries)]


def _case(root: Path, index: int, entry: Any) -> SelfTestCase:
    where = f"self-test set {root}, case {index}"
    keys = ("video", "task_text", "success", "kind")
    if not isinstance(entry, dict) or any(key not in entry for key in keys):
        raise ValueError(f"{where}: needs the keys {list(keys)}, got {entry!r}.")
    if not isinstance(entry["success"], bool) or not isinstance(entry["task_text"], str):
        raise ValueError(f"{where}: success must be true/false and task_text a string.")
    video = root / str(entry["video"])
    if not video.is_file():
        raise ValueError(f"{where}: no video {video.name} in the set.")
    return SelfTestCase(video, entry["task_text"], bool(entry["success"]), str(entry["kind"]))


def write_manifest(directory: str | os.PathLike[str], cases: Sequence[SelfTestCase], note: str) -> Path:
    """Write ``manifest.json`` for ``cases`` (their videos already in ``directory``)."""
    entries = [
        {"video": case.video.name, "task_text": case.task_text, "success": case.success, "kind": case.kind}
        for case in cases
    ]
    path = Path(directory) / MANIFEST
    path.write_text(json.dumps({"note": note, "cases": entries}, indent=1) + "\n", encoding="utf-8")
    return path


async def score_cases(
    cases: Sequence[SelfTestCase],
    score: Callable[[ScoreRequest], Awaitable[ScoreResponse]],
    max_nframes: int,
    request: Mapping[str, Any] | None = None,
) -> list[float | BaseException]:
    """Each case's score through ``score`` (the server's own request path), all at once so the
    backend batches them; a request that fails gives its exception. The video goes inline, asked
    with ``request`` (:attr:`SelfTestSettings.request`: the env's nframes, max_pixels, video_fps,
    score_mode, backend_kwargs; the request's defaults for what it leaves out), each case's
    frames capped at ``nframes`` and the server's cap."""
    request = dict(request or {})

    async def one(case: SelfTestCase) -> float:
        nframes = min(
            probe_video(case.video).num_frames, max_nframes, request.get("nframes", DEFAULT_NFRAMES)
        )
        asked = ScoreRequest(
            task_text=case.task_text,
            video_b64=base64.b64encode(case.video.read_bytes()).decode("ascii"),
            **{**request, "nframes": nframes},
        )
        return (await score(asked)).score

    return list(await asyncio.gather(*(one(case) for case in cases), return_exceptions=True))


@dataclass(frozen=True)
class SelfTestReport:
    """How the judge did on the set: what it got wrong, against the tolerance."""

    total: int
    misjudged: tuple[str, ...]  # each wrong case described, with its score or error
    tolerance: float

    @property
    def misjudged_fraction(self) -> float:
        return len(self.misjudged) / self.total

    @property
    def passed(self) -> bool:
        return self.misjudged_fraction <= self.tolerance

    def summary(self) -> str:
        """One sentence for the log and for ``/health``."""
        head = (
            f"self-test: misjudged {len(self.misjudged)} of {self.total} labelled episodes "
            f"({self.misjudged_fraction:.0%}; --self-test-tolerance {self.tolerance:g})"
        )
        if not self.misjudged:
            return head
        shown = "; ".join(self.misjudged[:6]) + ("; ..." if len(self.misjudged) > 6 else "")
        return f"{head}: {shown}"


def grade(
    cases: Sequence[SelfTestCase],
    outcomes: Sequence[float | BaseException],
    threshold: float,
    tolerance: float,
) -> SelfTestReport:
    """The report for each case's score (or the error its request ended with)."""
    if len(cases) != len(outcomes) or not cases:
        raise ValueError(f"grade needs one outcome per case, got {len(outcomes)} for {len(cases)} cases.")
    wrong = []
    for case, outcome in zip(cases, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            wrong.append(f"{case.describe()} failed: {type(outcome).__name__}")
        elif is_success(outcome, threshold) != case.success:
            wrong.append(f"{case.describe()} scored {outcome:.2f}")
    return SelfTestReport(len(cases), tuple(wrong), tolerance)
