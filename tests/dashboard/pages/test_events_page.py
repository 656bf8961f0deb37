"""The events page: the filter form (type, dates) prefilled from the address, wired to the events API."""

import pytest

pytestmark = pytest.mark.django_db


def test_it_wires_the_table_to_the_events_api(member_client, program):
    page = member_client.get(f"/programs/{program.pk}/events").content.decode()
    assert f'data-events-url="/api/tracking/events/{program.pk}"' in page
    assert 'data-page-size="25"' in page and 'data-page="1"' in page
    for value in ["click", "lead", "conversion"]:
        assert f'<option value="{value}"' in page
    assert 'src="/static/js/dashboard-events.js"' in page
    assert "at most its\n    75 most recent events" in page


def test_the_filters_come_from_the_address(member_client, program):
    url = f"/programs/{program.pk}/events?type=lead&from=2026-01-01&to=2026-01-31&page=3"
    page = member_client.get(url).content.decode()
    assert '<option value="lead" selected>' in page
    assert 'id="events-from" value="2026-01-01"' in page and 'id="events-to" value="2026-01-31"' in page
    assert 'data-page="3"' in page


def test_unknown_filter_values_are_dropped(member_client, program):
    url = f"/programs/{program.pk}/events?type=refund&from=soon&to=2026-13-01&page=-2"
    page = member_client.get(url).content.decode()
    assert '<option value="" selected>' in page
    assert 'id="events-from" value=""' in page and 'id="events-to" value=""' in page
    assert 'data-page="1"' in page
