"""duplicate_click over HTTP: the same visitor (IP + user agent) on the same link within the window is recorded
as a duplicate, answered like any click, and counted nowhere (link and partner counters, rollups, dashboard)."""

from datetime import timedelta

import pytest

from fraud.config import rule_update
from fraud.rules import Rule, Traffic
from tests.factories import ReferralLinkFactory
from tracking.models import ClickEvent
from tracking.rollups import rollups_update

from .flow import (
    CHROME_UA,
    FIREFOX_UA,
    OTHER_IP,
    assert_ledger_consistent,
    click,
    click_id_of,
    commission_of,
    dashboard_clicks,
    link_clicks,
    partner_clicks,
    sale,
)

pytestmark = pytest.mark.django_db


def traffics() -> list[str]:
    return list(ClickEvent.objects.order_by("pk").values_list("traffic", flat=True))


def assert_counted(link, clicks: int) -> None:
    """Every read agrees, before and after the rollup run folds the clicks in."""
    assert link_clicks(link) == clicks
    assert partner_clicks(link) == clicks
    assert dashboard_clicks(link.program) == clicks
    rollups_update(settle=timedelta(0))
    assert link_clicks(link) == clicks
    assert partner_clicks(link) == clicks
    assert dashboard_clicks(link.program) == clicks


def test_a_second_click_within_the_hour_is_a_duplicate_answered_normally_and_not_counted(api_client, link, clock):
    first = click(api_client, link)
    clock.shift(timedelta(minutes=59))
    second = click(api_client, link)
    assert second.status_code == 200
    assert second.json()["click_id"] and second.json()["click_id"] != click_id_of(first)
    assert traffics() == [Traffic.HUMAN, Traffic.DUPLICATE]
    duplicate = ClickEvent.objects.get(traffic=Traffic.DUPLICATE)
    assert duplicate.customer is not None  # a duplicate is still attributable
    assert duplicate.visitor_hash == ClickEvent.objects.get(traffic=Traffic.HUMAN).visitor_hash
    assert_counted(link, 1)


def test_a_sale_on_the_duplicates_click_id_is_attributed_normally(api_client, link, partner, clock):
    click(api_client, link)
    duplicate = click_id_of(click(api_client, link))
    commission = commission_of(sale(api_client, link.program, click_id=duplicate))
    assert (commission.partner_id, commission.amount_cents, commission.flags) == (partner.pk, 2000, [])
    assert commission.held_at is None
    assert_ledger_consistent(partner)


def test_after_the_window_the_visitor_counts_again(api_client, link, clock):
    click(api_client, link)
    clock.shift(timedelta(minutes=61))
    click(api_client, link)
    assert traffics() == [Traffic.HUMAN, Traffic.HUMAN]
    assert_counted(link, 2)


def test_the_window_is_counted_from_the_last_counted_click_not_from_duplicates(api_client, link, clock):
    click(api_client, link)
    clock.shift(timedelta(minutes=40))
    click(api_client, link)  # a duplicate: it does not restart the window
    clock.shift(timedelta(minutes=21))
    click(api_client, link)
    assert traffics() == [Traffic.HUMAN, Traffic.DUPLICATE, Traffic.HUMAN]


def test_a_shorter_window_set_by_the_owner_applies(api_client, link, clock):
    rule_update(program_id=link.program_id, rule=Rule.DUPLICATE_CLICK, window_minutes=5)
    click(api_client, link)
    clock.shift(timedelta(minutes=4))
    click(api_client, link)
    clock.shift(timedelta(minutes=6))
    click(api_client, link)
    assert traffics() == [Traffic.HUMAN, Traffic.DUPLICATE, Traffic.HUMAN]


@pytest.mark.parametrize("other", [{"user_agent": FIREFOX_UA}, {"ip": OTHER_IP}], ids=["other-ua", "other-ip"])
def test_another_user_agent_or_ip_is_another_visitor(api_client, link, clock, other):
    click(api_client, link)
    click(api_client, link, **other)
    assert traffics() == [Traffic.HUMAN, Traffic.HUMAN]
    assert_counted(link, 2)


def test_the_same_visitor_on_another_link_counts(api_client, link, clock):
    other = ReferralLinkFactory(program=link.program, partner=link.partner)
    click(api_client, link)
    click(api_client, other)
    assert traffics() == [Traffic.HUMAN, Traffic.HUMAN]
    assert (link_clicks(link), link_clicks(other)) == (1, 1)
    assert partner_clicks(link) == 2


def test_a_repeat_click_with_existing_click_id_is_a_duplicate_too(api_client, link, clock):
    first = click_id_of(click(api_client, link))
    again = click(api_client, link, existing_click_id=first)
    assert click_id_of(again) == first
    assert traffics() == [Traffic.HUMAN, Traffic.DUPLICATE]
    assert_counted(link, 1)


def test_with_the_rule_off_both_clicks_count(api_client, link, clock):
    rule_update(program_id=link.program_id, rule=Rule.DUPLICATE_CLICK, enabled=False)
    click(api_client, link)
    click(api_client, link)
    assert traffics() == [Traffic.HUMAN, Traffic.HUMAN]
    assert_counted(link, 2)


def test_cosmetic_changes_to_one_browsers_user_agent_are_one_visitor(api_client, link, clock):
    """A doubled space, another case, a trailing ';' or spaces around the separators: the same browser string,
    so the same visitor (fraud.rules.user_agent_normalised): 10 clicks, 1 counted, 9 duplicates."""
    variants = [
        CHROME_UA,
        CHROME_UA.replace(" ", "  "),
        CHROME_UA.replace("Windows NT", "windows  nt"),
        CHROME_UA.upper(),
        CHROME_UA.lower(),
        f"{CHROME_UA};",
        f"{CHROME_UA} ; ",
        f'  "{CHROME_UA}."\t',
        CHROME_UA.replace("; ", ";"),
        CHROME_UA.replace("(KHTML, like Gecko)", "( KHTML ,like Gecko )").replace(" ", "\u00a0", 1),
    ]
    assert len(set(variants)) == 10
    for user_agent in variants:
        click(api_client, link, user_agent=user_agent)
    assert traffics().count(Traffic.DUPLICATE) == 9
    assert traffics()[0] == Traffic.HUMAN
    assert len(set(ClickEvent.objects.values_list("visitor_hash", flat=True))) == 1
    assert_counted(link, 1)


def test_a_changed_version_is_still_another_visitor(api_client, link, clock):
    click(api_client, link)
    click(api_client, link, user_agent=CHROME_UA.replace("Chrome/120.0.0.0", "Chrome/121.0.0.0"))
    assert traffics() == [Traffic.HUMAN, Traffic.HUMAN]
