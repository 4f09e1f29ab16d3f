"""The env YAML as every reader sees it: composed the way the training composes it.

The repo's env YAMLs (``examples/embodiment/config/env/*.yaml``) include the ``reward_model``
block from its config group (``defaults: [/reward_model@reward_model: default, _self_]``), so a
plain ``OmegaConf.load`` of one misses every key it does not override. :func:`load_env_config`
composes a YAML that has a ``defaults`` list with Hydra, as the training's ``@hydra.main`` does
(the file's own directory first, then the repo's config root, where ``/reward_model`` lives),
and loads a self-contained YAML (no ``defaults``) as it is, so a user's hand-written env YAML
still reads. Interpolations stay unresolved (``episode_log_dir`` follows the training run's log
dir and reads as null outside one); the result is a plain, writable ``DictConfig``.

Call it outside a running Hydra app (the evaluation commands, scripts, benchmarks, tests); the
training itself gets its env block from its own composition.
"""

from __future__ import annotations

import os
import typing
import warnings
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from reward_eval.job.paths import CONFIG_ROOT

DEFAULTS_KEY = "defaults"
# The training entry point's Hydra compatibility level, so both compose alike.
HYDRA_VERSION_BASE = "1.1"


def load_env_config(path: str | os.PathLike[str]) -> DictConfig:
    """The env YAML at ``path``, its ``defaults`` composed; ``ValueError`` naming the file when it
    is missing, unreadable or names a config that does not exist."""
    file = Path(path).resolve()
    if not file.is_file():
        raise ValueError(f"env config {path} is not a file.")
    try:
        raw = OmegaConf.load(file)
    except Exception as exc:  # OmegaConf raises yaml's and its own errors alike
        raise ValueError(f"env config {path} is not a readable YAML mapping ({exc}).") from None
    if not isinstance(raw, DictConfig):
        raise ValueError(f"env config {path} is a YAML list, not a mapping of env settings.")
    if DEFAULTS_KEY not in raw:
        return raw
    return _compose(file)


def _compose(file: Path) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    searchpath = f"hydra.searchpath=[file://{CONFIG_ROOT}]"
    try:
        with warnings.catch_warnings():  # Hydra's notices about version_base 1.1: the training's choice
            warnings.simplefilter("ignore")
            with initialize_config_dir(config_dir=str(file.parent), version_base=HYDRA_VERSION_BASE):
                cfg = compose(config_name=file.stem, overrides=[searchpath])
    except HydraException as exc:
        raise ValueError(f"env config {file}: its defaults list does not compose ({exc}).") from None
    # A plain copy: compose's result is in struct mode, and the readers add keys (task_id_filter).
    return typing.cast(DictConfig, OmegaConf.create(OmegaConf.to_container(cfg, resolve=False)))
