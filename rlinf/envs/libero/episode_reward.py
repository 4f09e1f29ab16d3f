"""The VLM reward's per-env episode bookkeeping, apart from LIBERO, HTTP and torch.

:class:`EpisodeRewards` is what ``LiberoEnv`` feeds, step by step; it never talks to the
simulator or the server itself. It keeps, per env:

* the frame cache: the policy's main image of every step of the current episode, the
  reset frame included, until the episode has been scored;
* which episodes have ended (first termination or truncation; an ended env is not
  scored again before its reset) and their native success and length at that step;
* the pending scores: :meth:`EpisodeRewards.record_step` returns the episodes that end at
  that step (:class:`Ended`: env, frames, native success); the env starts their scoring
  call at once and hands the core each call's future (:meth:`EpisodeRewards.submitted`),
  whose result is collected later, at the end of the chunk or before an auto-reset. The
  core never calls out: it returns what ended and is told what was started;
* the held signal ``s`` fed to RLinf's ``_calc_step_reward`` in place of the termination
  flag, and the metric values of each env's current episode.

Positions are explicit: steps are recorded into a *window* (one ``chunk_step``, or one
``step`` called on its own, which is a chunk of one), each ended episode remembers its
column in that window, and :meth:`EpisodeRewards.close_window` adds the VLM term to that
column of the window's rewards. Every ended episode is collected before its window closes
and before its env is reset, so no score is ever dropped without an error or a warning.

Who decides that an episode may train on the judge's verdict is the caller's: ``collect``
asks its ``review`` for each episode, in env order (the env's
:class:`~vlm_reward.watch.judge_watch.JudgeWatch`, whose guard may stop trusting the judge).
An episode the review refuses trains on its native success as ``s``, which gives exactly the
native reward (the simulator's flag is held the same way).

The VLM term itself (the signal, the metrics, the correction of a window) is
:mod:`rlinf.envs.libero.reward_term`'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlinf.envs.libero.reward_term import (
    VLM_METRIC_KEYS,
    Shaping,
    SignalSettings,
    end_step_correction,
    episode_metrics,
    success_signal,
)
from vlm_reward.client.episode_record import Judgement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ended:
    """An episode that ended at this step: what its scoring call needs.

    ``frames`` is the core's own list, never changed afterwards (a reset starts a new one),
    so a call may read it from another thread.
    """

    env: int
    frames: list[np.ndarray]
    native_success: bool


@dataclass(frozen=True)
class Scored:
    """One collected episode: where it ended, what it was, what the judge said."""

    env: int
    position: int  # its end step's column in the window
    episode: int  # how many episodes of this env were scored before it
    length: int  # steps, from RLinf's elapsed_steps at the end step
    native_success: bool
    signal: float | None  # s fed to the reward; None in shadow mode
    result: Judgement
    trained_on_judge: bool  # s came from the verdict (not shadow mode, not refused by the review)


# (env, native success, judgement) -> may this episode train on the verdict? Asked once per
# collected episode, in env order.
Review = Callable[[int, bool, Judgement], bool]


class EpisodeRewards:
    """The per-env episode state of the VLM reward; see the module docstring for the contract.

    Arrays read by the env's hooks: ``signal`` (the held ``s``), ``ended`` and ``metrics``.
    RLinf's own arrays (``returns``, ``prev_step_reward``) are passed in and updated in place.
    """

    def __init__(self, num_envs: int, settings: SignalSettings) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}.")
        self.num_envs, self.settings = num_envs, settings
        self.frames: list[list[np.ndarray]] = [[] for _ in range(num_envs)]
        self.ended = np.zeros(num_envs, dtype=bool)
        self.signal = np.zeros(num_envs)  # the s fed to _calc_step_reward, held after the end step
        self.metrics = {key: np.zeros(num_envs) for key in VLM_METRIC_KEYS}
        self._native = np.zeros(num_envs, dtype=bool)
        self._length = np.zeros(num_envs, dtype=np.int64)
        self._scored_count = np.zeros(num_envs, dtype=np.int64)
        self._pending: dict[int, tuple[int, Future | None]] = {}  # env -> (position, future once submitted)
        self._corrections: list[tuple[int, int, float, Shaping]] = []  # (env, position, s, shaping)
        self._window: int | None = None  # steps recorded in the open window; None: closed

    # ---- state -----------------------------------------------------------------------

    @property
    def pending(self) -> dict[int, int]:
        """Envs whose episode ended and awaits collection, with its end step's position."""
        return {env: position for env, (position, _) in self._pending.items()}

    @property
    def window_open(self) -> bool:
        return self._window is not None

    @property
    def idle(self) -> bool:
        """No window open and nothing pending: settings may change now."""
        return self._window is None and not self._pending

    def reconfigure(self, settings: SignalSettings) -> None:
        """New settings for the episodes to come; ``RuntimeError`` unless :attr:`idle`."""
        if not self.idle:
            raise RuntimeError(
                "reward settings can only change between episodes: "
                f"pending scores {sorted(self._pending)}, window open: {self.window_open}."
            )
        self.settings = settings

    def lengths(self, elapsed: np.ndarray) -> np.ndarray:
        """Episode lengths for the per-step reward: the end step's count once an episode ended."""
        return np.where(self.ended, self._length, elapsed)

    # ---- episodes --------------------------------------------------------------------

    def start(self, env: int, frame: np.ndarray) -> None:
        """A new episode of ``env`` whose first frame is ``frame`` (a reset)."""
        if env in self._pending:
            raise RuntimeError(
                f"env {env} is reset while its ended episode (position {self._pending[env][0]}) "
                "is still being scored; collect() must come first or the score would be lost."
            )
        self.frames[env] = [np.array(frame, copy=True)]  # a new list: a submitted one stays intact
        self.ended[env] = False
        self.signal[env] = 0.0
        for values in self.metrics.values():
            values[env] = 0.0

    def open_window(self) -> None:
        """Start recording the steps of one chunk (or of one step called on its own)."""
        if self._window is not None:
            raise RuntimeError("a window is already open; close_window() or abandon_window() first.")
        self._window = 0

    def record_step(
        self, images: Sequence[np.ndarray], dones: np.ndarray, native_success: np.ndarray, elapsed: np.ndarray
    ) -> list[Ended]:
        """Cache this step's frame of each running episode; return the episodes that end here.

        Each returned episode is pending: the caller starts its scoring call and hands the
        core its future with :meth:`submitted` before :meth:`collect`.
        """
        if self._window is None:
            raise RuntimeError("record_step() needs an open window (open_window()).")
        position, ended_now = self._window, []
        for env in map(int, np.flatnonzero(~self.ended)):
            self.frames[env].append(np.array(images[env], copy=True))
            if bool(dones[env]):
                self.ended[env] = True
                self._native[env] = bool(native_success[env])
                self._length[env] = int(elapsed[env])
                self._pending[env] = (position, None)
                ended_now.append(Ended(env, self.frames[env], bool(native_success[env])))
        self._window += 1
        return ended_now

    def submitted(self, env: int, future: Future) -> None:
        """The scoring call of ``env``'s ended episode (from :meth:`record_step`) has started."""
        if env not in self._pending or self._pending[env][1] is not None:
            raise RuntimeError(f"env {env} has no ended episode waiting for its scoring call.")
        self._pending[env] = (self._pending[env][0], future)

    def count_return(
        self, returns: np.ndarray, step_reward: np.ndarray, counted_by_rlinf: np.ndarray
    ) -> None:
        """Make ``returns`` count this step for every episode that has not ended before it.

        RLinf counted the step where ``counted_by_rlinf`` (no native success yet); a VLM
        episode is counted up to and including its end step, which with
        ``ignore_terminations`` can come after a native success.
        """
        counted = ~self.ended  # this step's end is marked after the step, by record_step
        returns += step_reward * (counted.astype(float) - np.asarray(counted_by_rlinf).astype(float))

    def collect(
        self,
        returns: np.ndarray,
        prev_step_reward: np.ndarray,
        shaping: Shaping,
        review: Review | None = None,
    ) -> list[Scored]:
        """Wait for every pending score; record metrics and, when training on it, the VLM term.

        Raises the first error (in env order) of a scoring call after waiting for all of
        them (``fail_on_request_error``); nothing is recorded then. Otherwise, per episode
        in env order: ``review`` (if given) says whether it may train on the verdict; the
        metrics, and with ``use_for_training`` the held signal (the verdict's, or the native
        success where the review refused it), the return's term, ``prev_step_reward``'s term
        (``use_rel_reward``) and a correction of its window.
        """
        unsubmitted = sorted(env for env, (_, future) in self._pending.items() if future is None)
        if unsubmitted:
            raise RuntimeError(f"collect() before the scoring calls of envs {unsubmitted} were submitted().")
        items = sorted(self._pending.items())
        self._pending.clear()
        results, errors = [], []
        for _, (_, future) in items:
            try:
                results.append(future.result())
            except Exception as exc:  # re-raised below, once every call is done
                errors.append(exc)
        if errors:
            raise errors[0]
        return [
            self._settle(env, position, result, returns, prev_step_reward, shaping, review)
            for (env, (position, _)), result in zip(items, results, strict=True)
        ]

    def _settle(
        self,
        env: int,
        position: int,
        result: Any,
        returns: np.ndarray,
        prev_step_reward: np.ndarray,
        shaping: Shaping,
        review: Review | None,
    ) -> Scored:
        native, signal = bool(self._native[env]), None
        trusted = True if review is None else bool(review(env, native, result))
        if self.settings.use_for_training:
            signal = success_signal(result.score, self.settings) if trusted else float(native)
            term = shaping.reward_coef * signal
            self.signal[env] = signal
            returns[env] += term  # the end step's VLM term, counted once
            if shaping.use_rel_reward:
                prev_step_reward[env] += term  # later steps difference against the held s
            self._corrections.append((env, position, signal, shaping))
        for key, value in episode_metrics(result, native, self.settings).items():
            self.metrics[key][env] = value
        count, length = int(self._scored_count[env]), int(self._length[env])
        trained = self.settings.use_for_training and trusted
        scored = Scored(env, position, count, length, native, signal, result, trained)
        self._scored_count[env] += 1
        self.frames[env] = []  # scored: the frames are not needed any more
        return scored

    def close_window(self, rewards: np.ndarray) -> None:
        """Add the collected VLM terms to the window's ``rewards`` (``num_envs x steps``, in place)."""
        if self._window is None:
            raise RuntimeError("close_window() without an open window.")
        if self._pending:
            raise RuntimeError(f"close_window() with scores still pending for envs {sorted(self._pending)}.")
        expected = (self.num_envs, self._window)
        if rewards.shape != expected:
            raise ValueError(
                f"rewards must have shape {expected} (envs x recorded steps), got {rewards.shape}."
            )
        for env, position, signal, shaping in self._corrections:
            rewards[env] += end_step_correction(signal, position, self._window, shaping)
        self._corrections.clear()
        self._window = None

    def abandon_window(self) -> list[int]:
        """After an error inside a window: drop it and whatever it was still scoring.

        Waits for the in-flight calls (no request outlives the window) and warns naming
        the envs whose score is dropped. Returns those envs.
        """
        dropped = sorted(self._pending)
        for _, future in self._pending.values():
            if future is None:
                continue
            with contextlib.suppress(Exception):  # the window failed already; that error is raised
                future.result()
        if dropped:
            logger.warning("the chunk failed; dropping the scores of the episodes of envs %s.", dropped)
        self._pending.clear()
        self._corrections.clear()
        self._window = None
        return dropped
