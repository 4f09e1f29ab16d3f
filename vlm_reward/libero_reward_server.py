"""HTTP reward server: ``POST /score``, ``GET /health``, ``GET /backends``.

``python -m vlm_reward.libero_reward_server --help`` runs it. The server is split by role:

- :mod:`vlm_reward.server.cli` - the command line (``main``), served by Hypercorn (:mod:`.server.serving`);
- :mod:`vlm_reward.server.app` - the FastAPI app factory, routes and the one exception handler;
- :mod:`vlm_reward.server.middleware` - the request log and the body-size limit (plain ASGI);
- :mod:`vlm_reward.server.service` - the logic of one request: caps, video, runner, answer;
- :mod:`vlm_reward.server.backend_slot` - one hosted backend: load state, runner, per-request checks;
- :mod:`vlm_reward.server.config` and :mod:`vlm_reward.server.limits` - the start-up settings and
  what one request may cost (the ``--max-*`` flags);
- :mod:`vlm_reward.backends.batching` and :mod:`vlm_reward.backends.continuous` - how jobs reach a
  backend (the backend picks its runner: ``RewardBackend.runner``);
- :mod:`vlm_reward.protocol` and :mod:`vlm_reward.errors` - the wire protocol and the exceptions.

This module is the stable entry point and re-exports the two names callers use.
"""

from __future__ import annotations

from vlm_reward.server.app import create_app
from vlm_reward.server.cli import main

__all__ = ["create_app", "main"]

if __name__ == "__main__":
    main()
