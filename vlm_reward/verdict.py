"""What a judgement says and who said it: the success rule and the judge's identity.

The success rule, ``score >= threshold`` (:func:`is_success`), is the one every part applies:
the env's ``vlm_success`` and its binary signal, the server's self-test, the training guard's
confusion counts, every report. The judge's identity (:class:`JudgeIdentity`: backend, model,
score mode, prompt preset and prompt fingerprint) is what the server answers with every score
and what the episode log carries on every judged line (:data:`JUDGE_KEYS`), so that runs judged
by different judges are never silently compared. Both live here, below the client, the server
and the training watch, so that none of them imports another for them. The threshold is a
setting (``reward_model.success_threshold``); its default, :data:`DEFAULT_SUCCESS_THRESHOLD`, is
defined here once for every threshold that defaults (the block's, the self-test's, the reports'
for a log that does not say).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_SUCCESS_THRESHOLD = 0.5
# The judge's identity as episode-log keys (JudgeIdentity.to_record): written when known (never on
# a fallback, and not by servers or logs older than these keys), so older lines read back unchanged.
JUDGE_KEYS = ("judge_backend", "judge_model", "score_mode", "prompt_preset", "prompt_hash")


def is_success(score: float, threshold: float) -> bool:
    """The success rule everywhere (the env's ``vlm_success``, its binary signal, the server's
    self-test, the training guard, every report): a score at or above the threshold is a success."""
    return float(score) >= threshold


@dataclass(frozen=True)
class JudgeIdentity:
    """Which judge scored an episode, as its server answered: backend, model, how the answer was
    read, and the prompt (its preset and its fingerprint, which tells edited prompts apart).

    Two episodes with different identities were not judged alike: a report over both says so.
    """

    backend: str
    model: str
    score_mode: str | None = None
    prompt_preset: str | None = None
    prompt_hash: str | None = None

    def __str__(self) -> str:
        parts = [f"{self.backend} on {self.model}"]
        if self.score_mode is not None:
            parts.append(f"score_mode {self.score_mode}")
        if self.prompt_preset is not None:
            parts.append(f"prompt {self.prompt_preset} ({self.prompt_hash})")
        return ", ".join(parts)

    def to_record(self) -> dict[str, Any]:
        """The record's judge keys (:data:`JUDGE_KEYS`)."""
        values = (self.backend, self.model, self.score_mode, self.prompt_preset, self.prompt_hash)
        return dict(zip(JUDGE_KEYS, values, strict=True))
