"""One hosted backend in the server: its load state, its job runner and its admission step.

A :class:`BackendSlot` loads its backend in the server's loader thread, starts the runner the
backend asks for (:meth:`~vlm_reward.backends.base.RewardBackend.runner`), answers "ready?"
for ``/health``, admits each request in one step (:meth:`BackendSlot.admit`: ready, token
budget, score mode, and which frames to decode), and closes everything at shutdown. With a
self-test (``--self-test``) a loaded slot first serves only the self-test's own requests
(state ``self_testing``) until :meth:`BackendSlot.finish_self_test` says how it went.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vlm_reward.backends import ScoreJob
from vlm_reward.backends.batching import JobRunner
from vlm_reward.errors import (
    BackendError,
    BackendLoadFailedError,
    BackendLoadingError,
    InvalidRequestError,
    LimitExceededError,
    SelfTestFailedError,
    SelfTestingError,
    ServerShuttingDownError,
    scrub,
)
from vlm_reward.judging.prompts import PromptSpec
from vlm_reward.server.config import ServerConfig, model_display_name
from vlm_reward.server.limits import RequestLimits

logger = logging.getLogger("vlm_reward.server")

# How long a shutdown waits for a cancelled generation to notice before releasing the model.
_CLOSE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Admission:
    """A request this backend has accepted: what its job needs, decided once before queueing.

    ``frames(total)`` is which frames of a ``total``-frame video the backend shows for the
    request's ``nframes`` (the server decodes only those). ``prompt`` is what the job will be
    asked (``None`` for a backend without the project's prompts): the response names it.
    """

    backend: str
    model: str
    runner: JobRunner[ScoreJob, str]
    score_mode: str
    frames: Callable[[int], list[int]]
    prompt: PromptSpec | None = None


class BackendSlot:
    """One hosted backend: its instance, load state and runner.

    ``state`` goes ``loading`` -> ``ready`` or ``failed`` (with a self-test: ``loading`` ->
    ``self_testing`` -> ``ready`` or ``self_test_failed``); it is written by the loader
    thread and read by request handlers (single attribute writes, and the runner is set
    before the state says ``ready`` or ``self_testing``).
    """

    def __init__(self, name: str, backend: Any, config: ServerConfig) -> None:
        self.name = name
        self.backend = backend
        self.model = backend.describe_model(model_display_name(config.model))
        self.state = "loading"
        self.error: str | None = None
        self.runner: JobRunner[ScoreJob, str] | None = None
        self._config = config
        self._closing = False

    def load(self) -> None:
        """Load the weights (slow) and start the runner; failures are recorded, not raised."""
        start = time.perf_counter()
        try:
            self.backend.load()
            # The checkpoint may bring its own default budget (transformers' generation config).
            check_default_budget(self.name, self.backend, self._config.limits)
        except Exception as exc:
            logger.exception("backend %r failed to load", self.name)
            self.error = f"{type(exc).__name__}: {scrub(str(exc))}"
            self.state = "failed"
            return
        if self._closing:  # the server stopped while the weights loaded
            self._close_backend()
            return
        self.runner = self.backend.runner(
            max_batch_size=self._config.max_batch_size, max_wait_ms=self._config.max_wait_ms, name=self.name
        )
        self.state = "ready" if self._config.self_test is None else "self_testing"
        logger.info("backend %r loaded in %.1f s", self.name, time.perf_counter() - start)

    def finish_self_test(self, passed: bool, summary: str) -> None:
        """The self-test is over: serve (``ready``), or refuse for good (``self_test_failed``)."""
        if not passed:
            self.error = summary
        self.state = "ready" if passed else "self_test_failed"

    def require_ready(self, self_test: bool = False) -> JobRunner[ScoreJob, str]:
        """The runner, or ``BackendNotLoadedError`` saying why there is none yet; ``self_test``:
        a request of the self-test itself, served while the state is ``self_testing``."""
        if self._closing:
            raise ServerShuttingDownError("the server is shutting down; retry on another server or later.")
        serving = ("ready", "self_testing") if self_test else ("ready",)
        if self.state in serving and self.runner is not None:
            return self.runner
        if self.state == "failed":
            raise BackendLoadFailedError(f"backend {self.name!r} failed to load: {self.error}")
        if self.state == "self_testing":
            raise SelfTestingError(
                f"backend {self.name!r} loaded and is scoring its self-test; retry when GET /health "
                "returns 200."
            )
        if self.state == "self_test_failed":
            raise SelfTestFailedError(f"backend {self.name!r} failed its {self.error}")
        raise BackendLoadingError(
            f"backend {self.name!r} is still loading; retry when GET /health returns 200."
        )

    def admit(
        self,
        nframes: int,
        backend_kwargs: Mapping[str, Any],
        score_mode: str | None,
        limits: RequestLimits,
        self_test: bool = False,
    ) -> Admission:
        """Admit a request or raise why not, in this order: not ready (503), a generation budget
        above ``--max-new-tokens`` (422) or bad kwargs (400), a score mode it cannot serve (400),
        prompt overrides no prompt can take in that mode (400)."""
        runner = self.require_ready(self_test)
        self.check_budget(backend_kwargs, limits)
        mode = self.score_mode(score_mode)
        try:
            prompt = self.backend.prompt_spec(mode, backend_kwargs)
        except (ValueError, TypeError) as exc:
            raise BackendError(self.name, exc) from exc
        frames = self.backend.frame_indices
        return Admission(self.name, self.model, runner, mode, lambda total: frames(total, nframes), prompt)

    def score_mode(self, requested: str | None) -> str:
        """The request's score mode (default: the backend's); 400 if this backend cannot serve it."""
        mode = requested or self.backend.default_score_mode
        if mode not in self.backend.score_modes:
            raise InvalidRequestError(
                f"backend {self.name!r} cannot score with score_mode {mode!r}; "
                f"its modes: {', '.join(self.backend.score_modes)}."
            )
        return mode

    def check_budget(self, backend_kwargs: Mapping[str, Any], limits: RequestLimits) -> None:
        """422 if a request's generation budget is above ``--max-new-tokens``; 400 for bad kwargs."""
        try:
            budget = self.backend.token_budget(backend_kwargs)
        except (ValueError, TypeError) as exc:
            raise BackendError(self.name, exc) from exc
        limits.check_token_budget(budget)

    def close(self) -> None:
        """Answer queued and running jobs 503 at once (cancelling the running), then release the model."""
        if self._closing:
            return
        self._closing = True
        if self.runner is not None:
            self.runner.close(timeout=_CLOSE_TIMEOUT_S)
        self._close_backend()

    def _close_backend(self) -> None:
        try:
            self.backend.close()
        except Exception:
            logger.exception("closing backend %r failed", self.name)


def check_default_budget(name: str, backend: Any, limits: RequestLimits) -> None:
    """``ValueError`` if a request with no budget of its own would be above ``--max-new-tokens``."""
    budget = backend.token_budget({})
    if budget is None:
        logger.info("backend %r does not report token budgets; --max-new-tokens is not enforced", name)
        return
    try:
        limits.check_token_budget(budget, where=f"the default generation budget of backend {name!r}")
    except LimitExceededError as exc:
        raise ValueError(exc.message) from None
