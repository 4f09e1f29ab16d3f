"""vlm_reward.settings_flags: a dataclass's fields become flags, and the parsed flags become it again."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

import pytest

from vlm_reward.argtypes import positive_int
from vlm_reward.settings_flags import (
    add_flags,
    dest,
    flag,
    flag_fields,
    flag_name,
    option,
    read,
    read_optional,
)


@dataclass(frozen=True)
class Toy:
    name: str = flag(help="required: no default")
    count: int = flag(3, parse=positive_int, help="how many (default: %(default)s)")
    color: str = flag("red", choices=("red", "blue"), help="a colour")
    loud: bool = flag(True, help="a switch that is on by default")
    quiet: bool = flag(False, help="a switch that is off by default")
    tags: list[str] = flag(default_factory=list, name="tag", repeat=True, metavar="TAG", help="repeatable")
    wait_s: float = flag(1.5, name="wait", parse=float, help="a spelling other than the field's")
    note: str = "not a flag"


@dataclass(frozen=True)
class Check:
    directory: str = flag(
        "/default", name="check", optional_value=True, metavar="DIR", help="on, with a value"
    )
    level: float = flag(0.5, name="check-level", parse=float, help="used only when on")


class _Raising(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Raising()
    add_flags(parser, Toy)
    add_flags(parser.add_argument_group("optional"), Check)
    return parser


def test_each_flag_field_is_spelled_from_its_field_and_its_default() -> None:
    assert [option(f) for f in flag_fields(Toy)] == [
        "--name",
        "--count",
        "--color",
        "--no-loud",
        "--quiet",
        "--tag",
        "--wait",
    ]
    assert [dest(f) for f in flag_fields(Check)] == ["check", "check_level"]


@pytest.mark.parametrize(
    ("field", "spelled"),
    [("count", "--count"), ("tags", "--tag"), ("wait_s", "--wait"), ("loud", "--no-loud")],
    ids=["name", "repeat", "other-spelling", "switch-on"],
)
def test_flag_name_spells_one_field_s_flag_as_the_parser_reads_it(field: str, spelled: str) -> None:
    assert flag_name(Toy, field) == spelled
    with pytest.raises(ValueError, match="Toy has no flag field 'note'"):
        flag_name(Toy, "note")


PARSES = [
    ("defaults", [], Toy(name="n")),
    (
        "values",
        ["--count", "7", "--color", "blue", "--wait", "2"],
        Toy(name="n", count=7, color="blue", wait_s=2.0),
    ),
    ("switches", ["--no-loud", "--quiet"], Toy(name="n", loud=False, quiet=True)),
    ("repeated", ["--tag", "a", "--tag", "b"], Toy(name="n", tags=["a", "b"])),
]


@pytest.mark.parametrize(("argv", "expected"), [p[1:] for p in PARSES], ids=[p[0] for p in PARSES])
def test_read_builds_the_class_from_the_parsed_flags(argv: list[str], expected: Toy) -> None:
    args = _parser().parse_args(["--name", "n", *argv])
    assert read(Toy, args) == expected
    assert read(Toy, args, note="given").note == "given"  # a field that is not a flag comes as a keyword


def test_defaults_from_a_factory_are_fresh_for_every_parser() -> None:
    first = _parser().parse_args(["--name", "n", "--tag", "x"])
    second = _parser().parse_args(["--name", "n"])
    assert first.tag == ["x"] and second.tag == []


BAD = [
    ("required-missing", [], "the following arguments are required: --name"),
    ("parser-refuses", ["--name", "n", "--count", "0"], "must be at least 1"),
    ("not-a-choice", ["--name", "n", "--color", "green"], "invalid choice"),
]


@pytest.mark.parametrize(("argv", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_the_field_metadata_checks_the_value(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _parser().parse_args(argv)


OPTIONAL = [
    ("absent", [], None),
    ("alone", ["--check"], Check()),
    ("with-value", ["--check", "/d", "--check-level", "0.9"], Check(directory="/d", level=0.9)),
]


@pytest.mark.parametrize(("argv", "expected"), [o[1:] for o in OPTIONAL], ids=[o[0] for o in OPTIONAL])
def test_an_optional_value_flag_switches_its_class_on(argv: list[str], expected: Check | None) -> None:
    assert read_optional(Check, _parser().parse_args(["--name", "n", *argv])) == expected


def test_an_unknown_field_name_is_an_error_naming_the_flag_fields() -> None:
    with pytest.raises(ValueError, match="Toy has no flag field 'note'; its flag fields: name, count"):
        add_flags(argparse.ArgumentParser(), Toy, ("note",))


def test_a_field_without_flag_metadata_is_not_a_flag() -> None:
    assert "note" not in {f.name for f in flag_fields(Toy)}
    assert {f.name for f in dataclasses.fields(Toy)} - {f.name for f in flag_fields(Toy)} == {"note"}
