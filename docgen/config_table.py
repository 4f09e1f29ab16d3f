"""A pydantic model (or a dataclass with its descriptions) as a configuration table.

Rendered from the model itself (``RewardModelConfig`` for the ``reward_model`` block), so a key
added there with ``Field(description=...)`` appears in the docs on the next build. Types are
written as the YAML user sees them (``null``, ``True``), with their range (``float > 0``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from docgen.markdown import code, table

_BOUNDS = {Gt: (">", "gt"), Ge: (">=", "ge"), Lt: ("<", "lt"), Le: ("<=", "le")}


def config_table(model: type[BaseModel], prefix: str = "") -> str:
    """One row per field of ``model``, in declaration order; ``prefix`` is prepended to each key."""
    rows = []
    for name, field in model.model_fields.items():
        if not field.description:
            raise ValueError(f"{model.__name__}.{name} has no Field(description=...) to document it by.")
        kind = type_text(field.annotation, field.metadata)
        rows.append((code(prefix + name), code(kind), code(default_text(field)), field.description))
    return table(("key", "type", "default", "description"), rows)


def type_text(annotation: Any, constraints: Sequence[Any] = ()) -> str:
    """``annotation`` as the YAML user reads it: ``float > 0``, ``str | list[str] | null``, ``"a" | "b"``.

    ``constraints`` are pydantic's field metadata (``Gt(gt=0)``); an ``Annotated`` type carries its own.
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0], [*constraints, *_constraints(args[1:])])
    if constraints:
        return f"{type_text(annotation)} {bounds_text(constraints)}".rstrip()
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(arg) for arg in args)
    if origin is typing.Literal:
        return " | ".join(f'"{arg}"' for arg in args)
    if annotation is type(None):
        return "null"
    if origin is not None:
        inner = ", ".join("any" if arg is Any else type_text(arg) for arg in args)
        return f"{origin.__name__}[{inner}]"
    return getattr(annotation, "__name__", str(annotation))


def bounds_text(constraints: Sequence[Any]) -> str:
    """A range as the user reads it: ``> 0``, ``>= 0``, ``in [0, 1]``; empty without bounds."""
    low = [(symbol, value) for symbol, value in _bounds(constraints) if symbol.startswith(">")]
    high = [(symbol, value) for symbol, value in _bounds(constraints) if symbol.startswith("<")]
    if low and high:
        (low_symbol, low_value), (high_symbol, high_value) = low[0], high[0]
        opening, closing = "[" if low_symbol == ">=" else "(", "]" if high_symbol == "<=" else ")"
        return f"in {opening}{low_value}, {high_value}{closing}"
    return " ".join(f"{symbol} {value}" for symbol, value in low + high)


def default_text(field: FieldInfo) -> str:
    """The field's default as the YAML would write it (``null``, ``True``, ``{}``, ``120.0``)."""
    value = field.default_factory() if field.default is PydanticUndefined else field.default  # type: ignore[misc]
    return "null" if value is None else str(value)


def _bounds(constraints: Sequence[Any]) -> list[tuple[str, str]]:
    return [
        (symbol, f"{getattr(item, attr):g}")
        for item in constraints
        for kind, (symbol, attr) in _BOUNDS.items()
        if isinstance(item, kind)
    ]


def _constraints(metadata: Sequence[Any]) -> list[Any]:
    found = []
    for item in metadata:  # an Annotated[..., Field(ge=0)] nests its bounds in a FieldInfo
        found += item.metadata if isinstance(item, FieldInfo) else [item]
    return found


def dataclass_table(config: type, descriptions: Mapping[str, str], prefix: str = "") -> str:
    """One row per field of the dataclass ``config``: key, default, description (from ``descriptions``).

    ``ValueError`` for a field without a description or a description without a field, so the
    table and the class cannot drift apart."""
    names = [f.name for f in dataclasses.fields(config)]
    if set(names) != set(descriptions):
        raise ValueError(
            f"{config.__name__}: fields {sorted(names)} but descriptions of {sorted(descriptions)}."
        )
    defaults = config()
    rows = [
        (code(prefix + name), code(_yaml_value(getattr(defaults, name))), descriptions[name])
        for name in names
    ]
    return table(("key", "default", "description"), rows)


def _yaml_value(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
