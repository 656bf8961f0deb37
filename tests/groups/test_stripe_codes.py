"""A partner's code with and without Stripe connected (groups.stripe_codes.partner_code_create), against the Stripe
fake through the real stripe library: the group's coupon made once, the promotion code on the connected account,
a lost answer retried into one promotion code, and a Stripe failure leaving no code."""

from decimal import Decimal

import pytest
import stripe

from core.api.envelopes import PLATFORM, render_error
from core.errors import BadRequestError, ConflictError
from groups.codes import code_register
from groups.models import CouponCode, PartnerGroup
from groups.selectors import default_group
from groups.stripe_codes import (
    CODE_STRIPE_CHARACTERS,
    GROUP_NO_DISCOUNT,
    STRIPE_ACCESS_REFUSED,
    STRIPE_UNAVAILABLE,
    StripeUnavailableError,
    partner_code_create,
    partner_code_deactivate,
    promotion_code_key,
)
from programs.models import PartnerProgram
from tests.factories import PartnerFactory, PartnerProgramFactory, ProgramFactory
from tests.stripe_fake.server import Recorded, StripeFake

pytestmark = pytest.mark.django_db

PROMOTION_CODES = "POST /v1/promotion_codes"


@pytest.fixture
def account(stripe_server: StripeFake) -> str:
    return stripe_server.create_account()["id"]


@pytest.fixture
def program(account):
    return ProgramFactory(stripe_account_id=account)


def enrolled(program, group: PartnerGroup | None = None) -> PartnerProgram:
    return PartnerProgramFactory.create(program=program, group=group)


def ten_percent_default(program, **fields) -> PartnerGroup:
    group = default_group(program)
    values = {"discount_type": "percent", "discount_percent": Decimal("10"), "discount_duration": "once", **fields}
    PartnerGroup.objects.filter(pk=group.pk).update(**values)
    group.refresh_from_db()
    return group


def posts(stripe_server: StripeFake, path: str) -> list[Recorded]:
    return [r for r in stripe_server.requests if r.method == "POST" and r.path == path]


class TestWithoutStripe:
    def test_the_code_is_registered_as_it_is(self, stripe_server):
        program = ProgramFactory()
        enrolment = enrolled(program)
        code = partner_code_create(program=program, partner=enrolment.partner, code=" jane20 ")
        assert (code.code, code.source, code.stripe_promotion_code_id) == ("JANE20", "manual", "")
        assert stripe_server.requests == []

    def test_a_group_with_no_discount_still_gets_a_manual_code(self, stripe_server):
        program = ProgramFactory()
        code = partner_code_create(program=program, partner=enrolled(program).partner, code="BOB_10")
        assert code.source == "manual" and code.code == "BOB_10"


