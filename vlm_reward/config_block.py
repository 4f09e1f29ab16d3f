"""A YAML block as a typed, frozen model whose errors name ``<block>.<key>`` in one sentence.

The project's config blocks (``reward_model`` in the env YAML, ``reward_server`` in the training
config) share one rule: a misspelled or unknown key, a value of the wrong type or out of range
is an error at construction that names the key and the value (and, for an unknown key, the
valid ones), so a typo never falls back to a default. :class:`ConfigBlock` is that rule once;
a block subclasses it and sets :attr:`ConfigBlock.block_name`. Ints are accepted where floats
are expected; nothing else is coerced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

# Pydantic's error types that mean "wrong type" (TypeError) rather than "bad value" (ValueError).
_TYPE_ERRORS = ("_type", "is_instance_of")

Block = TypeVar("Block", bound="ConfigBlock")


class ConfigBlock(BaseModel):
    """Base of a typed config block: strict, frozen, no unknown keys, readable errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    block_name: ClassVar[str] = "config"  # how errors name the block: ``<block_name>.<key>``

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise readable_error(exc, values, self.block_name, list(type(self).model_fields)) from None

    @classmethod
    def from_mapping(cls: type[Block], block: Mapping[str, Any] | None) -> Block:
        """Build from the YAML block (a dict or an OmegaConf node); ``None``: every default."""
        return cls() if block is None else cls(**to_plain_dict(block))

    def replace(self: Block, **changes: Any) -> Block:
        """A copy with ``changes`` applied, validated like the YAML block."""
        return type(self)(**{**self.model_dump(), **changes})


def readable_error(
    exc: ValidationError, values: Mapping[str, Any], block: str, fields: list[str]
) -> TypeError | ValueError:
    """One sentence per bad key of ``block``; ``TypeError`` if the first problem is a wrong type."""
    errors = exc.errors()
    problems: dict[str, list[str]] = {}  # key -> messages (a union type gives one per member)
    sentences = []
    for err in errors:
        key = ".".join(str(part) for part in err["loc"][:1])
        if err["type"] == "extra_forbidden":
            sentences.append(f"unknown key {block}.{key}; valid keys: {', '.join(fields)}.")
            continue
        message = err["msg"].removeprefix("Value error, ")
        problems.setdefault(key, []).append(f"{message[0].lower()}{message[1:]}")
    for key, messages in problems.items():
        where = f"{block}.{key}" if key else block  # a check of the whole block has no key
        got = f", got {values.get(key)!r}" if key else ""
        sentences.append(f"{where}: {' or '.join(messages)}{got}.")
    first = errors[0]["type"]
    kind = TypeError if any(marker in first for marker in _TYPE_ERRORS) else ValueError
    return kind(" ".join(sentences))


def to_plain_dict(block: Mapping[str, Any]) -> dict[str, Any]:
    """``block`` as a plain dict (an OmegaConf node resolved)."""
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # the config is a plain dict when omegaconf is absent
        return dict(block)
    if isinstance(block, DictConfig):
        return OmegaConf.to_container(block, resolve=True)
    return dict(block)
