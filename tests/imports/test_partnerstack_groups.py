"""PartnerStack's groups arrive as groups, each partnership in its group (fixtures: partnerstack_groups/README.md
names each field's source). PartnerStack's answers carry no coupon codes."""

import json
from decimal import Decimal

import pytest

from groups.models import PartnerGroup
from imports.engine import import_source
from imports.platforms import partnerstack
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import files
from tests.imports.platform_groups import check_groups, partner_groups

pytestmark = pytest.mark.django_db

FIXTURES = "partnerstack_groups"


def test_groups_arrive_with_partnerships_in_them():
    program = ProgramFactory(commission_type="fixed", commission_rate=Decimal("1500"), hold_days=45)
    terms = {"commission_type": "fixed", "commission_rate": Decimal("1500"), "hold_days": 45}
    check_groups(
        "partnerstack",
        files(FIXTURES),
        program=program,
        groups={"Agencies": terms, "Resellers & Partners": terms},
        partners={"ada@example.com": None, "ben@example.com": "Agencies", "cleo@example.com": "Resellers & Partners"},
        codes={},
    )


def test_without_the_groups_file_a_partnerships_group_is_named_by_its_slug():
    source = partnerstack.read(files(FIXTURES, "partnerships.json"))
    assert [(row.source_id, row.name, row.is_default) for row in source.groups] == [
        ("affiliates", "affiliates", False),
        ("agencies", "agencies", False),
        ("resellers", "resellers", False),
    ]


@pytest.mark.parametrize(
    ("group", "reason"),
    [
        ({"key": None, "name": "Nameless", "slug": None, "default": False}, "group slug is missing"),
        ({"key": None, "name": "Nameless", "slug": ["agencies"], "default": False}, None),
    ],
)
def test_a_hostile_group_is_refused_and_its_partners_stay_in_the_default_group(group, reason):
    payload = json.loads(files(FIXTURES, "groups.json")[0][1])
    payload["data"]["items"][1] = group
    program = ProgramFactory()
    chosen = [("groups.json", json.dumps(payload).encode()), *files(FIXTURES, "partnerships.json")]
    report = import_source(program, partnerstack.read(chosen), dry_run=False)
    moves = [refusal.reason for refusal in report.refusals if refusal.kind == "move"]
    assert moves == ["partner part_ben002 stays in the default group: its group agencies is not in the export"]
    if reason:
        assert [refusal.reason for refusal in report.refusals if refusal.kind == "group"] == [reason]
    assert partner_groups(program)["ben@example.com"] is None
    assert PartnerGroup.objects.filter(program=program, name="Resellers & Partners").exists()
