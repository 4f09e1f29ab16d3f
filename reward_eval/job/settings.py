"""``settings.json``: what produced a run dir, typed, written and read here only.

Every evaluation command that writes a run dir (``run``, ``rescore``, ``report``) records
one :class:`RunSettings`: which command, which judge (backend, model, whether it is the tiny
random checkpoint, the endpoint), the ``reward_model`` block its calls used with the source of
each key and the env YAML it read (:class:`..judge_config.JudgeSettings`) and, as ``details``,
its options and what it resolved from them (reset state ids, ...). The typed fields are what
later commands read back (a re-judging command asks what the run's calls asked and reads its
env YAML; ``audit`` finds the suite through ``env_config``; ``rescore`` keeps the "random
scores" warning); ``details`` are shown as they are in the report's provenance table. On disk it is
one flat JSON object, as before, so older run dirs read unchanged; a run dir without the file
reads as :data:`UNKNOWN`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

SETTINGS_FILE = "settings.json"
# settings.json's "model" when the calls went to a given --endpoint: its model is the server's.
ENDPOINT_MODEL = "the server's (--endpoint)"


@dataclass(frozen=True)
class RunSettings:
    """What produced a run dir; ``details`` hold everything else, flat, as written."""

    command: str | None = None
    backend: str | None = None
    model: str | None = None
    random_model: bool = False
    endpoint: str | list[str] | None = None  # a list: the replicas of --replicas
    env_config: str | None = None
    env_config_source: str | None = None  # why that YAML: option, source_run or default
    # The reward_model block the run's calls used, and the source of each key (option,
    # source_run, env_yaml, job: reward_eval.job.reward_block); None in run dirs made before them.
    reward_model: Mapping[str, Any] | None = None
    reward_model_sources: Mapping[str, str] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_options(
        cls,
        command: str,
        options: Mapping[str, Any],
        *,
        skip: Sequence[str] = (),
        **resolved: Any,
    ) -> RunSettings:
        """The settings of ``command`` run with parsed ``options`` (minus ``skip``: objects the
        parser derived), and the judge and values it ``resolved`` from them, which win."""
        flat = {**_plain(options, skip), **resolved, "command": command}
        return cls.from_json(flat)

    @classmethod
    def from_json(cls, flat: Mapping[str, Any]) -> RunSettings:
        """Settings from settings.json's object: known keys typed, the rest kept in ``details``."""
        known = {f.name for f in fields(cls)} - {"details"}
        typed = {k: flat[k] for k in known if k in flat}
        typed["random_model"] = bool(typed.get("random_model", False))
        return cls(**typed, details={k: v for k, v in flat.items() if k not in known})

    @classmethod
    def read(cls, run_dir: Path) -> RunSettings:
        """The settings of ``run_dir``; :data:`UNKNOWN` when it has none (a hand-made run dir)."""
        path = Path(run_dir) / SETTINGS_FILE
        if not path.is_file():
            return UNKNOWN
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    def to_json(self) -> dict[str, Any]:
        """The flat object written to settings.json (and listed in the report's provenance)."""
        judge = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"}
        return {"command": self.command, **self.details, **{k: v for k, v in judge.items() if k != "command"}}

    def write(self, run_dir: Path) -> Path:
        """Write ``run_dir/settings.json`` and return its path."""
        path = Path(run_dir) / SETTINGS_FILE
        text = json.dumps(self.to_json(), indent=2, default=str, allow_nan=False)
        path.write_text(text + "\n", encoding="utf-8")
        return path

    def derived(self, command: str, **details: Any) -> RunSettings:
        """The settings of a run dir made from this one without a judge call (``report``): the
        same judge, another command, ``details`` added."""
        return replace(self, command=command, details={**self.details, **details})

    def serves(self, model: str | None) -> bool:
        """Whether ``model`` is the checkpoint these settings name (symlinks resolved)."""
        if model is None or not isinstance(self.model, str):
            return False
        return os.path.realpath(self.model) == os.path.realpath(model)


UNKNOWN = RunSettings()


def _plain(options: Mapping[str, Any], skip: Sequence[str]) -> dict[str, Any]:
    """Parsed CLI options as JSON-friendly values (paths as strings), without ``skip``."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items() if k not in skip}
