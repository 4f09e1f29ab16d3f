"""Many judge calls at once, with a progress bar (``rescore --prefixes``, ``audit``).

:func:`judge_all` makes the calls on a thread pool and returns their results in call order;
:class:`CallBar` is its progress bar (:mod:`reward_eval.progress_bar`) counting the calls, with
the fallbacks so far as its postfix, safe to update from the worker threads that make the calls.
One loop for both commands, so both count, order and close the bar the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from reward_eval.progress_bar import progress_bar


class CallBar:
    """A thread-safe progress bar over ``total`` calls labelled ``desc``, fallbacks in its postfix."""

    def __init__(self, total: int, desc: str) -> None:
        self._bar = progress_bar(total, desc, "call")
        self._lock = threading.Lock()
        self._fallbacks = 0

    def done(self, fallback: bool) -> None:
        """Count one finished call (``fallback``: it failed and got the fallback score)."""
        with self._lock:
            self._fallbacks += fallback
            self._bar.set_postfix(fallback=self._fallbacks, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        """Close the bar (its last state stays on the terminal)."""
        self._bar.close()


class Judge(Protocol):
    """What :func:`judge_all` needs of the reward client (``RewardClient.score_video``)."""

    def score_video(self, task_text: str, video_path: str, num_frames: int, native_success: bool) -> Any:
        """One call; the result has ``score``, ``fallback`` and ``error``."""
        ...


@dataclass(frozen=True)
class JudgeCall:
    """One call: the instruction judged, the video file, the frames to send, the native outcome
    (the client's fallback score for a failed call depends on it)."""

    task_text: str
    video: str
    nframes: int
    native_success: bool


def judge_all(client: Judge, calls: Sequence[JudgeCall], concurrency: int, desc: str) -> list[Any]:
    """The client's result for each call, in ``calls`` order, ``concurrency`` calls at a time,
    counted on a :class:`CallBar` labelled ``desc`` (closed however the calls end)."""
    bar = CallBar(len(calls), desc)

    def one(call: JudgeCall) -> Any:
        result = client.score_video(call.task_text, call.video, call.nframes, call.native_success)
        bar.done(result.fallback)
        return result

    try:
        with ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(one, calls))
    finally:
        bar.close()