class TestWithStripe:
    def test_a_promotion_code_for_the_groups_coupon_on_the_connected_account(self, stripe_server, account, program):
        group = ten_percent_default(program, discount_duration="repeating", discount_duration_months=3)
        enrolment = enrolled(program)

        code = partner_code_create(program=program, partner=enrolment.partner, code="jane20")

        [coupon] = stripe_server.coupons_on(account)
        assert (coupon["percent_off"], coupon["duration"], coupon["duration_in_months"]) == (10.0, "repeating", 3)
        assert coupon["metadata"] == {"program_id": str(program.pk), "group_id": str(group.pk)}
        [promotion] = stripe_server.promotion_codes_on(account)
        assert promotion["code"] == "JANE20" and promotion["promotion"] == {"coupon": coupon["id"], "type": "coupon"}
        assert promotion["metadata"] == {"program_id": str(program.pk), "partner_id": str(enrolment.partner_id)}
        assert (code.code, code.source, code.stripe_promotion_code_id) == ("JANE20", "stripe", promotion["id"])
        group.refresh_from_db()
        assert group.stripe_coupon_id == coupon["id"]
        # Nothing on the platform's own account.
        assert stripe_server.coupons_on() == [] and stripe_server.promotion_codes_on() == []

    def test_the_groups_coupon_is_made_once_for_all_its_codes(self, stripe_server, account, program):
        ten_percent_default(program)
        partner_code_create(program=program, partner=enrolled(program).partner, code="ANN")
        partner_code_create(program=program, partner=enrolled(program).partner, code="BEN")
        assert len(stripe_server.coupons_on(account)) == 1
        assert len(posts(stripe_server, "/v1/coupons")) == 1
        assert {p["code"] for p in stripe_server.promotion_codes_on(account)} == {"ANN", "BEN"}

    def test_a_changed_discount_gets_a_new_coupon_for_new_codes(self, stripe_server, account, program):
        group = ten_percent_default(program)
        first = partner_code_create(program=program, partner=enrolled(program).partner, code="ANN")
        PartnerGroup.objects.filter(pk=group.pk).update(discount_percent=Decimal("15"))
        partner_code_create(program=program, partner=enrolled(program).partner, code="BEN")

        old, new = stripe_server.coupons_on(account)
        assert (old["percent_off"], new["percent_off"]) == (10.0, 15.0)
        group.refresh_from_db()
        assert group.stripe_coupon_id == new["id"]
        by_code = {p["code"]: p["promotion"]["coupon"] for p in stripe_server.promotion_codes_on(account)}
        # The earlier code keeps its coupon: Stripe never moves a promotion code to another.
        assert by_code == {"ANN": old["id"], "BEN": new["id"]}
        assert CouponCode.objects.get(pk=first.pk).stripe_promotion_code_id

    @pytest.mark.parametrize("gone", ["deleted", "used_up"])
    def test_a_coupon_gone_in_stripe_is_made_again(self, stripe_server, account, program, gone):
        ten_percent_default(program)
        partner_code_create(program=program, partner=enrolled(program).partner, code="ANN")
        [kept] = stripe_server.coupons_on(account)
        if gone == "deleted":
            stripe_server.coupon_delete(account, kept["id"])
        else:
            stripe_server.coupon_set(account, kept["id"], valid=False)
        partner_code_create(program=program, partner=enrolled(program).partner, code="BEN")
        made = [c for c in stripe_server.coupons_on(account) if c["id"] != kept["id"]]
        assert len(made) == 1 and made[0]["percent_off"] == 10.0

    def test_an_amount_off_coupon_names_its_currency(self, stripe_server, account, program):
        influencers = PartnerGroup.objects.create(
            program=program,
            name="Influencers",
            slug="influencers",
            discount_type="amount",
            discount_amount_cents=500,
            discount_currency="EUR",
            discount_duration="forever",
        )
        enrolment = enrolled(program, group=influencers)
        partner_code_create(program=program, partner=enrolment.partner, code="PODCAST5")
        [coupon] = stripe_server.coupons_on(account)
        assert (coupon["amount_off"], coupon["currency"], coupon["percent_off"]) == (500, "eur", None)
        assert coupon["duration"] == "forever" and coupon["name"] == "Influencers"

    def test_a_group_with_no_discount_is_refused_and_nothing_is_made(self, stripe_server, program):
        enrolment = enrolled(program)
        with pytest.raises(BadRequestError) as refused:
            partner_code_create(program=program, partner=enrolment.partner, code="JANE20")
        assert refused.value.code == "group_has_no_discount"
        assert refused.value.message == GROUP_NO_DISCOUNT.format(group=default_group(program).name)
        assert stripe_server.requests == [] and not CouponCode.objects.exists()

    def test_a_code_stripe_would_refuse_is_refused_first(self, stripe_server, program):
        ten_percent_default(program)
        with pytest.raises(BadRequestError, match=CODE_STRIPE_CHARACTERS):
            partner_code_create(program=program, partner=enrolled(program).partner, code="JANE_20")
        assert stripe_server.requests == []

    def test_a_taken_code_asks_nothing_of_stripe(self, stripe_server, program):
        ten_percent_default(program)
        code_register(program=program, partner=enrolled(program).partner, code="JANE20")
        with pytest.raises(ConflictError) as taken:
            partner_code_create(program=program, partner=enrolled(program).partner, code="jane20")
        assert taken.value.code == "coupon_code_taken" and stripe_server.requests == []

    def test_an_installation_without_the_platform_key_says_so(self, stripe_server, program, settings):
        ten_percent_default(program)
        settings.STRIPE_SECRET_KEY = ""
        with pytest.raises(BadRequestError) as refused:
            partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        assert refused.value.code == "stripe_not_configured" and stripe_server.requests == []

    def test_a_partner_of_another_program_is_refused(self, stripe_server, program):
        ten_percent_default(program)
        stranger = PartnerFactory(workspace=program.workspace)
        with pytest.raises(BadRequestError) as refused:
            partner_code_create(program=program, partner=stranger, code="JANE20")
        assert refused.value.code == "partner_not_enrolled" and stripe_server.requests == []


