import pytest

from core.sql import SqlValue, capabilities
from programs.models import PartnerProgram, ReferralLink
from tests.factories import CustomerFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW, bearer
from tracking import link_cache
from tracking.models import ClickEvent
from tracking.services import click as click_service
from tracking.services.click import ConfiguredLink

pytestmark = pytest.mark.django_db


def click(client, code: str):
    return client.post("/api/v1/track/click", {"affiliate_url": f"https://shop.example.com/?aff={code}"}, format="json")


def test_a_repeat_click_does_not_read_the_link_again(api_client, django_assert_num_queries):
    link = ReferralLinkFactory()
    click(api_client, link.short_link)
    # SAVEPOINT, the customer and click INSERTs (one statement on PostgreSQL: core.sql.insert_pair, which in
    # production runs without a transaction; elsewhere two INSERTs, the probe in the click's), RELEASE. The link
    # and the program's fraud rules come from the cache; the counters are the rollup task's (tracking.rollups).
    with django_assert_num_queries(2 + (1 if capabilities().insert_in_with else 2) + REQUEST_LOG_ROW):
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


def returning_click(client, code: str, existing_click_id: str):
    body = {"affiliate_url": f"https://shop.example.com/?aff={code}", "existing_click_id": existing_click_id}
    return client.post("/api/v1/track/click", body, format="json")


def test_a_change_made_elsewhere_applies_when_the_entry_expires(api_client, monkeypatch, settings):
    """A click whose INSERT does not check the link's row (a returning visitor's) trusts the cache for its TTL."""
    settings.LINK_CACHE_SECONDS = 5
    link = ReferralLinkFactory()
    clock = [1000.0]
    monkeypatch.setattr(link_cache.time, "monotonic", lambda: clock[0])
    click_id = click(api_client, link.short_link).json()["click_id"]
    # Another process turned it off: no signal reaches this one.
    ReferralLink.objects.filter(pk=link.pk).update(is_active=False)
    assert returning_click(api_client, link.short_link, click_id).status_code == 200
    clock[0] += 5.1
    assert returning_click(api_client, link.short_link, click_id).status_code == 410
    assert ClickEvent.objects.count() == 2


@pytest.mark.skipif(not capabilities().insert_in_with, reason="the checked INSERT is PostgreSQL's")
def test_a_new_visitor_click_sees_a_change_made_elsewhere_at_once(api_client, monkeypatch, settings):
    settings.LINK_CACHE_SECONDS = 5
    link = ReferralLinkFactory()
    clock = [1000.0]
    monkeypatch.setattr(link_cache.time, "monotonic", lambda: clock[0])
    click(api_client, link.short_link)
    ReferralLink.objects.filter(pk=link.pk).update(is_active=False)
    refused = click(api_client, link.short_link)
    assert refused.status_code == 410
    assert refused.json()["error"]["code"] == "link_disabled"
    assert ClickEvent.objects.count() == 1


@pytest.mark.skipif(not capabilities().insert_in_with, reason="the checked INSERT is PostgreSQL's")
def test_a_link_given_to_another_partner_elsewhere_credits_the_new_partner_at_once(api_client, settings):
    settings.LINK_CACHE_SECONDS = 5
    link = ReferralLinkFactory()
    click(api_client, link.short_link)
    other = ReferralLinkFactory(program=link.program).partner
    ReferralLink.objects.filter(pk=link.pk).update(partner=other)
    assert click(api_client, link.short_link).status_code == 200
    latest = ClickEvent.objects.latest("pk")
    assert latest.partner_id == other.pk
    assert latest.customer.first_partner_id == other.pk


@pytest.mark.skipif(not capabilities().insert_in_with, reason="the checked INSERT is PostgreSQL's")
def test_a_long_tail_link_stays_cached_for_new_visitors(api_client, monkeypatch, settings, django_assert_num_queries):
    """Past LINK_CACHE_SECONDS, within LINK_CACHE_VERIFIED_SECONDS, a new visitor's click reads no link: its INSERT
    checks the row."""
    settings.LINK_CACHE_SECONDS = 5
    settings.LINK_CACHE_VERIFIED_SECONDS = 600
    link = ReferralLinkFactory()
    clock = [1000.0]
    monkeypatch.setattr(link_cache.time, "monotonic", lambda: clock[0])
    click(api_client, link.short_link)
    clock[0] += 300
    # The program's fraud rules (one read per program on their own short TTL: the clock moved for them too), then
    # SAVEPOINT, the checked INSERT, RELEASE (the savepoint only because the test runs in a transaction).
    with django_assert_num_queries(4 + REQUEST_LOG_ROW):
        assert click(api_client, link.short_link).status_code == 200
    clock[0] += 301
    with django_assert_num_queries(5 + REQUEST_LOG_ROW):  # and the link is read again
        assert click(api_client, link.short_link).status_code == 200


def test_the_cache_keeps_at_most_its_bound(api_client, settings):
    settings.LINK_CACHE_MAX_ENTRIES = 3
    links = [ReferralLinkFactory() for _ in range(5)]
    for link in links:
        assert click(api_client, link.short_link).status_code == 200
        assert len(link_cache._entries) <= 3


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


@pytest.mark.skipif(not capabilities().insert_in_with, reason="the checked INSERT is PostgreSQL's")
def test_a_link_whose_row_never_matches_is_decided_a_bounded_number_of_times(api_client, monkeypatch):
    """A row that changes under every checked INSERT (here: a check that never holds) sends the click round at most
    MAX_CLICK_DECISIONS times; the last decision takes the transaction and records it."""
    link = ReferralLinkFactory()
    guards: list[int] = []

    def never(checked: ConfiguredLink) -> SqlValue:
        guards.append(checked.pk)
        return "FALSE", []

    monkeypatch.setattr(click_service, "link_guard", never)
    assert click(api_client, link.short_link).status_code == 200
    assert guards == [link.pk] * (click_service.MAX_CLICK_DECISIONS - 1)
    assert ClickEvent.objects.get().customer.first_link_id == link.pk


@pytest.mark.skipif(not capabilities().insert_in_with, reason="the checked INSERT is PostgreSQL's")
def test_an_unknown_code_on_a_named_program_is_read_once(api_client, django_assert_num_queries):
    """The long-cached read found nothing, so it read the row just now: the refusal is not read again."""
    program = ReferralLinkFactory().program
    body = {"affiliate_url": "https://shop.example.com/?aff=nobody", "program_id": program.pk}
    # The link (none), then whether the program exists (it does: the code is what is unknown).
    with django_assert_num_queries(2 + REQUEST_LOG_ROW):
        response = api_client.post("/api/v1/track/click", body, format="json")
    assert response.status_code == 400
