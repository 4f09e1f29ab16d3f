"""A griffe extension for mkdocstrings: the project's docstrings are RST-flavoured, the site is Markdown.

Sphinx roles (``:class:`~pkg.Name```) and double-backtick literals would show as raw text;
:class:`RstRoles` rewrites every loaded docstring with :func:`docgen.markdown.from_rst`.
"""

from __future__ import annotations

from typing import Any

import griffe

from docgen.markdown import from_rst


class RstRoles(griffe.Extension):
    """Rewrite each object's docstring from RST roles and literals to Markdown code spans."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Called by griffe once per loaded object (module, class, function, attribute)."""
        if obj.docstring is not None:
            obj.docstring.value = from_rst(obj.docstring.value)
