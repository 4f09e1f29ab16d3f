"""docgen.config_yaml: the reward_model config group's file is the rendering of its pydantic model."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from omegaconf import OmegaConf
from pydantic import BaseModel, Field

from docgen.config_yaml import (
    REPO,
    REWARD_MODEL_YAML,
    config_yaml,
    main,
    reward_model_yaml,
    yaml_default,
    yaml_value,
)
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.protocol import SCORE_MODES


def test_the_shipped_file_is_the_rendering_of_the_model() -> None:
    assert REWARD_MODEL_YAML.read_text(encoding="utf-8") == reward_model_yaml(), (
        "stale: run python -m docgen.config_yaml"
    )
    assert main(["--check"]) == 0


def test_the_file_loads_as_every_default_of_the_block() -> None:
    block = OmegaConf.load(REWARD_MODEL_YAML)
    assert RewardModelConfig.from_mapping(block) == RewardModelConfig()
    assert OmegaConf.to_container(block)["episode_log_dir"] == "${oc.select:runner.logger.log_path,null}"


def test_a_literal_s_values_are_listed_in_its_comment() -> None:
    text = reward_model_yaml()
    comment = text.split("\nscore_mode:")[0].rsplit("\n# How", 1)[1].replace("\n# ", " ")
    assert all(mode in comment for mode in SCORE_MODES), comment


class Nested(BaseModel):
    on: bool = Field(False, description="Turn it on.")


class Block(BaseModel):
    mode: Literal["a", "b"] = Field("a", description="Which one.")
    names: list[str] = Field(default_factory=lambda: ["x"], description="Names.")
    inner: Nested = Field(default_factory=Nested, description="The nested block.")
    path: str | None = Field(None, description="Where.", json_schema_extra={"yaml": "${oc.env:HOME}"})


def test_a_model_renders_with_comments_nesting_and_yaml_overrides() -> None:
    assert config_yaml(Block, "Head.") == "\n".join(
        [
            "# Head.",
            "",
            "# Which one. One of: a | b.",
            'mode: "a"',
            "# Names.",
            'names: ["x"]',
            "# The nested block.",
            "inner:",
            "  # Turn it on.",
            "  on: False",
            "# Where.",
            "path: ${oc.env:HOME}",
            "",
        ]
    )


def test_a_field_without_a_description_is_refused() -> None:
    class Bare(BaseModel):
        x: int = 1

    with pytest.raises(ValueError, match=r"Bare\.x has no Field"):
        config_yaml(Bare)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "True"),
        (3, "3"),
        (0.5, "0.5"),
        ("a b", '"a b"'),
        ([], "[]"),
        ({"k": 1}, "{k: 1}"),
    ],
    ids=["null", "bool", "int", "float", "str", "list", "dict"],
)
def test_yaml_value(value: Any, text: str) -> None:
    assert yaml_value(value) == text


def test_a_value_without_a_yaml_spelling_is_refused() -> None:
    with pytest.raises(TypeError, match="no YAML spelling"):
        yaml_value(object())


# The pages that show the block turned on: every other key they print is its default.
EXCERPT_PAGES = ("README.md", "docs/env/index.md")


@pytest.mark.parametrize("page", EXCERPT_PAGES, ids=EXCERPT_PAGES)
def test_a_page_s_excerpt_of_the_block_prints_the_defaults(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    excerpt = text.split("```yaml\nreward_model:\n", 1)[1].split("```", 1)[0]
    shown = dict(line.split("#")[0].strip().split(": ", 1) for line in excerpt.splitlines())
    assert shown.pop("enable") == "True"
    fields = RewardModelConfig.model_fields
    assert shown and {key: yaml_default(fields[key]) for key in shown} == shown
