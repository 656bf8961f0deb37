"""The settings bodies are described by the serializers that check them (programs.api.serializers)."""

import re

import pytest

pytestmark = pytest.mark.django_db

WHOLE_NUMBERS = {"duration_months": (0, 1200), "cookie_duration": (1, 365), "hold_days": (0, 365)}


@pytest.fixture
def schemas(client):
    return client.get("/api/schema/", {"format": "json"}).json()["components"]["schemas"]


def test_it_describes_every_setting_of_the_patch_with_its_type_and_bounds(schemas):
    patch = schemas["PatchedSettingsPatch"]
    assert list(patch["properties"]) == [
        "name",
        "domain",
        "commission_type",
        "commission_rate",
        "duration_months",
        "cookie_duration",
        "hold_days",
        "lead_auth",
        "link_aliases",
    ]
    for name, (minimum, maximum) in WHOLE_NUMBERS.items():
        field = patch["properties"][name]
        assert (field["type"], field["minimum"], field["maximum"]) == (["integer", "string"], minimum, maximum)
    assert patch["properties"]["commission_type"] == {"$ref": "#/components/schemas/CommissionTypeEnum"}
    assert patch["properties"]["lead_auth"] == {"$ref": "#/components/schemas/LeadAuthEnum"}
    assert patch["minProperties"] == 1
    aliases = patch["properties"]["link_aliases"]
    assert (aliases["type"], aliases["maxItems"], aliases["uniqueItems"]) == ("array", 5, True)
    assert aliases["items"] == {"type": "string", "pattern": "^(?:[a-z][a-z0-9_]{0,31}|_[a-z][a-z0-9_]{0,30})$"}


def test_it_lists_the_four_required_fields_of_svc_init(schemas):
    init = schemas["CliInitInput"]
    assert sorted(init["required"]) == ["commission_rate", "commission_type", "domain", "name"]
    assert init["properties"]["duration_months"]["type"] == ["integer", "string", "null"]
    assert init["properties"]["advertiser_id"]["type"] == ["integer", "string", "null"]


def test_each_choice_has_one_enum_component(schemas):
    hashed = [name for name in schemas if re.search(r"[0-9A-Fa-f]{3}Enum$", name)]
    assert hashed == []
    assert not [name for name in schemas if name.endswith("LeadAuthEnum") and name != "LeadAuthEnum"]
