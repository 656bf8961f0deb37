import pytest

from programs.models import ReferralLink
from tests.factories import ReferralLinkFactory
from tracking import link_cache
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db


def click(client, code: str):
    return client.post("/api/v1/track/click", {"affiliate_url": f"https://shop.example.com/?aff={code}"}, format="json")


def test_a_repeat_click_does_not_read_the_link_again(api_client, django_assert_num_queries):
    link = ReferralLinkFactory()
    click(api_client, link.short_link)
    # 1 SAVEPOINT (BEGIN outside tests), 2 customer INSERT, 3 click INSERT, 4 link counter UPDATE,
    # 5 partner-program counter UPDATE, 6 RELEASE (COMMIT). The link comes from the cache.
    with django_assert_num_queries(6):
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
