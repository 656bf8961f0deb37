"""Duplicate clicks sent at the same instant: each click's probe (inside its own INSERT) sees only committed
clicks, so twins can both be recorded as counted. The rollup run marks the later ones as duplicates before it
folds them in (tracking.quality.racing_duplicates_mark), so the reports end exact."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from fraud.config import rule_update
from fraud.rules import Rule, visitor_hash
from tests.factories import ReferralLinkFactory
from tests.helpers import run_together
from tracking.models import ClickEvent
from tracking.rollups import link_click_counts, rollups_update

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"


def counted_twin(link, *, at, ua: str = CHROME) -> ClickEvent:
    """A click stored as counted, as a twin whose probe missed the other would be."""
    return ClickEvent.objects.create(
        program=link.program,
        partner=link.partner,
        link=link,
        click_id=f"twin-{ClickEvent.objects.count()}",
        visitor_hash=visitor_hash(ip="203.0.113.7", user_agent=ua),
        click_timestamp=at,
        created_at=at,
    )


def test_the_run_marks_the_later_twin_and_counts_one():
    link = ReferralLinkFactory.create()
    at = timezone.now() - timedelta(minutes=5)
    first, second = counted_twin(link, at=at), counted_twin(link, at=at)
    other_visitor = counted_twin(link, at=at, ua="another browser")
    rollups_update(settle=timedelta(0))
    traffic = dict(ClickEvent.objects.values_list("pk", "traffic"))
    assert (traffic[first.pk], traffic[second.pk], traffic[other_visitor.pk]) == ("", "duplicate", "")
    assert link_click_counts([link.pk])[link.pk].clicks == 2


def test_twins_outside_the_window_both_count():
    link = ReferralLinkFactory.create()
    now = timezone.now()
    counted_twin(link, at=now - timedelta(minutes=90))
    counted_twin(link, at=now - timedelta(minutes=5))
    rollups_update(settle=timedelta(0))
    assert list(ClickEvent.objects.values_list("traffic", flat=True)) == ["", ""]


def test_a_program_without_the_rule_keeps_both():
    link = ReferralLinkFactory.create()
    rule_update(program_id=link.program_id, rule=Rule.DUPLICATE_CLICK, enabled=False)
    at = timezone.now() - timedelta(minutes=5)
    counted_twin(link, at=at), counted_twin(link, at=at)
    rollups_update(settle=timedelta(0))
    assert list(ClickEvent.objects.values_list("traffic", flat=True)) == ["", ""]


def test_concurrent_identical_clicks_count_once_after_the_run():
    link = ReferralLinkFactory.create()

    def click(_: int) -> int:
        client = APIClient()
        body = {"affiliate_url": f"https://shop.example.com/?aff={link.short_link}", "user_agent": CHROME}
        return client.post("/api/v1/track/click", body, format="json", REMOTE_ADDR="203.0.113.7").status_code

    assert run_together(6, click) == [200] * 6
    rollups_update(settle=timedelta(0))
    assert ClickEvent.objects.count() == 6
    assert ClickEvent.objects.filter(traffic="").count() == 1
    assert link_click_counts([link.pk])[link.pk].clicks == 1
