"""A date the overview or events page cannot use is not quietly dropped: the page says what it set aside and what
it shows instead. The pages also read the dashboard API's names for the range, dateFrom and dateTo."""

from datetime import timedelta

import pytest
from django.utils import timezone

pytestmark = pytest.mark.django_db


def warnings_of(page: str) -> list[str]:
    return [item.split("</li>", 1)[0] for item in page.split('<li class="warning">')[1:]]


def test_a_bad_date_on_the_overview_is_named_and_the_default_range_shown(owner_client, program):
    today = timezone.now().date()
    start = today - timedelta(days=29)
    page = owner_client.get(f"/programs/{program.pk}/?dateFrom=2026-13-45&dateTo=2026-02-01").content.decode()
    assert warnings_of(page) == [
        f"Set aside: dateFrom=2026-13-45 is not a date (YYYY-MM-DD). Showing {start} to {today} (UTC)."
    ]
    assert f'id="range-from" value="{start}"' in page and f'id="range-to" value="{today}"' in page


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ("from=2026-02-30&to=2026-03-01", "from=2026-02-30 is not a date (YYYY-MM-DD)"),
        ("dateTo=20260301", "dateTo=20260301 is not a date (YYYY-MM-DD)"),
        (
            "from=yesterday&dateTo=tomorrow",
            "from=yesterday is not a date (YYYY-MM-DD); dateTo=tomorrow is not a date (YYYY-MM-DD)",
        ),
        ("from=2026-02-01&to=2026-01-01", "the start 2026-02-01 is after the end 2026-01-01"),
    ],
)
def test_each_refusal_is_named(owner_client, program, query, refused):
    page = owner_client.get(f"/programs/{program.pk}/?{query}")
    assert page.status_code == 200
    (warning,) = warnings_of(page.content.decode())
    assert warning.startswith(f"Set aside: {refused}. Showing ")


def test_the_api_names_give_the_range_too(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/?dateFrom=2026-01-01&dateTo=2026-01-31").content.decode()
    assert 'id="range-from" value="2026-01-01"' in page and 'id="range-to" value="2026-01-31"' in page
    assert warnings_of(page) == []


def test_one_day_gives_thirty_days_as_the_performance_api_reads_it(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/?from=2026-01-01").content.decode()
    assert 'id="range-from" value="2026-01-01"' in page and 'id="range-to" value="2026-01-30"' in page
    page = owner_client.get(f"/programs/{program.pk}/?dateTo=2026-01-30").content.decode()
    assert 'id="range-from" value="2026-01-01"' in page and 'id="range-to" value="2026-01-30"' in page


def test_a_bad_date_on_the_events_page_is_named_and_the_good_one_kept(member_client, program):
    page = member_client.get(f"/programs/{program.pk}/events?dateFrom=2026-13-45&dateTo=2026-02-01").content.decode()
    assert warnings_of(page) == [
        "Set aside: dateFrom=2026-13-45 is not a date (YYYY-MM-DD). Showing events until 2026-02-01 (UTC)."
    ]
    assert 'id="events-from" value=""' in page and 'id="events-to" value="2026-02-01"' in page


def test_a_backwards_range_on_the_events_page_shows_every_date(member_client, program):
    page = member_client.get(f"/programs/{program.pk}/events?from=2026-02-01&to=2026-01-01").content.decode()
    assert warnings_of(page) == [
        "Set aside: the start 2026-02-01 is after the end 2026-01-01. Showing events of any date (UTC)."
    ]


def test_the_warning_is_said_once(owner_client, program):
    owner_client.get(f"/programs/{program.pk}/?dateFrom=2026-13-45")
    assert warnings_of(owner_client.get(f"/programs/{program.pk}/").content.decode()) == []
