"""GET /api/v1/track/discount (an extension, the browser tracker's svc.getDiscount()): the discount of the group the
visitor's partner is in, or null. It is keyless and open to any site, so it is tried as a stranger would: unknown
and malformed program ids, another program's click ids, unknown clicks, a deactivated or unenrolled partner, keys
it does not take, and an answer that must hold nothing but the group's public discount."""

import json
from decimal import Decimal

import pytest
from django.core.cache import caches

from core import messages
from core.api import ratelimit
from groups.models import PartnerGroup
from groups.selectors import default_group
from programs.models import PartnerProgram
from tests.factories import CustomerFactory, PartnerProgramFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/discount"
SITE = "https://shop.example.com"


@pytest.fixture(autouse=True)
def counts_cleared(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()


@pytest.fixture
def program():
    return ProgramFactory(commission_rate=Decimal("20"))


@pytest.fixture
def vip(program):
    return PartnerGroup.objects.create(
        program=program,
        name="VIP",
        slug="vip",
        commission_type="recurring_percent",
        commission_rate=Decimal("30"),
        discount_type="percent",
        discount_percent=Decimal("10"),
        discount_duration="repeating",
        discount_duration_months=3,
    )


@pytest.fixture
def jane(program, vip):
    return PartnerProgramFactory(program=program, partner__name="Jane", group=vip).partner


@pytest.fixture
def click_id(program, jane):
    return CustomerFactory(link=ReferralLinkFactory(program=program, partner=jane)).click_id


def ask(api_client, program_id, click_id=None, **extra):
    query = {"program_id": program_id} if click_id is None else {"program_id": program_id, "click_id": click_id}
    return api_client.get(URL, query, **extra)


VIP_DISCOUNT = {
    "type": "percent",
    "percent": "10.00",
    "amount_cents": None,
    "currency": "USD",
    "duration": "repeating",
    "duration_months": 3,
    "group": "VIP",
}


def test_the_visitors_partners_group_discount(api_client, program, click_id):
    response = ask(api_client, program.pk, click_id)
    assert response.status_code == 200
    assert response.json() == {"discount": VIP_DISCOUNT}
    assert response["Cache-Control"] == "private, max-age=300"
    assert response[ratelimit.LIMIT_HEADER] == "60"


def test_an_amount_off_every_payment(api_client, program, vip, click_id):
    PartnerGroup.objects.filter(pk=vip.pk).update(
        discount_type="amount",
        discount_percent=None,
        discount_amount_cents=500,
        discount_currency="EUR",
        discount_duration="forever",
        discount_duration_months=7,  # left over from "repeating": not given when the discount is forever
    )
    assert ask(api_client, program.pk, click_id).json() == {
        "discount": {
            "type": "amount",
            "percent": None,
            "amount_cents": 500,
            "currency": "EUR",
            "duration": "forever",
            "duration_months": None,
            "group": "VIP",
        }
    }


def test_the_answer_holds_nothing_but_the_groups_public_discount(api_client, program, vip, jane, click_id):
    PartnerGroup.objects.create(
        program=program, name="Secret", slug="secret", discount_type="percent", discount_percent=Decimal("90")
    )
    body = ask(api_client, program.pk, click_id).content.decode()
    for private in (jane.email, jane.name, "30", "recurring_percent", "Secret", "90", "vip"):
        assert private not in body.replace('"10.00"', ""), private
    assert set(json.loads(body)["discount"]) == set(VIP_DISCOUNT)


def test_a_default_group_partner_with_no_discount_gets_null(api_client, program):
    bob = PartnerProgramFactory(program=program, partner__name="Bob").partner
    default_group(program)
    click = CustomerFactory(link=ReferralLinkFactory(program=program, partner=bob)).click_id
    assert ask(api_client, program.pk, click).json() == {"discount": None}


def test_a_default_group_with_a_discount_gives_it(api_client, program):
    bob = PartnerProgramFactory(program=program, partner__name="Bob").partner
    default = default_group(program)
    PartnerGroup.objects.filter(pk=default.pk).update(discount_type="percent", discount_percent=Decimal("5"))
    click = CustomerFactory(link=ReferralLinkFactory(program=program, partner=bob)).click_id
    assert ask(api_client, program.pk, click).json()["discount"]["group"] == "Default"


def test_a_program_with_no_default_group_row_yet_answers_null_and_writes_nothing(api_client, program):
    bob = PartnerProgramFactory(program=program, partner__name="Bob").partner
    click = CustomerFactory(link=ReferralLinkFactory(program=program, partner=bob)).click_id
    PartnerGroup.objects.filter(program=program).delete()
    assert ask(api_client, program.pk, click).json() == {"discount": None}
    assert not PartnerGroup.objects.filter(program=program).exists()


@pytest.mark.parametrize("click", ["", "cust_nobody", "x" * 300, "%", "' OR 1=1 --"])
def test_an_unknown_or_malformed_click_id_gets_null(api_client, program, click_id, click):
    assert ask(api_client, program.pk, click).json() == {"discount": None}


def test_no_click_id_gets_null(api_client, program, click_id):
    assert ask(api_client, program.pk).json() == {"discount": None}


def test_another_programs_click_id_gets_null(api_client, program, click_id):
    other = ProgramFactory(workspace=program.workspace)
    assert ask(api_client, other.pk, click_id).json() == {"discount": None}
    elsewhere = ProgramFactory()
    assert ask(api_client, elsewhere.pk, click_id).json() == {"discount": None}


def test_a_deactivated_or_unenrolled_partner_gets_null(api_client, program, jane, click_id):
    jane.is_active = False
    jane.save(update_fields=["is_active"])
    assert ask(api_client, program.pk, click_id).json() == {"discount": None}
    jane.is_active = True
    jane.save(update_fields=["is_active"])
    PartnerProgram.objects.filter(partner=jane).delete()
    assert ask(api_client, program.pk, click_id).json() == {"discount": None}


def test_a_click_with_no_partner_gets_null(api_client, program):
    link = ReferralLinkFactory(program=program)
    click = CustomerFactory(link=link, first_partner=None).click_id
    assert ask(api_client, program.pk, click).json() == {"discount": None}


@pytest.mark.parametrize("value", ["999999999", "abc", "-1", "1.5", "99999999999999999999999"])
def test_an_unknown_program_id_is_404(api_client, click_id, value):
    response = ask(api_client, value, click_id)
    assert response.status_code == 404
    assert response.json()["error"]["message"] == messages.UNKNOWN_PROGRAM_ID


def test_no_program_id_is_400(api_client):
    response = api_client.get(URL)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == messages.PROGRAM_ID_REQUIRED


@pytest.mark.parametrize("key", ["aff_" + "x" * 44, "not a key", ""])
def test_a_key_is_not_taken_and_changes_nothing(api_client, program, click_id, key):
    """The route is keyless like the config: a Bearer key, good or bad, is ignored (never a 401, never more)."""
    response = ask(api_client, program.pk, click_id, **bearer(key))
    assert response.status_code == 200 and response.json() == {"discount": VIP_DISCOUNT}
    good = ask(api_client, program.pk, click_id, **bearer(program.raw_api_key))
    assert good.json() == {"discount": VIP_DISCOUNT}


def test_any_site_may_ask_cross_origin(api_client, program, click_id):
    preflight = api_client.options(URL, HTTP_ORIGIN=SITE, HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")
    assert preflight.status_code == 200
    assert preflight["Access-Control-Allow-Origin"] == "*"
    response = ask(api_client, program.pk, click_id, HTTP_ORIGIN=SITE)
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in response
    assert ratelimit.LIMIT_HEADER in response["Access-Control-Expose-Headers"]


def test_it_is_rate_limited_per_address(api_client, program, click_id):
    for _ in range(ratelimit.TRACK_DISCOUNT.per_minute):
        assert ask(api_client, program.pk, click_id).status_code == 200
    refused = ask(api_client, program.pk, click_id)
    assert refused.status_code == 429
    assert "Retry-After" in refused


def test_a_post_is_405(api_client, program):
    assert api_client.post(URL, {"program_id": program.pk}, format="json").status_code == 405


def test_it_reads_at_most_four_queries(api_client, program, click_id, django_assert_max_num_queries):
    # program exists; the click's partner; the enrolment's group; the group (no request-log row for an answer)
    with django_assert_max_num_queries(4):
        assert ask(api_client, program.pk, click_id).status_code == 200


def test_the_click_route_gains_no_query_for_discounts(api_client, program, jane, vip):
    """svc.getDiscount() is its own call: a click reads nothing of groups."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    link = ReferralLinkFactory(program=program, partner=jane, short_link="janelink")
    with CaptureQueriesContext(connection) as queries:
        response = api_client.post(
            "/api/v1/track/click", {"affiliate_url": f"https://{program.domain}/?aff={link.short_link}"}, format="json"
        )
    assert response.status_code == 200, response.content
    assert not [query for query in queries.captured_queries if "groups_" in query["sql"]]
