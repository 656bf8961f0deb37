"""The published OpenAPI description (/api/schema/?format=json) and the check that a real response is what it
documents for its route, method and status: body, content type and required headers."""

from typing import Any

import jsonschema
from django.test import Client

METHODS = ("get", "post", "put", "patch", "delete")

# The surfaces whose every operation has a contract case (tests/contract/test_*_contracts.py).
SURFACE_PREFIXES = (
    "/api/v1/track/",
    "/api/v1/programs/",
    "/api/tracking/",
    "/api/programs/",
    "/api/v1/cli/",
    "/api/agent/v1/",
)

_published: dict[str, Any] = {}
_closed: dict[str, Any] = {}


def closed(schema: Any) -> Any:
    """The schema with every described object closed (additionalProperties false where it names its properties
    and says nothing of others): a key the description does not list is a mismatch, not an extra."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    shut = {key: closed(value) for key, value in schema.items()}
    if "properties" in shut and "additionalProperties" not in shut:
        shut["additionalProperties"] = False
    return shut


def closed_components(schema: dict[str, Any]) -> dict[str, Any]:
    if not _closed:
        _closed.update(closed(schema["components"]))
    return _closed


def published_schema() -> dict[str, Any]:
    """The description as a client downloads it. Built once per process: it does not change during a run."""
    if not _published:
        response = Client().get("/api/schema/", {"format": "json"})
        assert response.status_code == 200
        _published.update(response.json())
    return _published


def surface_operations(schema: dict[str, Any]) -> set[tuple[str, str]]:
    """Every (METHOD, path) the description lists on the contract surfaces."""
    return {
        (method.upper(), path)
        for path, described in schema["paths"].items()
        if path.startswith(SURFACE_PREFIXES)
        for method in described
        if method in METHODS
    }


def assert_documented(schema: dict[str, Any], path: str, method: str, response: Any) -> None:
    """The response's status is documented for its route and method, its body matches the schema documented for
    that status, and the headers documented as required are there."""
    responses = schema["paths"][path][method.lower()]["responses"]
    status = str(response.status_code)
    assert status in responses, f"{method.upper()} {path} answered {status}, documented: {sorted(responses)}"
    documented = responses[status]
    content = documented.get("content")
    if content is None:
        assert not response.content, f"{method.upper()} {path} {status}: a body where none is documented"
    else:
        assert "application/json" in content, (method, path, status, list(content))
        assert response["Content-Type"].startswith("application/json"), (method, path, status)
        body_schema = content["application/json"]["schema"]
        # The components travel with the schema so its "#/components/…" references resolve.
        validator = jsonschema.Draft202012Validator({**closed(body_schema), "components": closed_components(schema)})
        errors = sorted(validator.iter_errors(response.json()), key=lambda error: list(error.absolute_path))
        assert not errors, f"{method.upper()} {path} {status}: " + "; ".join(
            f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message[:300]}" for error in errors[:5]
        )
    for name, header in documented.get("headers", {}).items():
        if header.get("required"):
            assert name in response.headers, f"{method.upper()} {path} {status}: header {name} missing"
