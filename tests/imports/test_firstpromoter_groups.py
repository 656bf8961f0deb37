"""FirstPromoter's campaigns arrive as groups and their coupons as codes, each promoter in the group of the campaign
they are accepted in (fixtures: firstpromoter_groups/README.md names each field's source)."""

import json
from decimal import Decimal

import pytest

from groups.models import CouponCode, PartnerGroup
from imports.engine import import_source
from imports.platforms import firstpromoter
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import files
from tests.imports.platform_groups import check_groups, partner_groups

pytestmark = pytest.mark.django_db

FIXTURES = "firstpromoter_groups"


def test_campaigns_arrive_as_groups_with_the_programs_terms_and_coupons_as_codes():
    program = ProgramFactory(commission_type="recurring_percent", commission_rate=Decimal("25"), hold_days=21)
    same_terms = {"commission_type": "recurring_percent", "commission_rate": Decimal("25"), "hold_days": 21}
    check_groups(
        "firstpromoter",
        files(FIXTURES),
        currency="USD",
        program=program,
        groups={"Partners": same_terms, "Influencers": same_terms, "Podcasts": same_terms},
        partners={"ada@example.com": "Partners", "ben@example.com": "Influencers", "cleo@example.com": "Podcasts"},
        codes={"ADA20": "ada@example.com", "BEN-OLD": "ben@example.com", "CLEOCAST": "cleo@example.com"},
    )


def test_v1_promotions_name_their_campaign_and_coupon():
    content = json.loads(files("firstpromoter_v1", "promoters.json")[0][1])
    content[0]["promotions"][0]["promo_code"] = "DANA15"
    source = firstpromoter.read([("promoters.json", json.dumps(content).encode())], currency="USD")
    assert ("26127", "Make Campaign") in [(row.source_id, row.name) for row in source.groups]
    assert [row.code for row in source.codes] == ["DANA15"]
    assert {row.source_id: row.group_source_id for row in source.partners}[str(content[0]["id"])] == "26127"


def _promoters(change) -> list[tuple[str, bytes]]:
    payload = json.loads(files(FIXTURES, "promoters.json")[0][1])
    change(payload["data"])
    return [("promoters.json", json.dumps(payload).encode())]


@pytest.mark.parametrize(
    ("coupon", "reason"),
    [
        ("ADA 20", "code 'ADA 20' has a space: a link could not carry it"),
        ("ADA20€", "code 'ADA20€' cannot be a coupon code here: coupon_code must be 1 to 100 letters, digits, - or _"),
        (["ADA20"], "a campaign's coupon is not a code"),
    ],
)
def test_a_hostile_coupon_is_refused_not_a_crash(coupon, reason):
    def change(promoters):
        promoters[0]["promoter_campaigns"][0]["coupon"] = coupon

    program = ProgramFactory()
    report = import_source(program, firstpromoter.read(_promoters(change), currency="USD"), dry_run=False)
    assert [refusal.reason for refusal in report.refusals if refusal.kind == "code"] == [reason]
    assert set(CouponCode.objects.filter(program=program).values_list("code", flat=True)) == {"BEN-OLD", "CLEOCAST"}
    assert partner_groups(program)["ada@example.com"] == "Partners"


def test_a_coupon_two_promoters_hold_goes_to_the_first():
    def change(promoters):
        promoters[2]["promoter_campaigns"][0]["coupon"] = "ada20"

    report = import_source(ProgramFactory(), firstpromoter.read(_promoters(change), currency="USD"), dry_run=False)
    assert [(refusal.where, refusal.reason) for refusal in report.refusals] == [
        ("promoters.json item 3", "code 'ada20' is already the code of partner 201 (promoters.json item 1)")
    ]


def test_a_campaign_name_too_long_or_blank_still_makes_a_group():
    def change(promoters):
        promoters[0]["promoter_campaigns"][0]["campaign"]["name"] = "P" * 500
        promoters[2]["promoter_campaigns"][0]["campaign"]["name"] = None

    program = ProgramFactory()
    import_source(program, firstpromoter.read(_promoters(change), currency="USD"), dry_run=False)
    names = set(PartnerGroup.objects.filter(program=program, is_default=False).values_list("name", flat=True))
    assert names == {"P" * 100, "Influencers", "FirstPromoter 3"}
