"""Make openvla-oft's ``modeling_prismatic`` construct under this project's transformers (4.57).

openvla-oft pins a transformers fork based on 4.40.1; RLinf 0.3 needs ``transformers<=4.57.6``.
Against 4.57 the model cannot even be constructed, on any device:

* ``PrismaticPreTrainedModel._supports_sdpa`` is a property that reads ``self.language_model``.
  transformers 4.57 asks for it inside ``PreTrainedModel.__init__`` (``_sdpa_can_dispatch``, to
  pick the attention implementation), before the subclass has built its language model, so
  ``nn.Module.__getattr__`` raises ``AttributeError: ... has no attribute '_supports_sdpa'``
  (the property's own ``AttributeError`` is reported under the property's name). The fix answers
  the same question from the class the language model *will* be (``AutoModelForCausalLM``'s
  mapping for ``config.text_config``) until the instance exists, and from the instance after.

:func:`apply` runs once, right after the module is imported, wherever ``prismatic`` comes from
(see :mod:`rlinf._prismatic_source`). It changes only what is listed here; ``tests/models``
construct the model through RLinf's ``get_model`` to prove it is enough.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

PATCHED = "_rlinf_compat_applied"


def _supports_sdpa(self: Any) -> bool:
    """SDPA support of the language model, known before it is built (see the module docstring)."""
    language_model = self.__dict__.get("_modules", {}).get("language_model")
    if language_model is not None:
        return bool(language_model._supports_sdpa)
    from transformers import AutoModelForCausalLM

    text_config = self.config.text_config
    model_class = AutoModelForCausalLM._model_mapping.get(type(text_config), None)
    return bool(getattr(model_class, "_supports_sdpa", False))


def apply(module: ModuleType) -> None:
    """Fix ``module`` (openvla-oft's ``prismatic.extern.hf.modeling_prismatic``) in place, once."""
    if getattr(module, PATCHED, False):
        return
    module.PrismaticPreTrainedModel._supports_sdpa = property(_supports_sdpa)
    setattr(module, PATCHED, True)
