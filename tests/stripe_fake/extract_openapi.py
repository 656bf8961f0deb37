"""Writes openapi_subset.json: the operations the fake serves, cut from Stripe's published OpenAPI description.

    .venv/bin/python tests/stripe_fake/extract_openapi.py SPEC.json|SPEC.yaml --commit SHA [--path openapi/spec3.yaml]

Kept per operation: the form body's schema and the query parameters (types, enums, required, maxLength, nesting),
and the object it answers with; per object, the names of its top-level fields. Descriptions, titles and Stripe's
x- extensions are dropped, so the file stays small."""

import argparse
import json
from pathlib import Path
from typing import Any

REPOSITORY = "stripe/openapi"
OPERATIONS = [
    ("post", "/v1/accounts"),
    ("get", "/v1/accounts/{account}"),
    ("post", "/v1/accounts/{account}"),
    ("post", "/v1/account_links"),
    ("post", "/v1/transfers"),
    ("get", "/v1/transfers"),
    ("get", "/v1/transfers/{transfer}"),
    ("post", "/v1/transfers/{id}/reversals"),
    ("get", "/v1/balance"),
]
OBJECTS = ["account", "account_link", "transfer", "transfer_reversal", "balance", "api_errors"]
KEPT_KEYWORDS = {
    "type",
    "properties",
    "required",
    "enum",
    "items",
    "anyOf",
    "additionalProperties",
    "maxLength",
    "format",
}
OUTPUT = Path(__file__).with_name("openapi_subset.json")


def load(path: Path) -> dict[str, Any]:
    if path.suffix in (".yaml", ".yml"):
        import yaml

        return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return json.loads(path.read_text())


def trim(schema: Any, components: dict[str, Any]) -> Any:
    """The schema with its $refs resolved and only the keywords validation reads."""
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return trim(components[schema["$ref"].rsplit("/", 1)[1]], components)
    kept: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword not in KEPT_KEYWORDS:
            continue
        if keyword == "properties":
            kept[keyword] = {name: trim(sub, components) for name, sub in value.items()}
        elif keyword == "anyOf":
            kept[keyword] = [trim(sub, components) for sub in value]
        elif keyword in ("items", "additionalProperties"):
            kept[keyword] = trim(value, components) if isinstance(value, dict) else value
        else:
            kept[keyword] = value
    return kept


def response_object(operation: dict[str, Any]) -> str | None:
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    items = schema.get("properties", {}).get("data", {}).get("items", {})
    return "list:" + items["$ref"].rsplit("/", 1)[1] if "$ref" in items else None


def extract(spec: dict[str, Any], *, commit: str, path: str) -> dict[str, Any]:
    components = spec["components"]["schemas"]
    operations = {}
    for method, route in OPERATIONS:
        operation = spec["paths"][route][method]
        form = operation.get("requestBody", {}).get("content", {}).get("application/x-www-form-urlencoded", {})
        operations[f"{method.upper()} {route}"] = {
            "form": trim(form.get("schema", {"type": "object", "properties": {}}), components),
            "query": {
                parameter["name"]: trim(parameter["schema"], components)
                for parameter in operation.get("parameters", [])
                if parameter["in"] == "query"
            },
            "response": response_object(operation),
        }
    objects = {
        name: {
            "fields": sorted(components[name]["properties"]),
            "required": sorted(components[name].get("required", [])),
        }
        for name in OBJECTS
    }
    return {
        "source": {"repository": REPOSITORY, "commit": commit, "path": path, "spec_version": spec["info"]["version"]},
        "operations": operations,
        "objects": objects,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec", type=Path)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--path", default="openapi/spec3.json", help="the spec's path in the repository")
    args = parser.parse_args()
    subset = extract(load(args.spec), commit=args.commit, path=args.path)
    OUTPUT.write_text(json.dumps(subset, indent=1) + "\n")
    print(f"{OUTPUT}: {OUTPUT.stat().st_size} bytes, spec version {subset['source']['spec_version']}")


if __name__ == "__main__":
    main()
