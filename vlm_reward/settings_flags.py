"""Command-line flags generated from the fields of a settings dataclass, and read back into it.

A settings class (a dataclass such as :class:`~vlm_reward.server.config.ServerConfig`) declares
each command-line flag on the field it sets, with :func:`flag`: its help text, the parser of its
value, its spelling when that is not the field's name, its metavar and choices. The field's
default is the flag's default. So a default is written once, on the field, and the value a
program runs with, its ``--help`` and the docs that render ``--help`` cannot disagree.
:func:`add_flags` puts a class's flags into an argparse parser or argument group; :func:`read`
builds the class back from the parsed namespace; :func:`flag_name` spells one flag for code that
writes the program's command line (the launchers).

How a flag takes its value follows from its field:

- a field whose default is a ``bool`` is a switch: ``--NAME`` sets a field that defaults to
  False, ``--no-NAME`` clears one that defaults to True;
- ``repeat=True`` (a list field): the flag may be given any number of times;
- ``optional_value=True``: the flag switches its whole settings class on, and its value may be
  left out: absent, :func:`read_optional` gives ``None``; given alone, the field's default;
- a field without a default is a required flag.

A field without :func:`flag` metadata is not a flag (a nested settings value, or one read from
elsewhere, such as the API keys): :func:`read` takes it as a keyword or leaves its default.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, dataclass
from typing import Any, TypeVar

T = TypeVar("T")
_KEY = "flag"


@dataclass(frozen=True)
class Flag:
    """How one field is set on the command line (the metadata :func:`flag` puts on the field)."""

    help: str  # argparse's help text; ``%(default)s`` where --help should show the default
    parse: Callable[[str], Any] | None = None  # argparse's ``type=``: text to value, or an error
    name: str | None = None  # the spelling without dashes; None: the field's name, "_" as "-"
    metavar: str | None = None
    choices: tuple[Any, ...] | None = None
    repeat: bool = False
    optional_value: bool = False


def flag(
    default: Any = MISSING,
    *,
    help: str,
    parse: Callable[[str], Any] | None = None,
    name: str | None = None,
    metavar: str | None = None,
    choices: Sequence[Any] | None = None,
    repeat: bool = False,
    optional_value: bool = False,
    default_factory: Callable[[], Any] | Any = MISSING,
) -> Any:
    """A dataclass field that is also a command-line flag (see the module docstring)."""
    spec = Flag(
        help, parse, name, metavar, None if choices is None else tuple(choices), repeat, optional_value
    )
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_KEY: spec})


def flag_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls`` that are flags, in their declared order."""
    return [f for f in dataclasses.fields(cls) if _KEY in f.metadata]


def option(f: dataclasses.Field[Any]) -> str:
    """The flag of field ``f`` as typed: ``--max-wait-ms``, ``--no-metrics``."""
    spec: Flag = f.metadata[_KEY]
    name = spec.name or f.name.replace("_", "-")
    return f"--no-{name}" if f.default is True else f"--{name}"


def flag_name(cls: type, name: str) -> str:
    """The flag of ``cls``'s field ``name`` as typed (``--video-root``): for code that writes a
    command line of the program, so the spelling is the one its parser reads."""
    return option(next(_chosen(cls, (name,))))


def dest(f: dataclasses.Field[Any]) -> str:
    """Where argparse stores the value of field ``f`` (the flag's name, as argparse derives it)."""
    return option(f).lstrip("-").replace("-", "_")


def field_default(f: dataclasses.Field[Any]) -> Any:
    """The default of field ``f`` (a fresh one from its factory), or ``MISSING``."""
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


def add_flags(parser: argparse._ActionsContainer, cls: type, names: Sequence[str] | None = None) -> None:
    """Add the flags of the fields of ``cls`` named ``names`` (all its flags when ``None``), in
    that order, to ``parser`` (a parser or one of its argument groups)."""
    for f in _chosen(cls, names):
        parser.add_argument(option(f), **_argument(f))


def read(cls: type[T], args: argparse.Namespace, **given: Any) -> T:
    """``cls`` built from the values of its flags in ``args``; ``given`` sets the fields that
    are not flags. ``TypeError``/``ValueError`` are the class's own (its validation)."""
    return cls(**{f.name: getattr(args, dest(f)) for f in flag_fields(cls)}, **given)


def read_optional(cls: type[T], args: argparse.Namespace, **given: Any) -> T | None:
    """:func:`read`, or ``None`` when the flag that switches ``cls`` on was not given."""
    switches = [f for f in flag_fields(cls) if f.metadata[_KEY].optional_value]
    if any(getattr(args, dest(f)) is None for f in switches):
        return None
    return read(cls, args, **given)


def _chosen(cls: type, names: Sequence[str] | None) -> Iterator[dataclasses.Field[Any]]:
    fields = {f.name: f for f in flag_fields(cls)}
    for name in fields if names is None else names:
        if name not in fields:
            raise ValueError(
                f"{cls.__name__} has no flag field {name!r}; its flag fields: {', '.join(fields)}."
            )
        yield fields[name]


def _argument(f: dataclasses.Field[Any]) -> dict[str, Any]:
    """``add_argument``'s keywords for field ``f``."""
    spec: Flag = f.metadata[_KEY]
    default = field_default(f)
    common = {"dest": dest(f), "help": spec.help}
    if isinstance(default, bool):
        return {**common, "action": "store_false" if default else "store_true", "default": default}
    common.update(type=spec.parse, metavar=spec.metavar, choices=spec.choices)
    if default is MISSING:
        return {**common, "required": True}
    if spec.optional_value:
        return {**common, "nargs": "?", "const": default, "default": None}
    if spec.repeat:
        return {**common, "action": "append", "default": default}
    return {**common, "default": default}
