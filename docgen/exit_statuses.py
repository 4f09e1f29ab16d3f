"""The exit-status reference, from the registries (:mod:`vlm_reward.exit_statuses` and
:mod:`reward_eval.exit_statuses`) that the commands exit with.

Per command: a heading, its notes, and one table of its statuses and their meanings, with a
mode column where the command has modes (``run_embodiment.sh``). Pure: text from values.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from docgen.markdown import code, table
from vlm_reward.exit_statuses import CommandExits


def exit_status_reference(entries: Iterable[CommandExits], level: int = 2) -> str:
    """A section per command (consecutive entries of one command, one per mode, share it)."""
    return "\n\n".join(
        _section(command, list(group), level)
        for command, group in itertools.groupby(entries, key=lambda entry: entry.command)
    )


def _section(command: str, entries: list[CommandExits], level: int) -> str:
    with_mode = any(entry.mode for entry in entries)
    header = ("mode", "status", "meaning") if with_mode else ("status", "meaning")
    rows = [
        ((entry.mode or "all",) if with_mode else ()) + (status.code, status.meaning)
        for entry in entries
        for status in entry.statuses
    ]
    notes = [entry.note for entry in entries if entry.note]
    return "\n\n".join([f"{'#' * level} {code(command)}", *notes, table(header, rows)])
