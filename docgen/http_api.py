"""The HTTP reference, from the server's own OpenAPI schema and the protocol's error table.

:func:`server_schema` asks :func:`vlm_reward.server.app.create_app` for its schema (an app is
built, nothing is loaded or served); :func:`http_reference` writes it as routes, their
responses, the request and response models field by field, and every error type with its
status and when it is sent (:func:`error_whens` reads that column from the table in
:mod:`vlm_reward.errors`' docstring, the one place it is written).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from docgen.markdown import code, from_rst, table

_METHOD_ORDER = ("get", "post", "put", "delete")
_ROW = re.compile(r"^(\d{3})\s+(\w+)\s+(.*)$")


def http_reference(
    schema: Mapping[str, Any],
    error_status: Mapping[str, int],
    whens: Mapping[str, tuple[int, str]],
    retryable: Collection[int],
) -> str:
    """Markdown for ``schema`` (OpenAPI 3): routes, models, then every error type.

    ``error_status`` maps each error type to its status (``vlm_reward.protocol.ERROR_STATUS``),
    ``whens`` to when it is sent (:func:`error_whens`); ``retryable`` are the statuses a client
    may retry elsewhere or later.
    """
    parts = ["## Routes"]
    for path, operations in schema["paths"].items():
        for method in sorted(operations, key=_METHOD_ORDER.index):
            parts.append(_operation(method, path, operations[method]))
    parts.append("## Models")
    for name, model in schema["components"]["schemas"].items():
        if name in ("HTTPValidationError", "ValidationError"):  # FastAPI's, never sent by this server
            continue
        parts.append(_model(name, model))
    parts += ["## Error types", error_table(error_status, whens, retryable)]
    return "\n\n".join(parts) + "\n"


def error_table(
    error_status: Mapping[str, int], whens: Mapping[str, tuple[int, str]], retryable: Collection[int]
) -> str:
    """Every error type: status, whether a client retries it, when it is sent.

    ``ValueError`` when the two tables disagree (a type, or its status, only in one of them).
    """
    documented = {kind: status for kind, (status, _) in whens.items()}
    if documented != dict(error_status):
        drift = sorted(set(documented.items()) ^ set(error_status.items()))
        raise ValueError(f"vlm_reward.errors' table and ERROR_STATUS differ in (type, status): {drift}.")
    rows = []
    for kind, status in error_status.items():
        rows.append((status, code(kind), "yes" if status in retryable else "no", from_rst(whens[kind][1])))
    return table(("status", "type", "retry", "when"), rows)


def error_whens(doc: str) -> dict[str, tuple[int, str]]:
    """Error type -> (status, when), read from the RST table of :mod:`vlm_reward.errors`' docstring."""
    rows: dict[str, tuple[int, str]] = {}
    last = None
    for line in doc.splitlines():
        if match := _ROW.match(line):
            last = match.group(2)
            rows[last] = (int(match.group(1)), match.group(3).strip())
        elif last is not None and line.startswith(" " * 8) and not line.strip().startswith("="):
            status, text = rows[last]
            rows[last] = (status, f"{text} {line.strip()}")
        elif line.strip().startswith("=") and rows:
            last = None  # the table's closing rule
    return rows


def server_schema() -> dict[str, Any]:
    """The OpenAPI schema of a reward server with API keys (so the 401s are listed), built offline."""
    from vlm_reward.server.app import create_app
    from vlm_reward.server.auth import ApiKeys
    from vlm_reward.server.config import ServerConfig

    config = ServerConfig(
        backend="openai_compatible",  # constructed without a checkpoint or a connection
        model="judge",
        backend_kwargs={"base_url": "http://127.0.0.1:8000/v1"},
        api_keys=ApiKeys(["documentation"]),
    )
    return create_app(config).openapi()


def _operation(method: str, path: str, op: Mapping[str, Any]) -> str:
    lines = [f"### {code(f'{method.upper()} {path}')}", "", from_rst(op.get("description", op["summary"]))]
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        lines += ["", f"Request body: {_type(body)} (JSON)."]
    rows = []
    for status, response in op["responses"].items():
        content = response.get("content", {})
        shape = next(
            (_type(c["schema"]) for c in content.values() if "schema" in c), ", ".join(content) or "-"
        )
        rows.append((status, shape, _described(response["description"])))
    lines += ["", table(("status", "body", "meaning"), rows)]
    return "\n".join(lines)


def _model(name: str, model: Mapping[str, Any]) -> str:
    required = set(model.get("required", ()))
    rows = []
    for field, spec in model.get("properties", {}).items():
        default = (
            "required" if field in required else code(_json(spec["default"])) if "default" in spec else "-"
        )
        rows.append((code(field), _type(spec), default, _constraints(spec), spec.get("description", "")))
    lines = [f"### {name}", "", from_rst(model.get("description", ""))]
    if model.get("additionalProperties") is False:
        lines += ["", "Unknown fields are refused (422 `validation_error`)."]
    lines += ["", table(("field", "type", "default", "bounds", "description"), rows)]
    return "\n".join(lines)


def _type(spec: Mapping[str, Any]) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in spec:
        return " | ".join(_type(option) for option in spec["anyOf"])
    if "enum" in spec:
        return " | ".join(code(_json(value)) for value in spec["enum"])
    if "const" in spec:
        return code(_json(spec["const"]))
    kind = spec.get("type", "any")
    if kind == "array":
        return f"array of {_type(spec.get('items', {}))}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), Mapping):
        return f"object of {_type(spec['additionalProperties'])}"
    return kind


def _constraints(spec: Mapping[str, Any]) -> str:
    found = [spec, *spec.get("anyOf", ())]
    words = {
        "minimum": ">= {}",
        "exclusiveMinimum": "> {}",
        "maximum": "<= {}",
        "exclusiveMaximum": "< {}",
        "minLength": "length >= {}",
        "maxLength": "length <= {}",
    }
    bounds = [pattern.format(_json(s[key])) for s in found for key, pattern in words.items() if key in s]
    return ", ".join(bounds) or "-"


def _described(description: str) -> str:
    """A response's description; the error types of an error response as code."""
    if re.fullmatch(r"[a-z_]+(, [a-z_]+)*", description):
        return ", ".join(code(kind) for kind in description.split(", "))
    return description


def _json(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
