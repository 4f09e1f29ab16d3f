"""The model family of a backend's checkpoint: checked at start-up, resolved at load.

The Qwen backends (transformers, vLLM in-process, OpenAI-compatible) serve every family in
:mod:`vlm_reward.judging.model_family`; which one a checkpoint is decides its vision geometry and,
for transformers, its model class. This mixin gives them the two steps:

- :meth:`FamilyCheckpoint.check_model`, called by the server right after constructing the
  backend: a local path that does not exist or has no ``config.json``, or a checkpoint of
  an unsupported family, fails there in one sentence, before the server starts listening
  (no hub lookup for a local path);
- :meth:`FamilyCheckpoint.resolve_family`, the first thing ``load`` does (a hub id's config
  is read there, still before any weight).
"""

from __future__ import annotations

from typing import Any

from vlm_reward.judging.model_family import ModelFamily, checkpoint_family, hub_checkpoint_family


class FamilyCheckpoint:
    """Mixin for backends whose ``model`` is a checkpoint of a :class:`ModelFamily`."""

    model: str
    family: ModelFamily | None = None

    def check_model(self) -> None:
        """``ValueError`` in one sentence if ``model`` cannot be this backend's checkpoint.

        Reads only ``config.json`` of a local path; a hub id is checked at load time.
        """
        self.family = checkpoint_family(self.model)

    def resolve_family(self, **from_pretrained_kwargs: Any) -> ModelFamily:
        """The checkpoint's family (read from its config only), kept on ``self.family``."""
        self.family = hub_checkpoint_family(self.model, **from_pretrained_kwargs)
        return self.family

    def require_family(self) -> ModelFamily:
        """The family resolved at load; ``RuntimeError`` before it."""
        if self.family is None:
            raise RuntimeError(f"{type(self).__name__} is not loaded; call load() first.")
        return self.family
