"""GET /api/v1/programs/me/analytics/sources (program key)"""

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest

from core import messages
from programs.models import ProgramKey
from programs.services import program_key_mark_rotation
from tests.factories import ProgramFactory
from tests.helpers import REQUEST_LOG_ROW, bad_request, bearer, platform_error
from tracking.models import ClickEvent
from tracking.selectors import sources

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen")]

URL = "/api/v1/programs/me/analytics/sources"
NOW = datetime(2025, 7, 31, 18, 0, tzinfo=UTC)


def clicks(
    program,
    n: int,
    *,
    referrer: str = "",
    page: str = "",
    when: datetime = NOW,
    is_test: bool = False,
    traffic: str = "",
    flags: list[str] | None = None,
):
    ClickEvent.objects.bulk_create(
        ClickEvent(
            program=program,
            referrer_url=referrer,
            page_url=page,
            click_timestamp=when,
            is_test=is_test,
            traffic=traffic,
            flags=flags or [],
        )
        for _ in range(n)
    )


def test_it_ranks_referrer_domains_and_utm_sources(api_client, program):
    clicks(program, 3, referrer="https://News.Example.org/story?id=1", page="https://shop.test/?utm_source=newsletter")
    clicks(program, 2, referrer="", page="https://shop.test/?aff=x&utm_source=twitter&utm_source=ignored")
    clicks(program, 2, referrer="https://user:pw@blog.example.com:8443/p", page="https://shop.test/")
    clicks(program, 1, referrer="not a url", page="https://shop.test/?utm_source=%20")
    clicks(program, 4, referrer="https://test-only.example/", page="https://shop.test/?utm_source=t", is_test=True)
    clicks(ProgramFactory(), 5, referrer="https://other.example/")

    response = api_client.get(URL, HTTP_X_REQUEST_ID="sources-req-01", **bearer(program.raw_api_key))

    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "range": {"from": "2025-07-02", "to": "2025-07-31"},
            "referrer_domains": [
                {"domain": "(direct)", "clicks": 3},
                {"domain": "news.example.org", "clicks": 3},
                {"domain": "blog.example.com", "clicks": 2},
            ],
            "utm_sources": [
                {"utm_source": "(none)", "clicks": 3},
                {"utm_source": "newsletter", "clicks": 3},
                {"utm_source": "twitter", "clicks": 2},
            ],
            "sample": {"clicks": 8, "limit": 10000, "truncated": False},
        }
    }
    assert response["X-Request-ID"] == "sources-req-01"
    assert response["X-RateLimit-Limit"] == "30"


def test_only_counted_clicks_count_flagged_ones_do(api_client, program):
    clicks(program, 2, referrer="https://people.example/")
    for traffic in ("duplicate", "bot", "prefetch"):
        clicks(
            program, 3, referrer="https://crawler.example/", page="https://shop.test/?utm_source=bots", traffic=traffic
        )
    clicks(program, 1, referrer="https://ads.example/", flags=["paid_ads"])  # flagged, still counted

    data = api_client.get(URL, **bearer(program.raw_api_key)).json()["data"]

    assert data["referrer_domains"] == [
        {"domain": "people.example", "clicks": 2},
        {"domain": "ads.example", "clicks": 1},
    ]
    assert data["utm_sources"] == [{"utm_source": "(none)", "clicks": 3}]
    assert data["sample"]["clicks"] == 3


def test_the_range_is_inclusive_utc_days(api_client, program):
    clicks(program, 1, referrer="https://a.example/", when=datetime(2025, 7, 1, 0, 0, tzinfo=UTC))
    clicks(program, 1, referrer="https://b.example/", when=datetime(2025, 7, 2, 23, 59, 59, tzinfo=UTC))
    clicks(program, 1, referrer="https://c.example/", when=datetime(2025, 7, 3, 0, 0, tzinfo=UTC))
    clicks(program, 1, referrer="https://d.example/", when=datetime(2025, 6, 30, 23, 59, 59, tzinfo=UTC))
    body = api_client.get(URL, {"dateFrom": "2025-07-01", "dateTo": "2025-07-02"}, **bearer(program.raw_api_key))
    domains = [row["domain"] for row in body.json()["data"]["referrer_domains"]]
    assert domains == ["a.example", "b.example"]


def test_the_default_range_is_the_last_30_days(api_client, program):
    clicks(program, 1, referrer="https://old.example/", when=NOW - timedelta(days=30))
    clicks(program, 1, referrer="https://new.example/", when=datetime(2025, 7, 2, 0, 0, tzinfo=UTC))
    domains = [
        row["domain"] for row in api_client.get(URL, **bearer(program.raw_api_key)).json()["data"]["referrer_domains"]
    ]
    assert domains == ["new.example"]


