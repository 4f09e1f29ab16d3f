"""What a pytest run collected, before anything deselected it: each test's node id and whether a
mark skips it unconditionally (``skip``, or ``skipif`` with a condition that is true).

``tests/conftest.py`` keeps this for its own run (:data:`COLLECTED`); as a plugin
(``-p tests.support.collected``) it writes the same to ``$COLLECTED_JSON`` for a run that did not
collect everything itself (``tests/test_paths.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

import pytest

COLLECTED = pytest.StashKey[dict[str, str | None]]()
OUT_ENV = "COLLECTED_JSON"


def skip_reason(item: pytest.Item) -> str | None:
    """Why a mark of ``item`` skips it whatever the machine (None: none does). A ``skipif`` with a
    string condition is evaluated by pytest at run time and not judged here."""
    for mark in item.iter_markers("skip"):
        return str(mark.kwargs.get("reason", mark.args[0] if mark.args else "skip"))
    for mark in item.iter_markers("skipif"):
        if any(condition is True for condition in mark.args):
            return str(mark.kwargs.get("reason", "skipif"))
    return None


def record(items: Iterable[pytest.Item]) -> dict[str, str | None]:
    """Node id -> :func:`skip_reason`, for every item."""
    return {item.nodeid: skip_reason(item) for item in items}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = os.environ.get(OUT_ENV)
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(record(items), out)
