"""docgen.config_table: the reward_model table, rendered from the pydantic model itself."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal

import pytest
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, Field

from docgen.config_table import bounds_text, config_table, type_text
from vlm_reward.client.config import RewardModelConfig


@pytest.mark.parametrize(
    ("annotation", "constraints", "expected"),
    [
        (bool, (), "bool"),
        (str | list[str], (), "str | list[str]"),
        (str | None, (), "str | null"),
        (dict[str, Any], (), "dict[str, any]"),
        (float, (Gt(0),), "float > 0"),
        (int, (Ge(0),), "int >= 0"),
        (float, (Ge(0.0), Le(1.0)), "float in [0, 1]"),
        (float, (Gt(0), Lt(2.5)), "float in (0, 2.5)"),
        (typing.Optional[Annotated[float, Field(ge=0, le=1)]], (), "float in [0, 1] | null"),  # noqa: UP045
        (Literal["a", "b"] | None, (), '"a" | "b" | null'),
    ],
    ids=["bool", "union", "optional", "dict", "gt", "ge", "closed", "open", "nested-annotated", "literal"],
)
def test_type_text(annotation: Any, constraints: tuple[Any, ...], expected: str) -> None:
    assert type_text(annotation, constraints) == expected


def test_bounds_text_without_bounds_is_empty() -> None:
    assert bounds_text([]) == ""


def test_every_key_of_the_block_is_a_row_with_its_default() -> None:
    rows = config_table(RewardModelConfig).splitlines()[2:]
    assert [row.split(" | ")[0].strip("| `") for row in rows] == list(RewardModelConfig.model_fields)
    defaults = RewardModelConfig()
    row = {r.split(" | ")[0].strip("| `"): r for r in rows}
    assert f"`{defaults.timeout}`" in row["timeout"] and "`float > 0`" in row["timeout"]
    assert "`null`" in row["fallback_score"] and "`float in [0, 1] | null`" in row["fallback_score"]
    assert f"`{defaults.endpoint}`" in row["endpoint"]


def test_a_key_without_a_description_fails_the_build() -> None:
    class Undocumented(BaseModel):
        documented: int = Field(1, description="one")
        bare: int = 2

    with pytest.raises(ValueError, match=r"Undocumented.bare has no Field\(description=...\)"):
        config_table(Undocumented)


def test_the_simulation_block_is_a_row_per_key_with_its_default() -> None:
    from docgen.config_table import dataclass_table
    from rlinf.envs.libero.simulation import KEYS, SimulationConfig

    rows = dataclass_table(SimulationConfig, KEYS, prefix="simulation.").splitlines()[2:]
    assert [row.split(" | ")[0].strip("| `") for row in rows] == [f"simulation.{key}" for key in KEYS]
    assert "| `simulation.cameras` | `true` |" in rows[0] and "`null`" in rows[-1]
    with pytest.raises(ValueError, match=r"fields .* but descriptions of"):
        dataclass_table(SimulationConfig, {"cameras": "only one"})