def test_it_keeps_the_top_20(api_client, program):
    for n in range(25):
        clicks(program, n + 1, referrer=f"https://site{n:02d}.example/")
    rows = api_client.get(URL, **bearer(program.raw_api_key)).json()["data"]["referrer_domains"]
    assert len(rows) == 20
    assert rows[0] == {"domain": "site24.example", "clicks": 25}
    assert rows[-1] == {"domain": "site05.example", "clicks": 6}


def test_it_counts_only_the_newest_clicks_up_to_the_cap(api_client, program, monkeypatch):
    monkeypatch.setattr(sources, "SOURCES_CLICK_LIMIT", 3)
    clicks(program, 2, referrer="https://old.example/", when=NOW - timedelta(hours=2))
    clicks(program, 3, referrer="https://new.example/", when=NOW - timedelta(hours=1))
    data = api_client.get(URL, **bearer(program.raw_api_key)).json()["data"]
    assert data["referrer_domains"] == [{"domain": "new.example", "clicks": 3}]
    assert data["sample"] == {"clicks": 3, "limit": 3, "truncated": True}


def test_the_test_key_reads_its_programs_live_clicks(api_client, program):
    clicks(program, 1, referrer="https://live.example/")
    clicks(program, 1, referrer="https://test.example/", is_test=True)
    data = api_client.get(URL, **bearer(program.raw_test_api_key)).json()["data"]
    assert data["referrer_domains"] == [{"domain": "live.example", "clicks": 1}]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, messages.MISSING_AUTH_HEADER),
        ("Token abc", messages.MISSING_AUTH_HEADER),
        ("Bearer  ", messages.MISSING_API_TOKEN),
        ("Bearer aff_nope", messages.INVALID_API_TOKEN),
    ],
)
def test_it_answers_401_in_the_platform_envelope(api_client, header, message):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = api_client.get(URL, **extra)
    assert response.status_code == 401
    assert response.json() == platform_error(401, "UnauthorizedError", message)
    assert response["X-Request-ID"]


def test_a_retired_key_gets_rotation_required(api_client, program):
    key = ProgramKey.objects.get(program=program, mode="live")
    program_key_mark_rotation(key=key, deadline=NOW - timedelta(seconds=1))
    response = api_client.get(URL, **bearer(program.raw_api_key))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "api_key_rotation_required"


def test_a_flagged_key_gets_warnings_beside_data(api_client, program):
    key = ProgramKey.objects.get(program=program, mode="live")
    program_key_mark_rotation(key=key, deadline=NOW + timedelta(days=1))
    body = api_client.get(URL, **bearer(program.raw_api_key)).json()
    assert set(body) == {"data", "warnings"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dateFrom": "2025-07-10", "dateTo": "2025-07-09"}, "dateFrom must not be after dateTo"),
        ({"dateFrom": "2024-01-01", "dateTo": "2025-07-31"}, "The date range must be at most 366 days"),
        ({"dateTo": "31/07/2025"}, "dateTo must be a date (YYYY-MM-DD)"),
    ],
)
def test_it_refuses_bad_ranges(api_client, program, params, message):
    response = api_client.get(URL, params, **bearer(program.raw_api_key))
    assert response.status_code == 400
    assert response.json() == bad_request(message)


def test_a_failure_is_a_500_in_the_platform_envelope(api_client, program):
    with mock.patch("tracking.api.reports.click_sources_get", side_effect=RuntimeError("password=hunter2")):
        response = api_client.get(URL, **bearer(program.raw_api_key))
    assert response.status_code == 500
    assert response.json() == platform_error(500, "InternalServerError", "Failed to load click sources")


def test_it_is_limited_to_30_per_minute_per_key(api_client, program):
    for _ in range(30):
        assert api_client.get(URL, **bearer(program.raw_api_key)).status_code == 200
    response = api_client.get(URL, **bearer(program.raw_api_key))
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert api_client.get(URL, **bearer(ProgramFactory().raw_api_key)).status_code == 200


def test_it_is_one_query_after_the_key(api_client, program, django_assert_num_queries):
    clicks(program, 50, referrer="https://a.example/")
    # 1 key lookup (program joined), 2 the range's newest clicks (two text columns, LIMIT cap + 1)
    with django_assert_num_queries(2 + REQUEST_LOG_ROW):
        assert api_client.get(URL, **bearer(program.raw_api_key)).status_code == 200
