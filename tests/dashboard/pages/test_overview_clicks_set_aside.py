"""The overview says how many live clicks the fraud rules set aside lately and why (issue 25: eight curl clicks
showed as one click with no word of the seven others)."""

import pytest
from rest_framework.test import APIClient

from tests.factories import ReferralLinkFactory

pytestmark = pytest.mark.django_db


def click(program, link, **fields) -> None:
    body = {"affiliate_url": f"https://{program.domain}/?aff={link.short_link}", "program_id": program.pk, **fields}
    assert APIClient().post("/api/v1/track/click", body, format="json").status_code == 200


def test_clicks_set_aside_are_counted_with_their_reason(owner_client, program):
    link = ReferralLinkFactory(program=program)
    for _ in range(8):
        click(program, link)
    click(program, link, user_agent="facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)")

    page = owner_client.get(f"/programs/{program.pk}/").content.decode()

    assert 'id="clicks-set-aside"' in page
    assert 'In the last 7 days, <strong data-total="set-aside">8</strong> live clicks' in page
    assert '<li data-reason="duplicate"><b>7 duplicate</b>: the same visitor clicked the same link again' in page
    assert '<li data-reason="bot"><b>1 bot</b>: a crawler' in page
    assert page.index('data-reason="duplicate"') < page.index('data-reason="bot"')
    assert f'href="/programs/{program.pk}/review"' in page


def test_nothing_set_aside_shows_no_section(owner_client, program):
    click(program, ReferralLinkFactory(program=program))
    assert 'id="clicks-set-aside"' not in owner_client.get(f"/programs/{program.pk}/").content.decode()
