"""Stripe's form encoding and parameter checks, against the operations cut from Stripe's OpenAPI description
(openapi_subset.json, written by extract_openapi.py). Errors carry Stripe's codes and messages."""

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

SUBSET = Path(__file__).with_name("openapi_subset.json")


class StripeError(Exception):
    """An answer in Stripe's error envelope: {"error": {"type", "code", "message", "param"}}."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        status: int = 400,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message, self.code, self.param, self.status, self.error_type = message, code, param, status, error_type

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.error_type, "message": self.message}
        if self.code:
            error["code"] = self.code
            error["doc_url"] = f"https://stripe.com/docs/error-codes/{self.code.replace('_', '-')}"
        if self.param:
            error["param"] = self.param
        return {"error": error}


def unknown(param: str) -> StripeError:
    return StripeError(f"Received unknown parameter: {param}", code="parameter_unknown", param=param)


def missing(param: str) -> StripeError:
    return StripeError(f"Missing required param: {param}.", code="parameter_missing", param=param)


@cache
def subset() -> dict[str, Any]:
    return json.loads(SUBSET.read_text())


def parse_form(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """`metadata[a]=1&capabilities[transfers][requested]=true&expand[]=x` into nested dicts; list indexes (and the
    positions of `[]`) stay dict keys until the schema says the parameter is an array."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        name = key.split("[", 1)[0]
        path = [name, *re.findall(r"\[([^\]]*)\]", key[len(name) :])]
        node = root
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        last = path[-1] if path[-1] != "" else str(len(node))
        node[last] = value
    return root


def _one_of(options: list[str]) -> str:
    return ", ".join(options[:-1]) + f", or {options[-1]}" if len(options) > 1 else options[0]


def coerce(value: Any, schema: dict[str, Any], param: str) -> Any:
    """The value as the schema types it (form values all arrive as strings), or StripeError."""
    if "anyOf" in schema:
        # Stripe's "object, or "" to unset it": the branch whose shape matches the value decides the error.
        branches = sorted(
            schema["anyOf"], key=lambda branch: (branch.get("type") == "object") != isinstance(value, dict)
        )
        errors = []
        for branch in branches:
            try:
                return coerce(value, branch, param)
            except StripeError as error:
                errors.append(error)
        raise errors[0]
    kind = schema.get("type")
    if kind == "object":
        return _coerce_object(value, schema, param)
    if kind == "array":
        if not isinstance(value, dict) or not all(index.isdigit() for index in value):
            raise StripeError(f"Invalid array: {param} must be an array", param=param)
        return [coerce(value[index], schema.get("items", {}), f"{param}[{index}]") for index in sorted(value, key=int)]
    if isinstance(value, dict):
        raise StripeError(f"Invalid {kind or 'value'} for {param}: an object was given", param=param)
    if value == "" and "" not in schema.get("enum", []):
        raise StripeError(
            f"You passed an empty string for '{param}'. We assume empty values are an attempt to unset a parameter; "
            f"however '{param}' cannot be unset. You should remove '{param}' from your request or supply a non-empty "
            "value.",
            code="parameter_invalid_empty",
            param=param,
        )
    if kind == "integer":
        if not re.fullmatch(r"-?\d+", value):
            raise StripeError(f"Invalid integer: {value}", code="parameter_invalid_integer", param=param)
        return int(value)
    if kind == "boolean":
        if value not in ("true", "false"):
            raise StripeError(f"Invalid boolean: {value}", param=param)
        return value == "true"
    if "enum" in schema and value not in schema["enum"]:
        raise StripeError(f"Invalid {param}: must be one of {_one_of(schema['enum'])}", param=param)
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise StripeError(
            f"Invalid string: {value[:10]}...; must be at most {schema['maxLength']} characters", param=param
        )
    return value


def _coerce_object(value: Any, schema: dict[str, Any], param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StripeError(f"Invalid object: {param} must be an object", param=param)
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    result = {}
    for key, item in value.items():
        child = f"{param}[{key}]" if param else key
        if properties is not None and key in properties:
            result[key] = coerce(item, properties[key], child)
        elif isinstance(extra, dict):
            # In a map such as metadata, "" unsets the key.
            result[key] = item if item == "" else coerce(item, extra, child)
        elif properties is not None or extra is False:
            # Stripe's nested objects are closed even where the description does not say so.
            raise unknown(child)
        else:
            result[key] = item
    for key in schema.get("required", []):
        if key not in value:
            raise missing(f"{param}[{key}]" if param else key)
    return result


def checked(operation: str, form: dict[str, Any], query: dict[str, Any]) -> dict[str, Any]:
    """The request's parameters (body for POST, query string for GET), typed, as the operation describes them."""
    description = subset()["operations"][operation]
    if operation.startswith("GET"):
        schema = {"type": "object", "properties": description["query"], "additionalProperties": False}
        return _coerce_object(query, schema, "")
    if query:
        raise unknown(next(iter(query)))
    return _coerce_object(form, description["form"], "")


def object_fields(name: str) -> set[str]:
    return set(subset()["objects"][name]["fields"])
