"""A config block's defaults as the YAML file users include, rendered from its pydantic model.

The env YAMLs' ``reward_model`` block is written once, as the Hydra config group option
``examples/embodiment/config/reward_model/default.yaml`` that every env YAML includes; that file
is this module's rendering of :class:`vlm_reward.client.config.RewardModelConfig`, so a key, a
default or a valid value added to the model appears in it, with the field's description as its
comment and a ``Literal`` type's values listed (``one of: warn | native | stop``). A field whose
default differs in the YAML from the model's says so with ``json_schema_extra={"yaml": TEXT}``
(``episode_log_dir`` follows the training run's log dir there). ``tests/docgen`` checks the
file is the rendering; ``python -m docgen.config_yaml`` writes it again.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from docgen.config_table import type_text

REPO = Path(__file__).resolve().parents[1]
REWARD_MODEL_YAML = REPO / "examples" / "embodiment" / "config" / "reward_model" / "default.yaml"
WIDTH = 100

HEADER = """\
The reward_model block of the LIBERO env YAMLs, every key at its default. Each env YAML
includes it (defaults: [/reward_model@reward_model: default, _self_]) and sets what differs
under its own reward_model: key; overrides such as env.train.reward_model.enable=True work
as before. Rendered from vlm_reward.client.config.RewardModelConfig by
`python -m docgen.config_yaml`: change a default or a description there, not here (a test
checks this file is the rendering). The keys: docs/reference/configuration.md."""


def config_yaml(model: type[BaseModel], header: str = "") -> str:
    """``model``'s fields as commented YAML, in declaration order; nested blocks indented."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()] + [""] if header else []
    lines += _fields(model, indent="")
    return "\n".join(lines) + "\n"


def _fields(model: type[BaseModel], indent: str) -> list[str]:
    lines: list[str] = []
    for name, field in model.model_fields.items():
        if not field.description:
            raise ValueError(f"{model.__name__}.{name} has no Field(description=...) to comment it with.")
        comment = field.description + _choices(field.annotation)
        wrapped = textwrap.wrap(comment, WIDTH - len(indent) - 2, break_on_hyphens=False)
        lines += [f"{indent}# {part}" for part in wrapped]
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            lines.append(f"{indent}{name}:")
            lines += _fields(nested, indent + "  ")
        else:
            lines.append(f"{indent}{name}: {yaml_default(field)}")
    return lines


def _choices(annotation: Any) -> str:
    """`` One of: a | b | null.`` for a field whose type is (or includes) a ``Literal``."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is not typing.Literal and not any(
        typing.get_origin(arg) is typing.Literal for arg in args
    ):
        return ""
    return f" One of: {type_text(annotation).replace(chr(34), '')}."


def yaml_default(field: FieldInfo) -> str:
    """The field's default in the project's YAML spelling (``True``, ``null``, ``"text"``, ``[a, b]``)."""
    extra = field.json_schema_extra
    if isinstance(extra, dict) and "yaml" in extra:
        return str(extra["yaml"])
    value = field.default_factory() if field.default is PydanticUndefined else field.default  # type: ignore[misc]
    return yaml_value(value)


def yaml_value(value: Any) -> str:
    """One value as YAML flow text: booleans capitalised as the env YAMLs write them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no YAML spelling for a default of type {type(value).__name__}: {value!r}")


def reward_model_yaml() -> str:
    """The text of :data:`REWARD_MODEL_YAML`."""
    from vlm_reward.client.config import RewardModelConfig

    return config_yaml(RewardModelConfig, HEADER)


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check``, compare) the ``reward_model`` config group's default file."""
    parser = argparse.ArgumentParser(prog="python -m docgen.config_yaml", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not the rendering")
    args = parser.parse_args(argv)
    text = reward_model_yaml()
    if args.check:
        same = REWARD_MODEL_YAML.is_file() and REWARD_MODEL_YAML.read_text(encoding="utf-8") == text
        print(f"{REWARD_MODEL_YAML}: {'up to date' if same else 'stale: run python -m docgen.config_yaml'}")
        return 0 if same else 1
    REWARD_MODEL_YAML.parent.mkdir(parents=True, exist_ok=True)
    REWARD_MODEL_YAML.write_text(text, encoding="utf-8")
    print(f"wrote {REWARD_MODEL_YAML}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
