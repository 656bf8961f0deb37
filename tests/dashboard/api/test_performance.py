"""GET /api/tracking/performance/:programId"""

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.event_activity import ACTIVITY_DAY1, ACTIVITY_DAY2, ACTIVITY_NOW, click, sale
from tests.factories import ReferralLinkFactory
from tests.helpers import bad_request
from tracking.models import ClickEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen")]

NOW, DAY1, DAY2 = ACTIVITY_NOW, ACTIVITY_DAY1, ACTIVITY_DAY2


def performance(client, program, **params):
    return client.get(f"/api/tracking/performance/{program.pk}", params)


def zero(day: str) -> dict[str, Any]:
    return {"date": day, "clicks": 0, "leads": 0, "sales": 0, "revenue_cents": 0, "commission_cents": 0}


def test_it_reports_totals_days_and_partners(owner, program, activity, alice_link, bob_link):
    response = performance(owner, program)
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["range"] == {"from": "2025-04-21", "to": "2025-05-20"}
    assert data["totals"] == {"clicks": 3, "leads": 1, "sales": 4, "revenue_cents": 18700, "commission_cents": 2600}
    assert len(data["by_day"]) == 30
    assert data["by_day"][0] == zero("2025-04-21")
    assert data["by_day"][-1] == zero("2025-05-20")
    assert [row for row in data["by_day"] if row["clicks"] or row["sales"]] == [
        {"date": "2025-05-18", "clicks": 2, "leads": 1, "sales": 0, "revenue_cents": 0, "commission_cents": 0},
        {"date": "2025-05-19", "clicks": 1, "leads": 0, "sales": 4, "revenue_cents": 18700, "commission_cents": 2600},
    ]
    assert data["by_partner"] == [
        {
            "partner_id": alice_link.partner_id,
            "partner_name": "Alice",
            "clicks": 2,
            "leads": 1,
            "sales": 2,
            "revenue_cents": 13000,
            "commission_cents": 2000,
        },
        {
            "partner_id": bob_link.partner_id,
            "partner_name": "Bob",
            "clicks": 1,
            "leads": 0,
            "sales": 2,
            "revenue_cents": 5700,
            "commission_cents": 600,
        },
    ]


def test_days_are_utc_days_and_the_range_is_inclusive(owner, program, alice_link):
    click(alice_link, datetime(2025, 5, 1, 0, 0, tzinfo=UTC))
    click(alice_link, datetime(2025, 5, 2, 23, 59, 59, 999999, tzinfo=UTC))
    click(alice_link, datetime(2025, 5, 3, 0, 0, tzinfo=UTC))
    click(alice_link, datetime(2025, 4, 30, 23, 59, 59, 999999, tzinfo=UTC))
    data = performance(owner, program, dateFrom="2025-05-01", dateTo="2025-05-02").json()["data"]
    assert data["range"] == {"from": "2025-05-01", "to": "2025-05-02"}
    assert [(row["date"], row["clicks"]) for row in data["by_day"]] == [("2025-05-01", 1), ("2025-05-02", 1)]
    assert data["totals"]["clicks"] == 2


def test_one_day(owner, program, activity):
    data = performance(owner, program, dateFrom="2025-05-19", dateTo="2025-05-19").json()["data"]
    assert data["by_day"] == [
        {"date": "2025-05-19", "clicks": 1, "leads": 0, "sales": 4, "revenue_cents": 18700, "commission_cents": 2600}
    ]


def test_partners_are_sorted_by_revenue(owner, program, alice_link, bob_link):
    sale(click(alice_link, DAY1), DAY1, 100, commission=20)
    sale(click(bob_link, DAY1), DAY1, 900, commission=180)
    data = performance(owner, program).json()["data"]
    assert [row["partner_name"] for row in data["by_partner"]] == ["Bob", "Alice"]


def test_other_programs_are_left_out(owner, program, activity):
    other = ReferralLinkFactory()
    sale(click(other, DAY1), DAY1, 5555, commission=1111)
    assert performance(owner, program).json()["data"]["totals"]["revenue_cents"] == 18700


