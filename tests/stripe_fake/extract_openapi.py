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
    # The coupon codes (groups.stripe_codes) and the invoice the Stripe webhook asks for with its discounts.
    ("post", "/v1/coupons"),
    ("get", "/v1/coupons/{coupon}"),
    ("post", "/v1/promotion_codes"),
    ("get", "/v1/promotion_codes/{promotion_code}"),
    ("post", "/v1/promotion_codes/{promotion_code}"),
    ("get", "/v1/invoices/{invoice}"),
    ("get", "/v1/checkout/sessions/{session}"),
]
OBJECTS = [
    "account",
    "account_link",
    "transfer",
    "transfer_reversal",
    "balance",
    "api_errors",
    "coupon",
    "promotion_code",
    "discount",
]
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

# What API versions after the description's changed in the operations the fake serves, applied on top of it so the
# fake takes what the installed library sends: each entry names its changelog entry.
PROMOTION = {
    "type": "object",
    "properties": {"coupon": {"maxLength": 5000, "type": "string"}, "type": {"enum": ["coupon"], "type": "string"}},
    "required": ["type"],
}


def _promotion_code_polymorphic(operations: dict[str, Any], objects: dict[str, Any]) -> None:
    """2025-09-30.clover (docs.stripe.com/changelog/clover/2025-09-30/polymorphic-coupon): a promotion code names
    its coupon in `promotion` {type: coupon, coupon}, not `coupon`; the object's `coupon` is `promotion` too."""
    form = operations["POST /v1/promotion_codes"]["form"]
    form["properties"].pop("coupon")
    form["properties"]["promotion"] = PROMOTION
    form["required"] = sorted({*form.get("required", []), "promotion"} - {"coupon"})
    fields = objects["promotion_code"]
    fields["fields"] = sorted({*fields["fields"], "promotion"} - {"coupon"})
    fields["required"] = sorted({*fields["required"], "promotion"} - {"coupon"})


def _customer_account(operations: dict[str, Any], objects: dict[str, Any]) -> None:
    """A later version (Accounts v2): a promotion code may be restricted to a `customer_account` as to a `customer`
    (the installed library's PromotionCodeCreateParams, and Stripe's fixtures of the object, openapi/fixtures3.json
    at f6c2a48fbac2819d1feba8143d942ffc65e1c0d2)."""
    operations["POST /v1/promotion_codes"]["form"]["properties"]["customer_account"] = {
        "maxLength": 5000,
        "type": "string",
    }
    objects["promotion_code"]["fields"] = sorted({*objects["promotion_code"]["fields"], "customer_account"})


def _discount_source(operations: dict[str, Any], objects: dict[str, Any]) -> None:
    """2025-09-30.clover (docs.stripe.com/api/discounts/object): a Discount names its coupon in `source`
    {type: coupon, coupon}, and names a `customer_account` and a `subscription_item`, as Stripe's fixtures show it
    (openapi/fixtures3.json at f6c2a48fbac2819d1feba8143d942ffc65e1c0d2)."""
    later = {"source", "customer_account", "subscription_item"}
    objects["discount"]["fields"] = sorted({*objects["discount"]["fields"], *later} - {"coupon"})
    objects["discount"]["required"] = sorted(set(objects["discount"]["required"]) - {"coupon"})


LATER_CHANGES = [_promotion_code_polymorphic, _customer_account, _discount_source]


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
    for change in LATER_CHANGES:
        change(operations, objects)
    return {
        "source": {"repository": REPOSITORY, "commit": commit, "path": path, "spec_version": spec["info"]["version"]},
        "later_changes": [change.__name__.lstrip("_") for change in LATER_CHANGES],
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
