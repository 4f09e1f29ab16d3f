"""docgen.exit_statuses: the exit-status page is rendered from the registries the commands exit with."""

from __future__ import annotations

from docgen import hooks
from docgen.commands import REPO
from docgen.exit_statuses import exit_status_reference
from vlm_reward.exit_statuses import CommandExits, ExitStatus

OK = ExitStatus(0, "done")
ENTRIES = (
    CommandExits("tool", (OK, ExitStatus(3, "a | b")), note="Also `other`."),
    CommandExits("runner", (OK,), mode="train"),
    CommandExits("runner", (ExitStatus(1, "failed"), ExitStatus("pytest's", "passed on")), mode="`--check`"),
)


def test_each_command_is_a_section_with_its_notes_and_one_table_of_its_modes() -> None:
    assert exit_status_reference(ENTRIES, level=3).split("\n\n") == [
        "### `tool`",
        "Also `other`.",
        "| status | meaning |\n| --- | --- |\n| 0 | done |\n| 3 | a \\| b |",
        "### `runner`",
        "| mode | status | meaning |\n| --- | --- | --- |\n| train | 0 | done |\n"
        "| `--check` | 1 | failed |\n| `--check` | pytest's | passed on |",
    ]


def test_rendering_is_pure() -> None:
    entries = list(ENTRIES)
    assert exit_status_reference(entries) == exit_status_reference(entries)
    assert entries == list(ENTRIES)


def test_the_page_renders_the_registries() -> None:
    page = (REPO / "docs" / "reference" / "exit-statuses.md").read_text()
    assert "<!-- docgen: exit-statuses -->" in page.splitlines()
    rendered = hooks.render("exit-statuses")
    for heading in ("## `reward-eval finetune`", "## `examples/embodiment/scripts/run_embodiment.sh`"):
        assert heading in rendered
    assert "| `--cpu-smoke` | 4 | the reward guard" in rendered  # the guard's stop, missing before
    assert "| training | 2 | a `reward_server` block that is wrong" in rendered