class TestStripeFailures:
    def test_a_lost_answer_retried_makes_one_promotion_code(self, stripe_server, account, program):
        ten_percent_default(program)
        partner = enrolled(program).partner
        stripe_server.crash_next(PROMOTION_CODES)

        with pytest.raises(StripeUnavailableError):
            partner_code_create(program=program, partner=partner, code="JANE20")
        assert not CouponCode.objects.exists()
        [made] = stripe_server.promotion_codes_on(account)

        code = partner_code_create(program=program, partner=partner, code="JANE20")

        # The retry carried the same Idempotency-Key, so Stripe answered the promotion code it had made.
        assert stripe_server.promotion_codes_on(account) == [made]
        assert code.stripe_promotion_code_id == made["id"]
        attempts = posts(stripe_server, "/v1/promotion_codes")
        assert [a.idempotency_key for a in attempts] == [
            promotion_code_key(program, partner, made["promotion"]["coupon"], "JANE20")
        ] * 2
        assert [a.replayed for a in attempts] == [False, True]

    def test_a_lost_coupon_answer_retried_makes_one_coupon(self, stripe_server, account, program):
        ten_percent_default(program)
        partner = enrolled(program).partner
        stripe_server.crash_next("POST /v1/coupons")
        with pytest.raises(StripeUnavailableError):
            partner_code_create(program=program, partner=partner, code="JANE20")
        partner_code_create(program=program, partner=partner, code="JANE20")
        assert len(stripe_server.coupons_on(account)) == 1
        assert len(stripe_server.promotion_codes_on(account)) == 1

    def test_stripe_failing_is_a_502_and_leaves_no_code(self, stripe_server, account, program):
        ten_percent_default(program)
        stripe_server.fail_next(PROMOTION_CODES, status=500)
        with pytest.raises(StripeUnavailableError) as failed:
            partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        assert not CouponCode.objects.exists() and stripe_server.promotion_codes_on(account) == []
        assert render_error(failed.value, PLATFORM) == {
            "data": None,
            "error": {
                "status": 502,
                "name": "BadGatewayError",
                "message": STRIPE_UNAVAILABLE,
                "details": {},
                "code": "stripe_unavailable",
            },
        }

    def test_a_code_already_in_stripe_is_a_conflict(self, stripe_server, account, program):
        ten_percent_default(program)
        stripe_server.promotion_code_make(account, "JANE20")
        with pytest.raises(ConflictError) as taken:
            partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        assert taken.value.code == "coupon_code_taken" and "JANE20" in taken.value.message
        assert not CouponCode.objects.exists()

    def test_a_revoked_connection_is_a_502_naming_it(self, stripe_server, program):
        ten_percent_default(program)
        program.stripe_account_id = "acct_1NoLongerConnected"
        with pytest.raises(StripeUnavailableError) as refused:
            partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        assert (refused.value.message, refused.value.code) == (STRIPE_ACCESS_REFUSED, "stripe_access_refused")
        assert not CouponCode.objects.exists()

    def test_the_promotion_code_is_made_with_the_platform_key_on_the_account(self, stripe_server, account, program):
        ten_percent_default(program)
        stripe.api_key = "sk_test_not_the_platform_key"  # the module's key is not what the service uses
        partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        assert len(stripe_server.promotion_codes_on(account)) == 1


class TestDeactivation:
    """partner_code_deactivate: the code stops attributing, and its Stripe promotion code stops discounting."""

    def test_a_stripe_code_is_turned_off_on_the_connected_account(self, stripe_server, account, program):
        ten_percent_default(program)
        code = partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        assert partner_code_deactivate(code=code) is True
        code.refresh_from_db()
        [promotion] = stripe_server.promotion_codes_on(account)
        assert code.is_active is False and promotion["active"] is False
        assert len(posts(stripe_server, f"/v1/promotion_codes/{code.stripe_promotion_code_id}")) == 1
        # Again: nothing more is asked of Stripe.
        assert partner_code_deactivate(code=code) is False
        assert len(posts(stripe_server, f"/v1/promotion_codes/{code.stripe_promotion_code_id}")) == 1

    def test_stripe_failing_leaves_the_code_active(self, stripe_server, account, program):
        ten_percent_default(program)
        code = partner_code_create(program=program, partner=enrolled(program).partner, code="JANE20")
        stripe_server.fail_next("POST /v1/promotion_codes/*", status=500)
        with pytest.raises(StripeUnavailableError):
            partner_code_deactivate(code=code)
        code.refresh_from_db()
        assert code.is_active is True and stripe_server.promotion_codes_on(account)[0]["active"] is True

    def test_a_manual_code_asks_nothing_of_stripe(self, stripe_server, program):
        code = code_register(program=program, partner=enrolled(program).partner, code="BOB10")
        before = len(stripe_server.requests)
        assert partner_code_deactivate(code=code) is True
        assert len(stripe_server.requests) == before
