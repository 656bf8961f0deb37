"""Tolt's groups arrive as groups and its promotion codes as codes, each partner in their group (fixtures:
tolt_groups/README.md names each field's source)."""

import json
from decimal import Decimal

import pytest

from groups.models import CouponCode, PartnerGroup
from imports.engine import import_source
from imports.platforms import tolt
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import files
from tests.imports.platform_groups import check_groups, partner_groups

pytestmark = pytest.mark.django_db

FIXTURES = "tolt_groups"


def test_groups_arrive_with_partners_in_them_and_promotion_codes_as_codes():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("30"), hold_days=30)
    terms = {"commission_type": "percent", "commission_rate": Decimal("30"), "hold_days": 30}
    check_groups(
        "tolt",
        files(FIXTURES),
        program=program,
        groups={"VIP": terms, "Influencers": terms},
        partners={"ada@example.com": None, "ben@example.com": "VIP", "cleo@example.com": "Influencers"},
        codes={"ADA20": "ada@example.com", "BENVIP": "ben@example.com"},
    )


def test_a_v1_partner_with_its_group_expanded_names_it():
    partners = json.loads(files(FIXTURES, "partners-1.json")[0][1])
    partners["data"][1]["group"] = {"id": "grp_vip", "name": "VIP", "is_default": False}
    source = tolt.read([("partners-1.json", json.dumps(partners).encode())])
    assert [(row.source_id, row.name, row.is_default) for row in source.groups] == [("grp_vip", "VIP", False)]
    # Without a groups file, a bare group_id (Ada's, Cleo's) names no group: those partners stay in the default.
    assert [row.group_source_id for row in source.partners] == ["", "grp_vip", ""]


def test_a_partner_whose_group_is_not_in_the_groups_file_stays_in_the_default_group():
    partners = json.loads(files(FIXTURES, "partners-1.json")[0][1])
    partners["data"][2]["group_id"] = "grp_gone"
    chosen = [(name, content) for name, content in files(FIXTURES) if name != "partners-1.json"]
    program = ProgramFactory()
    report = import_source(
        program, tolt.read([*chosen, ("partners-1.json", json.dumps(partners).encode())]), dry_run=False
    )
    assert [refusal.reason for refusal in report.refusals if refusal.kind == "move"] == [
        "partner part_g_cleo stays in the default group: its group grp_gone is not in the export"
    ]
    assert partner_groups(program)["cleo@example.com"] is None


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("BEN VIP", "code 'BEN VIP' has a space: a link could not carry it"),
        ("BÉNVIP", "code 'BÉNVIP' cannot be a coupon code here: coupon_code must be 1 to 100 letters, digits, - or _"),
        ("", "code is missing"),
    ],
)
def test_a_hostile_promotion_code_is_refused_not_a_crash(code, reason):
    codes = json.loads(files(FIXTURES, "promotion_codes-1.json")[0][1])
    codes["data"][1]["code"] = code
    chosen = [(name, content) for name, content in files(FIXTURES) if name != "promotion_codes-1.json"]
    program = ProgramFactory()
    source = tolt.read([*chosen, ("promotion_codes-1.json", json.dumps(codes).encode())])
    report = import_source(program, source, dry_run=False)
    assert [refusal.reason for refusal in report.refusals if refusal.kind == "code"] == [reason]
    assert list(CouponCode.objects.filter(program=program).values_list("code", flat=True)) == ["ADA20"]
    assert PartnerGroup.objects.filter(program=program, name="VIP").exists()
