"""docgen.http_api: the HTTP reference from the server's own OpenAPI schema and error table."""

from __future__ import annotations

import pytest

from docgen.http_api import error_table, error_whens, http_reference, server_schema
from vlm_reward import errors
from vlm_reward.protocol import ERROR_STATUS, RETRYABLE_STATUSES, ScoreRequest, ScoreResponse


@pytest.fixture(scope="module")
def schema() -> dict:
    return server_schema()


def test_the_errors_table_documents_every_type_with_the_protocols_status() -> None:
    whens = error_whens(errors.__doc__ or "")
    assert {kind: status for kind, (status, _) in whens.items()} == ERROR_STATUS
    assert whens["parse_error"][1].endswith("502 because the upstream model, not the client, was wrong")


@pytest.mark.parametrize(
    ("whens", "message"),
    [
        ({**{k: (s, "w") for k, s in ERROR_STATUS.items()}, "made_up": (418, "w")}, "made_up"),
        ({k: (s, "w") for k, s in ERROR_STATUS.items() if k != "server_busy"}, "server_busy"),
        ({**{k: (s, "w") for k, s in ERROR_STATUS.items()}, "parse_error": (500, "w")}, "parse_error"),
    ],
    ids=["extra-type", "missing-type", "other-status"],
)
def test_an_error_table_that_drifted_from_the_protocol_fails(whens: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        error_table(ERROR_STATUS, whens, RETRYABLE_STATUSES)


def test_every_route_model_field_and_error_type_is_documented(schema: dict) -> None:
    text = http_reference(schema, ERROR_STATUS, error_whens(errors.__doc__ or ""), RETRYABLE_STATUSES)
    for route in ("`POST /score`", "`GET /health`", "`GET /backends`", "`GET /metrics`"):
        assert f"### {route}" in text
    for model in (ScoreRequest, ScoreResponse):
        for field in model.model_fields:
            assert f"| `{field}` |" in text, (model.__name__, field)
    for kind in ERROR_STATUS:
        assert f"| `{kind}` |" in text
    assert "| 503 | `server_busy` | yes |" in text and "| 502 | `parse_error` | no |" in text
    assert "HTTPValidationError" not in text  # FastAPI's default shape, which this server never sends


def test_the_schema_describes_the_errors_the_server_sends(schema: dict) -> None:
    score = schema["paths"]["/score"]["post"]["responses"]
    assert score["422"]["description"] == "validation_error, limit_exceeded"
    assert score["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert schema["paths"]["/health"]["get"]["responses"].keys() == {"200", "503"}  # public: no 401
    assert "text/plain" in schema["paths"]["/metrics"]["get"]["responses"]["200"]["content"]


def test_a_server_without_keys_lists_no_401() -> None:
    from vlm_reward.server.app import create_app
    from vlm_reward.server.config import ServerConfig

    config = ServerConfig(backend="openai_compatible", model="m", backend_kwargs={"base_url": "http://h/v1"})
    paths = create_app(config).openapi()["paths"]
    assert all("401" not in op["responses"] for ops in paths.values() for op in ops.values())
