"""The run's key for its judges, handed to the env workers through Ray's GCS.

Never through an environment that Ray writes down.

Why not simply export the key before Ray starts: RLinf 0.3 gives each worker it starts the
driver's whole environment as the worker's ``runtime_env`` ``env_vars``, and Ray 2.60's runtime
env agent logs every runtime env it creates at INFO (``runtime_env_agent.log`` in the session
dir; its dashboard shows them too), so an exported key would be written down once per worker.
Instead:

- the driver, once Ray is up, :func:`publish` es the key in Ray's internal key-value store (held
  in the GCS's memory) under this job's id and the variable's name, and :func:`withdraw` s it
  when the run ends;
- an env worker of the same job, before building its reward client, calls
  :func:`fetch_into_environ` with ``reward_model.api_key_env``: if that variable is unset in its
  process and the job published a key under it, it is set there, in that process only. The
  client then reads it as it reads any key (``RewardModelConfig.api_key``).

Outside Ray, or with the variable already set (a key exported for hand-started servers),
:func:`fetch_into_environ` does nothing, so every other path works as before.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

KV_NAMESPACE = "vlm_reward"


def _entry(variable: str) -> bytes:
    import ray

    return f"run_key:{ray.get_runtime_context().get_job_id()}:{variable}".encode()


def publish(variable: str, key: str) -> None:
    """Driver, Ray connected: make ``key`` what this job's workers get as ``$variable``."""
    from ray.experimental import internal_kv

    internal_kv._internal_kv_put(_entry(variable), key.encode(), overwrite=True, namespace=KV_NAMESPACE)


def withdraw(variable: str) -> None:
    """Driver: forget the key published under ``variable`` (workers that read it keep it)."""
    from ray.experimental import internal_kv

    internal_kv._internal_kv_del(_entry(variable), namespace=KV_NAMESPACE)


def fetch_into_environ(variable: str | None, environ: MutableMapping[str, str] = os.environ) -> bool:
    """In a Ray worker: set ``$variable`` from the key this job published under it, if it is unset
    here and one was published; whether it was set. Without Ray connected, nothing happens."""
    if variable is None or environ.get(variable):
        return False
    ray = sys.modules.get("ray")  # a process that never imported Ray is not one of its workers
    if ray is None or not ray.is_initialized():
        return False
    from ray.experimental import internal_kv

    value = internal_kv._internal_kv_get(_entry(variable), namespace=KV_NAMESPACE)
    if value is None:
        return False
    environ[variable] = value.decode()
    return True