def test_an_empty_program(owner, program):
    data = performance(owner, program, dateFrom="2025-05-19", dateTo="2025-05-20").json()["data"]
    assert data == {
        "range": {"from": "2025-05-19", "to": "2025-05-20"},
        "totals": {"clicks": 0, "leads": 0, "sales": 0, "revenue_cents": 0, "commission_cents": 0},
        "by_day": [zero("2025-05-19"), zero("2025-05-20")],
        "by_partner": [],
    }


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"dateFrom": "2025-01-01"}, ("2025-01-01", "2025-01-30")),
        ({"dateTo": "2025-01-30"}, ("2025-01-01", "2025-01-30")),
        ({"dateFrom": "2024-05-20", "dateTo": "2025-05-20"}, ("2024-05-20", "2025-05-20")),  # 366 days
        # The calendar's ends: the default span stops at them (no day before the first, none after the last).
        ({"dateFrom": "9999-12-31"}, ("9999-12-31", "9999-12-31")),
        ({"dateFrom": "9999-12-20"}, ("9999-12-20", "9999-12-31")),
        ({"dateTo": "0001-01-01"}, ("0001-01-01", "0001-01-01")),
        ({"dateTo": "0001-01-05"}, ("0001-01-01", "0001-01-05")),
        ({"dateFrom": "9999-12-31", "dateTo": "9999-12-31"}, ("9999-12-31", "9999-12-31")),
        ({"dateFrom": "0001-01-01", "dateTo": "0001-01-01"}, ("0001-01-01", "0001-01-01")),
    ],
)
def test_range_defaults_and_the_longest_range(owner, program, params, expected):
    data = performance(owner, program, **params).json()["data"]
    assert (data["range"]["from"], data["range"]["to"]) == expected
    assert data["by_day"][0]["date"] == expected[0] and data["by_day"][-1]["date"] == expected[1]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dateFrom": "2024-05-19", "dateTo": "2025-05-20"}, "The date range must be at most 366 days"),
        ({"dateFrom": "2025-05-21", "dateTo": "2025-05-20"}, "dateFrom must not be after dateTo"),
        ({"dateFrom": "2025-05-01T00:00:00Z"}, "dateFrom must be a date (YYYY-MM-DD)"),
        ({"dateTo": "May 1"}, "dateTo must be a date (YYYY-MM-DD)"),
        ({"dateTo": "2025-02-29"}, "dateTo must be a date (YYYY-MM-DD)"),
    ],
)
def test_it_refuses_bad_ranges(owner, program, params, message):
    response = performance(owner, program, **params)
    assert response.status_code == 400
    assert response.json() == bad_request(message)


def test_it_aggregates_in_a_fixed_number_of_queries(owner, program, activity, django_assert_num_queries):
    # 1 session, 2 user, 3 program, 4 membership, 5 the rollup watermarks, 6 the rollup sums per day and
    # partner, 7-9 the clicks, leads and sales above the watermarks per day and partner (commission LEFT JOINed
    # for the sales' sums), 10 the watermarks again, 11 the partners' names: the same however many events.
    with django_assert_num_queries(11):
        assert performance(owner, program).status_code == 200


def test_events_of_a_deleted_partner_are_grouped_without_a_partner(owner, program, alice_link):
    customer = click(alice_link, DAY1)
    ClickEvent.objects.create(program=program, partner=None, customer=customer, click_timestamp=DAY1)
    rows = performance(owner, program).json()["data"]["by_partner"]
    assert [(row["partner_id"], row["partner_name"], row["clicks"]) for row in rows] == [
        (alice_link.partner_id, "Alice", 1),
        (None, "(no partner)", 1),
    ]


def test_a_pending_commission_cancelled_by_a_partial_refund_pays_nothing(owner, program, alice_link):
    customer = click(alice_link, DAY1)
    sale(customer, DAY1, 5000, commission=1000, status="refunded", deducted=400, credited=False)
    data = performance(owner, program, dateFrom="2025-05-18", dateTo="2025-05-18").json()["data"]
    assert (data["totals"]["sales"], data["totals"]["revenue_cents"], data["totals"]["commission_cents"]) == (
        1,
        5000,
        0,
    )
