"""The episode log's keys, from the one definition of a line: the fields of
:class:`~vlm_reward.client.episode_record.EpisodeRecord`, their types and the docstring under each.

A field's docstring is the string literal right after its declaration (the attribute docstring
convention MkDocs' Python handler also reads). A key without one fails the build, so a key added
to the line is documented where it is declared.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from collections.abc import Collection, Sequence

from docgen.markdown import code, from_rst, table


def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring under each annotated attribute of ``cls``, by attribute name."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for declared, after in itertools.pairwise(body):
        if (
            isinstance(declared, ast.AnnAssign)
            and isinstance(declared.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[declared.target.id] = inspect.cleandoc(after.value.value)
    return docs


def episode_log_keys(cls: type, keys: Sequence[str], required: Collection[str]) -> str:
    """A table of ``keys`` (in the order a line writes them): type, whether a reader requires it,
    meaning. ``ValueError`` for a key that is not a field of ``cls`` or has no docstring."""
    docs = attribute_docs(cls)
    types = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    undocumented = [key for key in keys if key not in types or key not in docs]
    if undocumented:
        raise ValueError(f"{cls.__name__}: no field with a docstring for the keys {undocumented}.")
    rows = [
        (
            code(key),
            code(types[key].removesuffix(" | None")),
            "yes" if key in required else "",
            from_rst(docs[key]),
        )
        for key in keys
    ]
    return table(("key", "type", "required", "meaning"), rows)
