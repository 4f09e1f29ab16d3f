"""One scoring job's trip through a backend's runner: built, awaited unless its client leaves, read.

The service (:mod:`vlm_reward.server.service`) admits a request and prepares its video; this
module turns them into the backend's :class:`~vlm_reward.backends.base.ScoreJob`, waits for the
runner's answer (a client that disconnects, or a handler that is cancelled, abandons the job:
dropped while queued, cancelled while generating, so nobody keeps the model busy for nobody),
and reads the answer into the response's judgement fields: a probability as is (with its per-frame
scores when the backend gave them), text through
:func:`vlm_reward.judging.parsing.parse_score` (an unreadable answer is a 502 carrying the text).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any

from vlm_reward.backends import ProbabilityAnswer, ScoreJob
from vlm_reward.backends.batching import JobRunner
from vlm_reward.errors import AnswerParseError, ClientDisconnectedError
from vlm_reward.judging.parsing import ParsedScore, ScoreParseError, parse_score
from vlm_reward.protocol import ScoreRequest
from vlm_reward.server.video_source import LocalVideo


def make_job(req: ScoreRequest, video: LocalVideo, mode: str) -> ScoreJob:
    """The backend's job for ``req``: its video prepared (``video``) and its admitted score mode."""
    return ScoreJob(
        task_text=req.task_text,
        video_path=video.path,
        clip=video.clip,
        score_mode=mode,
        nframes=req.nframes,
        max_pixels=req.max_pixels,
        video_fps=req.video_fps,
        backend_kwargs=dict(req.backend_kwargs),
        native_frame_size=req.native_frame_size,
    )


async def await_answer(
    runner: JobRunner[ScoreJob, str], future: Future[str], client_gone: asyncio.Future[Any] | None
) -> str:
    """``future``'s answer, unless the client disconnects (or the handler is cancelled) first.

    Then the job is abandoned: dropped if still queued, cancelled if generating.
    """
    answer = asyncio.wrap_future(future)
    waiting = {answer} if client_gone is None else {answer, client_gone}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        _abandon(runner, future, answer)
        raise
    if not answer.done():
        _abandon(runner, future, answer)
        raise ClientDisconnectedError(
            "the client disconnected before its score was ready; its job was stopped."
        )
    return answer.result()


def _abandon(runner: JobRunner[ScoreJob, str], future: Future[str], answer: asyncio.Future[str]) -> None:
    # Cancelling the asyncio side first means a late answer is dropped silently rather than
    # logged as an exception nobody retrieved.
    answer.cancel()
    runner.abandon(future)


def read_answer(answer: str | ProbabilityAnswer, mode: str, backend: str) -> dict[str, Any]:
    """The response's judgement fields: from a probability as is, from text by parsing it."""
    if isinstance(answer, ProbabilityAnswer):
        p = answer.probability
        fields = {"score": p, "raw_value": p, "answer": answer.answer, "think": None, "probability": p}
        if answer.frame_scores is not None:
            fields["frame_scores"] = list(answer.frame_scores)
        return fields
    parsed = _parse_answer(answer, mode, backend)
    return {
        "score": parsed.score,
        "raw_value": parsed.raw_value,
        "answer": parsed.answer,
        "think": parsed.think,
    }


def _parse_answer(text: str, mode: str, backend: str) -> ParsedScore:
    """The parsed answer, or ``AnswerParseError`` (502) carrying the answer text."""
    try:
        return parse_score(text, mode)
    except ScoreParseError as exc:
        raise AnswerParseError(
            f"backend {backend!r} answered but no score could be read ({exc}) "
            f"with score_mode={mode!r}; full answer: {text!r}"
        ) from None
