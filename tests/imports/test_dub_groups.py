"""Dub's groups arrive as groups with their sale reward and discount, its discount codes as codes, each partner in
their group (fixtures: dub_groups/README.md names each field's source)."""

import json
from decimal import Decimal
from typing import Any

import pytest

from groups.models import CouponCode, PartnerGroup
from imports.engine import import_source
from imports.platforms import dub
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import files
from tests.imports.platform_groups import check_groups, partner_groups

pytestmark = pytest.mark.django_db

FIXTURES = "dub_groups"


def test_groups_arrive_with_their_reward_and_discount_partners_in_them_and_codes():
    check_groups(
        "dub",
        files(FIXTURES),
        groups={
            "Creators": {
                "commission_type": "recurring_percent",
                "commission_rate": Decimal("30.5"),
                "duration_months": 12,
                "hold_days": 14,
                "discount_type": "percent",
                "discount_percent": Decimal("15"),
                "discount_duration": "repeating",
                "discount_duration_months": 3,
            },
            "Agencies": {
                "commission_type": "fixed",
                "commission_rate": Decimal("5000"),
                "duration_months": 0,
                "hold_days": 60,
                "discount_type": "amount",
                "discount_amount_cents": 1000,
                "discount_currency": "USD",
                "discount_duration": "once",
            },
        },
        partners={"ada@example.com": None, "ben@example.com": "Creators", "cleo@example.com": "Agencies"},
        codes={"BEN15": "ben@example.com", "CLEO10": "cleo@example.com"},
    )


def test_partners_without_the_groups_file_stay_in_the_default_group():
    source = dub.read(files(FIXTURES, "partners.json"))
    assert source.groups == [] and {row.group_source_id for row in source.partners} == {""}


def _groups(index: int, **fields: Any) -> list[tuple[str, bytes]]:
    payload = json.loads(files(FIXTURES, "groups.json")[0][1])
    for key, value in fields.items():
        target = payload[index]
        *parents, last = key.split(".")
        for parent in parents:
            target = target[parent]
        target[last] = value
    rest = [(name, content) for name, content in files(FIXTURES) if name != "groups.json"]
    return [("groups.json", json.dumps(payload).encode()), *rest]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"saleReward.amountInPercentage": 101}, "saleReward.amountInPercentage 101 is not a percentage"),
        ({"saleReward.amountInPercentage": -20}, "saleReward.amountInPercentage -20 is not a percentage"),
        ({"saleReward.maxDuration": 10**6}, "saleReward.maxDuration 1000000 is not a whole number of months"),
        ({"discount.amount": 10**20}, "discount.amount 100000000000000000000 is not a percentage"),
        ({"discount.type": "bogo"}, "discount.type 'bogo' is not percentage or flat"),
        ({"holdingPeriodDays": -3}, "holdingPeriodDays -3 is not a whole number of days"),
        ({"saleReward.amountInPercentage": "NaN"}, "saleReward.amountInPercentage 'NaN' is not a number"),
    ],
)
def test_a_hostile_group_is_refused_and_its_partners_stay_in_the_default_group(fields, reason):
    program = ProgramFactory()
    report = import_source(program, dub.read(_groups(1, **fields)), dry_run=False)
    groups = [refusal for refusal in report.refusals if refusal.kind == "group"]
    assert [refusal.where for refusal in groups] == ["groups.json item 2"]
    assert groups[0].reason.startswith(reason)
    moves = [refusal.reason for refusal in report.refusals if refusal.kind == "move"]
    assert moves == [
        "partner pn_1GBEN0000000000000000000 stays in the default group: its group grp_1K0A2CREATORS00000000000 "
        "was refused (groups.json item 2)"
    ]
    assert partner_groups(program)["ben@example.com"] is None
    assert not PartnerGroup.objects.filter(program=program, name="Creators").exists()
    # The rest of the import goes on: the other group, its partner and the codes.
    assert partner_groups(program)["cleo@example.com"] == "Agencies"


def test_a_discount_of_nothing_is_no_discount():
    program = ProgramFactory()
    import_source(program, dub.read(_groups(1, **{"discount.amount": 0})), dry_run=False)
    assert PartnerGroup.objects.get(program=program, name="Creators").discount_type == ""


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("BEN 15", "code 'BEN 15' has a space: a link could not carry it"),
        ("BEN١٥", "code 'BEN١٥' cannot be a coupon code here: coupon_code must be 1 to 100 letters, digits, - or _"),
        (15, None),
    ],
)
def test_a_hostile_discount_code_is_refused_not_a_crash(code, reason):
    payload = json.loads(files(FIXTURES, "discount_codes.json")[0][1])
    payload[0]["code"] = code
    rest = [(name, content) for name, content in files(FIXTURES) if name != "discount_codes.json"]
    program = ProgramFactory()
    report = import_source(
        program, dub.read([("discount_codes.json", json.dumps(payload).encode()), *rest]), dry_run=False
    )
    codes = set(CouponCode.objects.filter(program=program).values_list("code", flat=True))
    if reason is None:
        assert codes == {"15", "CLEO10"}  # a number is the code as written
    else:
        assert [refusal.reason for refusal in report.refusals if refusal.kind == "code"] == [reason]
        assert codes == {"CLEO10"}
