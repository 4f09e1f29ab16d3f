"""The ``RLINF_EXT_MODULE`` of ``--cpu-learn`` runs: one hook for the CPU platform and the policy.

RLinf imports the module ``RLINF_EXT_MODULE`` names in every worker process and calls its
``register()``; it names one module, so this one does both things a CPU learning run needs:
the CPU platform of ``--cpu-smoke`` (:mod:`examples.embodiment.cpu_smoke.cpu_platform`) and the
policy's model type registered with RLinf (``rlinf.models.register_model``). The driver runs it
too, before Ray starts (the smoke guard's ``load_hook_in_driver``), because RLinf's config check
(``validate_embodied_cfg``) looks the model type up there.
"""

from __future__ import annotations

from examples.embodiment.cpu_learn.policy import MODEL_TYPE, build
from examples.embodiment.cpu_smoke import cpu_platform


def register() -> None:
    """Install the CPU platform and register :data:`~.policy.MODEL_TYPE` (idempotent)."""
    from rlinf.models import register_model

    cpu_platform.register()
    register_model(MODEL_TYPE, build, category="embodied", force=True)
