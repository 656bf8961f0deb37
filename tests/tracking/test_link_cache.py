import pytest

from core.sql import insert_pair_supported
from programs.models import PartnerProgram, ReferralLink
from tests.factories import CustomerFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW, bearer
from tracking import link_cache
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db


def click(client, code: str):
    return client.post("/api/v1/track/click", {"affiliate_url": f"https://shop.example.com/?aff={code}"}, format="json")


def test_a_repeat_click_does_not_read_the_link_again(api_client, django_assert_num_queries):
    link = ReferralLinkFactory()
    click(api_client, link.short_link)
    # SAVEPOINT, the customer and click INSERTs (one statement on PostgreSQL: core.sql.insert_pair, which in
    # production runs without a transaction; elsewhere the duplicate probe and two INSERTs), RELEASE. The link
    # and the program's fraud rules come from the cache; the counters are the rollup task's (tracking.insight.rollups).
    with django_assert_num_queries(2 + (1 if insert_pair_supported() else 3) + REQUEST_LOG_ROW):
        assert click(api_client, link.short_link).status_code == 200


def test_turning_a_link_off_applies_at_once_in_this_process(api_client):
    link = ReferralLinkFactory()
    click(api_client, link.short_link)
    link.is_active = False
    link.save()
    assert click(api_client, link.short_link).status_code == 410
    link.is_active = True
    link.save()
    assert click(api_client, link.short_link).status_code == 200


def test_a_change_made_elsewhere_applies_when_the_entry_expires(api_client, monkeypatch, settings):
    settings.LINK_CACHE_SECONDS = 5
    link = ReferralLinkFactory()
    clock = [1000.0]
    monkeypatch.setattr(link_cache.time, "monotonic", lambda: clock[0])
    click(api_client, link.short_link)
    # Another process turned it off: no signal reaches this one.
    ReferralLink.objects.filter(pk=link.pk).update(is_active=False)
    assert click(api_client, link.short_link).status_code == 200
    clock[0] += 5.1
    assert click(api_client, link.short_link).status_code == 410
    assert ClickEvent.objects.count() == 2


def test_a_zero_ttl_disables_the_cache(api_client, settings):
    settings.LINK_CACHE_SECONDS = 0
    link = ReferralLinkFactory()
    click(api_client, link.short_link)
    ReferralLink.objects.filter(pk=link.pk).update(is_active=False)
    assert click(api_client, link.short_link).status_code == 410


def test_unknown_codes_are_not_cached(api_client):
    assert click(api_client, "later").status_code == 400
    ReferralLinkFactory(short_link="later")
    assert click(api_client, "later").status_code == 200


def sale(client, link, transaction_id: str, customer_key: str):
    body = {"transaction_id": transaction_id, "amount_cents": 1000, "customer_key": customer_key}
    return client.post("/api/v1/track/sale", body, format="json", **bearer(link.program.raw_api_key))


def test_removing_an_enrolment_applies_at_once_in_this_process(api_client):
    link = ReferralLinkFactory()
    CustomerFactory(link=link, customer_key="u1")
    CustomerFactory(link=link, customer_key="u2")
    assert sale(api_client, link, "t1", "u1").status_code == 200  # the enrolment is now cached
    PartnerProgram.objects.get(partner=link.partner, program=link.program).delete()
    refused = sale(api_client, link, "t2", "u2")
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "No partner-program relationship found for this customer"


def test_a_missing_enrolment_is_not_cached(api_client):
    link = ReferralLinkFactory()
    PartnerProgram.objects.filter(partner=link.partner, program=link.program).delete()
    CustomerFactory(link=link, customer_key="u1")
    assert sale(api_client, link, "t1", "u1").status_code == 400
    PartnerProgram.objects.create(partner=link.partner, program=link.program)
    assert sale(api_client, link, "t1", "u1").status_code == 200
