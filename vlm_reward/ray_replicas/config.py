"""The ``reward_server`` block: which judge the run's own Ray cluster serves, how many, with what.

A typed block (:class:`~vlm_reward.config_block.ConfigBlock`: unknown keys, wrong types and
out-of-range values are errors naming the key). Two levels of checks, both before anything
starts:

- construction: types and ranges, ``model`` given when ``enable``, no ``server_args`` flag that
  the launcher sets itself (host, port, keys, backend, ...);
- :meth:`RewardServerConfig.check_judge`: what needs the file system or an import: the
  ``plugins`` import, the backend is registered, a local ``model`` path is a checkpoint of a
  family the backend serves, the interpreter exists (by default
  :func:`vlm_reward.tools.runtime.server_python`: the vLLM venv for a vLLM backend), and
  ``video_root`` is a directory. Every failure is a ``ValueError`` of one sentence.

Where the replicas go is not here: that is the cluster's placement (see :mod:`.plan`).
"""

from __future__ import annotations

import importlib
import os
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from vlm_reward.backends import canonical_name, resolve_backend
from vlm_reward.backends.checkpoint_family import FamilyCheckpoint
from vlm_reward.backends.qwen_vl_vllm import QwenVllmBackend
from vlm_reward.config_block import ConfigBlock
from vlm_reward.judging.model_family import checkpoint_family
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.launch import LaunchSettings
from vlm_reward.server.self_test import SelfTestSettings
from vlm_reward.server.serving import ServingOptions
from vlm_reward.settings_flags import flag_name
from vlm_reward.tools.runtime import server_python

NonNegative = Annotated[float, Field(ge=0)]
# Server flags the launcher sets for every replica: a replica listens where its placement puts
# it, with the run's key, serving this block's judge. ``--ssl-*`` are not supported yet. Spelled
# by the settings classes that define them.
MANAGED_FLAGS = tuple(
    flag_name(settings, name)
    for settings, name in (
        (ServingOptions, "host"),
        (ServingOptions, "port"),
        (ServerConfig, "backend"),
        (ServerConfig, "model"),
        (ServerConfig, "backend_kwargs"),
        (ServerConfig, "video_root"),
        (LaunchSettings, "plugins"),
        (ServingOptions, "drain_timeout_s"),
        (SelfTestSettings, "threshold"),
        (SelfTestSettings, "request"),
        (LaunchSettings, "api_key_file"),
        (LaunchSettings, "allow_unauthenticated"),
        (ServingOptions, "ssl_certfile"),
        (ServingOptions, "ssl_keyfile"),
    )
)


class RewardServerConfig(ConfigBlock):
    """The judges a training run starts on its Ray cluster (off by default)."""

    block_name: ClassVar[str] = "reward_server"

    enable: bool = Field(
        False, description="Start the judges on the run's Ray cluster; False: servers you started yourself."
    )
    backend: str = Field(
        QwenVllmBackend.name, description="The servers' --backend (a name or alias; a plugin's too)."
    )
    model: str | None = Field(
        None, description="The judge: a checkpoint directory or a hub id; required when enabled."
    )
    backend_kwargs: dict[str, Any] = Field(default_factory=dict, description="The servers' --backend-kwargs.")
    plugins: list[str] = Field(
        default_factory=list, description="Modules that register more backends (the servers' --plugin)."
    )
    replicas: Annotated[int, Field(gt=0)] = Field(
        1, description="Reward servers to start: as many as cluster.component_placement.reward_server places."
    )
    gpus_per_replica: Annotated[int, Field(ge=0)] = Field(
        1, description="GPUs each replica gets from its placement; 0: a judge on CPU (placed on nodes)."
    )
    cpus_per_replica: NonNegative = Field(
        1.0, description="Ray CPUs each replica holds while it runs (scheduling only: nothing pins it)."
    )
    python: str | None = Field(
        None, description="Interpreter of the servers; null: the vLLM venv for a vLLM backend, else this one."
    )
    video_root: str | None = Field(
        None,
        description="A directory every replica can read, where the env writes its videos (sent by path); "
        "null: the env sends each video inline.",
    )
    server_args: list[str] = Field(
        default_factory=list,
        description="More server flags, e.g. [--max-batch-size, 4] (not the ones the launcher sets).",
    )
    drain_timeout_s: NonNegative = Field(
        ServingOptions.drain_timeout_s,
        description="Seconds the replicas' admitted jobs get when the run ends (their --drain-timeout).",
    )
    start_timeout_s: Annotated[float, Field(gt=0)] = Field(
        600.0, description="Seconds until every replica's /health answers 200."
    )
    max_restarts: Annotated[int, Field(ge=-1)] = Field(
        3, description="Times Ray restarts a replica whose process died; -1: without limit."
    )

    @field_validator("server_args")
    @classmethod
    def _not_managed(cls, args: list[str]) -> list[str]:
        for arg in args:
            flag = arg.split("=", 1)[0]
            if flag in MANAGED_FLAGS:
                raise ValueError(
                    f"{flag} is set for every replica by the launcher (or is not supported on Ray-placed "
                    f"replicas); give only other server flags, not: {', '.join(MANAGED_FLAGS)}"
                )
        return args

    @model_validator(mode="after")
    def _model_when_enabled(self) -> RewardServerConfig:
        if self.enable and not self.model:
            raise ValueError(
                "model is required when enable is true: the judge's checkpoint directory or hub id"
            )
        return self

    @property
    def canonical_backend(self) -> str:
        """The backend's registered name (an alias resolved); import :attr:`plugins` first."""
        return canonical_name(self.backend)

    def check_judge(self) -> str:
        """``ValueError`` in one sentence if a replica of this judge cannot start; returns the
        interpreter that will run it (see the module docstring)."""
        for module in self.plugins:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise ValueError(f"reward_server.plugins: cannot import {module!r} ({exc}).") from None
        try:
            backend = resolve_backend(self.backend)
        except ValueError as exc:
            raise ValueError(f"reward_server.backend: {exc}") from None
        if issubclass(backend, FamilyCheckpoint):
            try:
                checkpoint_family(str(self.model))
            except ValueError as exc:
                raise ValueError(f"reward_server.model: {exc}") from None
        if self.video_root is not None and not os.path.isdir(self.video_root):
            raise ValueError(f"reward_server.video_root {self.video_root!r} is not an existing directory.")
        return self._interpreter()

    def _interpreter(self) -> str:
        if self.python is None:
            try:
                return server_python(self.backend)
            except ImportError as exc:
                raise ValueError(f"reward_server.python: {exc}") from None
        if not (os.path.isfile(self.python) and os.access(self.python, os.X_OK)):
            raise ValueError(
                f"reward_server.python {self.python!r} is not an executable file; give the interpreter "
                "of an environment with this project's server installed, or null to let it be chosen."
            )
        return self.python
