"""Rewardful's campaigns arrive as groups and its affiliate coupons as codes, each affiliate in their campaign's group
(fixtures: rewardful_groups/README.md names each field's source)."""

import json
from decimal import Decimal
from typing import Any

import pytest

from groups.models import CouponCode, PartnerGroup
from imports.engine import import_source
from imports.platforms import rewardful
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import files
from tests.imports.platform_groups import check_groups, partner_groups

pytestmark = pytest.mark.django_db

FIXTURES = "rewardful_groups"
VIP = "0b6d2a52-6f3e-4d47-9a4e-5c0c1f0e0a02"


def test_campaigns_and_coupons_read_as_groups_and_codes():
    source = rewardful.read(files(FIXTURES))
    assert source.refusals == []
    assert [(row.name, row.is_default, row.commission_type, row.commission_rate) for row in source.groups] == [
        ("Friends of the Shop", True, "", None),
        ("VIP creators", False, "recurring_percent", Decimal("35.5")),
        ("Podcast sponsors", False, "fixed", Decimal("2500")),
    ]
    assert sorted(row.code for row in source.codes) == ["BEN-VIP", "CLEOPOD", "ada10"]
    assert {row.email: row.group_source_id for row in source.partners}["ben.petrov@example.com"] == VIP


def test_campaigns_arrive_as_groups_with_partners_in_them_and_coupons_as_codes():
    check_groups(
        "rewardful",
        files(FIXTURES),
        groups={
            "VIP creators": {
                "commission_type": "recurring_percent",
                "commission_rate": Decimal("35.5"),
                "duration_months": 12,
                "hold_days": 14,
                "discount_type": "",
            },
            "Podcast sponsors": {
                "commission_type": "fixed",
                "commission_rate": Decimal("2500"),
                "duration_months": 0,
                "hold_days": 45,
            },
        },
        partners={
            "ada.okafor@example.com": None,
            "ben.petrov@example.com": "VIP creators",
            "cleo.quinn@example.com": "Podcast sponsors",
        },
        codes={
            "ADA10": "ada.okafor@example.com",
            "BEN-VIP": "ben.petrov@example.com",
            "CLEOPOD": "cleo.quinn@example.com",
        },
    )


def test_the_default_campaign_keeps_the_programs_terms():
    program = ProgramFactory(commission_type="recurring_percent", commission_rate=Decimal("15"), hold_days=60)
    import_source(program, rewardful.read(files(FIXTURES)), dry_run=False)
    program.refresh_from_db()
    assert (program.commission_type, program.commission_rate, program.hold_days) == (
        "recurring_percent",
        Decimal("15"),
        60,
    )
    assert PartnerGroup.objects.filter(program=program).count() == 3  # the default one and two


def _changed(name: str, index: int, *, also_affiliates: bool = False, **fields: Any) -> list[tuple[str, bytes]]:
    """The fixtures with fields of one item changed; `also_affiliates`: the campaign as Ben's affiliate object
    carries it too (expand[]=campaign), as the API answers both."""
    chosen = []
    for file_name, content in files(FIXTURES):
        if file_name == name or (also_affiliates and file_name == "affiliates-1.json"):
            payload = json.loads(content)
            target = payload["data"][index] if file_name == name else payload["data"][1]["campaign"]
            target.update(fields)
            content = json.dumps(payload).encode()
        chosen.append((file_name, content))
    return chosen


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"commission_percent": 250.0}, "commission_percent 250.0 is not a percentage above 0 and at most 100"),
        ({"commission_percent": -5}, "commission_percent -5 is not a percentage above 0 and at most 100"),
        ({"commission_percent": "1e999"}, "commission_percent 1e999 is not a percentage above 0 and at most 100"),
        (
            {"reward_type": "amount", "commission_amount_cents": 10**30},
            f"commission_amount_cents {10**30} is too large",
        ),
        ({"max_commission_period_months": 10**9}, "max_commission_period_months 1000000000 is not a whole number"),
        ({"reward_type": "bitcoin"}, "reward_type 'bitcoin' is not percent or amount"),
    ],
)
def test_a_hostile_campaign_is_refused_and_its_affiliates_stay_in_the_default_group(fields, reason):
    program = ProgramFactory()
    hostile = _changed("campaigns-1.json", 1, also_affiliates=True, **fields)
    report = import_source(program, rewardful.read(hostile), dry_run=False)
    groups = [refusal for refusal in report.refusals if refusal.kind == "group"]
    # Refused once, where first read (Ben's affiliate object), though the campaigns file lists it too.
    assert len(groups) == 1 and groups[0].where == "affiliates-1.json item 2"
    assert groups[0].reason.startswith(reason)
    assert partner_groups(program)["ben.petrov@example.com"] is None
    assert not PartnerGroup.objects.filter(program=program, name="VIP creators").exists()


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        ("ADA 10", "code 'ADA 10' has a space: a link could not carry it"),
        ("ÄDA10", "code 'ÄDA10' cannot be a coupon code here: coupon_code must be 1 to 100 letters, digits, - or _"),
        ("x" * 101, "code is longer than 100 characters"),
        (None, "code is missing"),
    ],
)
def test_a_hostile_coupon_is_refused_not_a_crash(token, reason):
    program = ProgramFactory()
    report = import_source(program, rewardful.read(_changed("affiliate_coupons-1.json", 0, token=token)), dry_run=False)
    assert [refusal.reason for refusal in report.refusals if refusal.kind == "code"] == [reason]
    assert set(CouponCode.objects.filter(program=program).values_list("code", flat=True)) == {"BEN-VIP", "CLEOPOD"}


def test_a_coupon_another_affiliate_holds_is_refused():
    clash = _changed("affiliate_coupons-1.json", 3, token="ada10")
    report = import_source(ProgramFactory(), rewardful.read(clash), dry_run=False)
    assert [(refusal.where, refusal.reason) for refusal in report.refusals] == [
        (
            "affiliate_coupons-1.json item 4",
            "code 'ada10' is already the code of partner 6f1c3c1e-1a2b-4c3d-8e9f-00000000aa01 "
            "(affiliate_coupons-1.json item 1)",
        )
    ]
