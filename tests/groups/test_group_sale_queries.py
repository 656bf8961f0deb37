"""What groups and coupon codes cost a sale, pinned: a partner in another group than the default costs a sale no
query once its enrolment is cached (the group's terms come with the enrolment); a sale attributed by a coupon code
costs the code's one indexed lookup and the customer it brings (a click would have made that row), in a savepoint."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from groups.models import CouponCode
from groups.services import Move, group_create, partner_move
from programs.models import PartnerProgram
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW
from tests.tracking.sales import post_sale
from tests.tracking.test_track_sale_limits import commission_statements, sale_statements

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory(hold_days=30)


@pytest.fixture
def gold_link(program):
    gold = group_create(program=program, name="Gold", commission_rate=Decimal("30"))
    link = ReferralLinkFactory(program=program)
    enrolment = PartnerProgram.objects.get(partner=link.partner, program=program)
    partner_move(enrolment=enrolment, group=gold, move=Move(reason="owner"))
    return link


def test_a_repeat_sale_of_a_gold_partner_costs_what_a_default_partners_does(
    api_client, program, gold_link, django_assert_num_queries
):
    CustomerFactory(link=gold_link, customer_key="user_1")
    assert (
        post_sale(api_client, program, transaction_id="t1", amount_cents=100, customer_key="user_1").status_code == 200
    )
    # As tests/tracking/test_track_sale_limits.py's repeat sale: the key, the customer by key, the sale and the
    # commission (the group's terms were read with the enrolment by the first sale, and are cached with it).
    with django_assert_num_queries(6 + sale_statements() + commission_statements(credited=False) + REQUEST_LOG_ROW):
        response = post_sale(api_client, program, transaction_id="t2", amount_cents=100, customer_key="user_1")
    assert response.json()["commission_id"]


def test_a_sale_by_coupon_code_costs_one_lookup_and_the_customer_it_brings(api_client, program, gold_link):
    CouponCode.objects.create(program=program, partner=gold_link.partner, code="JANE")
    CustomerFactory(link=gold_link, customer_key="clicked")
    assert post_sale(api_client, program, transaction_id="w", amount_cents=100, coupon_code="JANE").status_code == 200
    with CaptureQueriesContext(connection) as by_key:
        response = post_sale(api_client, program, transaction_id="t0", amount_cents=100, customer_key="clicked")
    assert response.status_code == 200 and response.json()["commission_id"]
    with CaptureQueriesContext(connection) as by_code:
        response = post_sale(
            api_client, program, transaction_id="t1", amount_cents=100, coupon_code="jane", customer_key="k1"
        )
    assert response.status_code == 200 and response.json()["commission_id"]
    # Against the first sale of a customer a click brought: the code's partner (one indexed lookup) and the INSERT
    # of the customer (the click's row otherwise), in a SAVEPOINT and its RELEASE, less the conversion's lock and
    # UPDATE (the customer is made converted by its sale).
    assert len(by_code) == len(by_key) + 2
    added = [query["sql"] for query in by_code.captured_queries if "groups_couponcode" in query["sql"]]
    assert len(added) == 1 and '"code" = ' in added[0]
