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


STRICT = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class ConfigBlock(BaseModel):
    """Base of a typed config block: strict, frozen, no unknown keys, readable errors. A field
    typed as another (strict) model is a nested block: its errors name ``<block>.<field>.<key>``."""

    model_config = STRICT

    block_name: ClassVar[str] = "config"  # how errors name the block: ``<block_name>.<key>``

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise readable_error(exc, values, self.block_name, type(self)) from None

    @classmethod
    def from_mapping(cls: type[Block], block: Mapping[str, Any] | None) -> Block:
        """Build from the YAML block (a dict or an OmegaConf node); ``None``: every default."""
        return cls() if block is None else cls(**to_plain_dict(block))

    def replace(self: Block, **changes: Any) -> Block:
        """A copy with ``changes`` applied, validated like the YAML block."""
        return type(self)(**{**self.model_dump(), **changes})


def readable_error(
    exc: ValidationError, values: Mapping[str, Any], block: str, model: type[BaseModel]
) -> TypeError | ValueError:
    """One sentence per bad key of ``block`` (``model``'s fields); ``TypeError`` if the first
    problem is a wrong type."""
    errors = exc.errors()
    problems: dict[tuple[str, ...], list[str]] = {}  # key path -> messages (a union gives one per member)
    sentences = []
    for err in errors:
        path, owner = _key_path(err["loc"], model)
        if err["type"] == "extra_forbidden":
            valid = ", ".join(owner.model_fields)
            sentences.append(f"unknown key {'.'.join((block, *path))}; valid keys: {valid}.")
            continue
        message = err["msg"].removeprefix("Value error, ")
        problems.setdefault(path, []).append(f"{message[0].lower()}{message[1:]}")
    for path, messages in problems.items():
        got = f", got {_lookup(values, path)!r}" if path else ""  # a check of the whole block has no key
        sentences.append(f"{'.'.join((block, *path))}: {' or '.join(messages)}{got}.")
    first = errors[0]["type"]
    kind = TypeError if any(marker in first for marker in _TYPE_ERRORS) else ValueError
    return kind(" ".join(sentences))


def _key_path(loc: tuple[Any, ...], model: type[BaseModel]) -> tuple[tuple[str, ...], type[BaseModel]]:
    """The YAML keys of an error's location and the model that owns the last one: a key inside a
    nested block, else the top-level key alone (a union's location goes on with the member's
    type, not a key)."""
    if not loc:
        return (), model
    field = model.model_fields.get(str(loc[0]))
    nested = field.annotation if field is not None else None
    if len(loc) > 1 and isinstance(nested, type) and issubclass(nested, BaseModel):
        return (str(loc[0]), str(loc[1])), nested
    return (str(loc[0]),), model


def _lookup(values: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(values, Mapping):
            return None
        values = values.get(part)
    return values


def to_plain_dict(block: Mapping[str, Any]) -> dict[str, Any]:
    """``block`` as a plain dict (an OmegaConf node resolved)."""
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # the config is a plain dict when omegaconf is absent
        return dict(block)
    if isinstance(block, DictConfig):
        return OmegaConf.to_container(block, resolve=True)
    return dict(block)
