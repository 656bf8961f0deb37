"""GET /api/tracking/events/:programId: normalized live events, newest first, each type capped at
3 x pageSize rows, merged and paginated."""

from datetime import UTC, datetime, timedelta

import pytest

from programs.models import Role
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bad_request
from tracking.models import ClickEvent, LeadEvent, SaleEvent

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def events(client, program, **params):
    return client.get(f"/api/tracking/events/{program.pk}", params)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link, customer_key="user_1")


def clicks(program, customer, minutes, *, is_test=False):
    return ClickEvent.objects.bulk_create(
        ClickEvent(
            program=program, customer=customer, click_id=customer.click_id, click_timestamp=at(m), is_test=is_test
        )
        for m in minutes
    )


def leads(program, customer, minutes, *, is_test=False):
    return LeadEvent.objects.bulk_create(
        LeadEvent(program=program, customer=customer, click_id=customer.click_id, lead_timestamp=at(m), is_test=is_test)
        for m in minutes
    )


def sales(program, customer, minutes, *, is_test=False):
    return SaleEvent.objects.bulk_create(
        SaleEvent(
            program=program,
            customer=customer,
            click_id=customer.click_id,
            processor_event_id=f"txn_{'t' if is_test else 'l'}_{m}",
            amount_cents=1000 + m,
            sale_date=at(m),
            is_test=is_test,
        )
        for m in minutes
    )


def kinds_and_times(body) -> list[tuple[str, str]]:
    return [(item["event_type"], item["timestamp"]) for item in body["data"]]


class TestShape:
    def test_each_type_carries_the_specs_fields(self, owner, program, link):
        customer = CustomerFactory(link=link, customer_key="user_1")
        click = ClickEvent.objects.create(
            program=program,
            customer=customer,
            click_id=customer.click_id,
            session_id="sess",
            page_url="https://shop.example.com/?aff=x",
            referrer_url="https://news.example.org/",
            geo_country="DE",
            geo_region="Berlin",
            geo_city="Berlin",
            device_type="mobile",
            device_os="iOS",
            browser_name="Mobile Safari",
            click_timestamp=at(1),
            created_at=at(2),
        )
        lead = LeadEvent.objects.create(
            program=program,
            customer=customer,
            click_id=customer.click_id,
            customer_key="user_1",
            session_id="sess",
            page_url="https://shop.example.com/signup",
            lead_timestamp=at(3),
            created_at=at(3),
        )
        sale = SaleEvent.objects.create(
            program=program,
            customer=customer,
            click_id=customer.click_id,
            processor_event_id="txn_1",
            amount_cents=4900,
            currency="EUR",
            sale_type="subscription",
            is_recurring=True,
            sale_date=at(4),
            created_at=at(5),
        )

        response = events(owner, program)

        assert response.status_code == 200
        assert response.json() == {
            "data": [
                {
                    "id": sale.pk,
                    "event_type": "conversion",
                    "timestamp": at(4).isoformat(),
                    "click_id": customer.click_id,
                    "amount_cents": 4900,
                    "currency": "EUR",
                    "sale_type": "subscription",
                    "payment_status": "paid",
                    "processor_event_id": "txn_1",
                    "is_recurring": True,
                    "createdAt": at(5).isoformat(),
                },
                {
                    "id": lead.pk,
                    "event_type": "lead",
                    "timestamp": at(3).isoformat(),
                    "click_id": customer.click_id,
                    "customer_key": "user_1",
                    "session_id": "sess",
                    "page_url": "https://shop.example.com/signup",
                    "converted": False,
                    "createdAt": at(3).isoformat(),
                },
                {
                    "id": click.pk,
                    "event_type": "click",
                    "timestamp": at(1).isoformat(),
                    "click_id": customer.click_id,
                    "session_id": "sess",
                    "page_url": "https://shop.example.com/?aff=x",
                    "referrer_url": "https://news.example.org/",
                    "geo_country": "DE",
                    "geo_region": "Berlin",
                    "geo_city": "Berlin",
                    "device_type": "mobile",
                    "device_os": "iOS",
                    "browser_name": "Mobile Safari",
                    "converted": False,
                    "createdAt": at(2).isoformat(),
                },
            ],
            "meta": {"pagination": {"page": 1, "pageSize": 10, "pageCount": 1, "total": 3}},
        }

    def test_converted_follows_the_customers_first_real_sale(self, owner, program, link):
        buyer = CustomerFactory(link=link, first_sale_at=at(10))
        browser = CustomerFactory(link=link)
        clicks(program, buyer, [1])
        clicks(program, browser, [2])
        leads(program, buyer, [3])
        leads(program, browser, [4])
        # A click whose customer is gone (SET_NULL) is listed, not converted.
        ClickEvent.objects.create(program=program, customer=None, click_id="gone", click_timestamp=at(5))
        body = events(owner, program).json()
        assert [(item["click_id"], item["converted"]) for item in body["data"]] == [
            ("gone", False),
            (browser.click_id, False),
            (buyer.click_id, True),
            (browser.click_id, False),
            (buyer.click_id, True),
        ]

    def test_test_events_and_other_programs_events_are_left_out(self, owner, program, customer):
        clicks(program, customer, [1])
        clicks(program, customer, [2], is_test=True)
        leads(program, customer, [3], is_test=True)
        sales(program, customer, [4], is_test=True)
        other_customer = CustomerFactory(link=ReferralLinkFactory(program=ProgramFactory()))
        clicks(other_customer.program, other_customer, [5])
        body = events(owner, program).json()
        assert kinds_and_times(body) == [("click", at(1).isoformat())]
        assert body["meta"]["pagination"]["total"] == 1

    def test_equal_times_list_the_later_funnel_step_first(self, owner, program, customer):
        clicks(program, customer, [1, 1])
        leads(program, customer, [1])
        sales(program, customer, [1])
        body = events(owner, program).json()
        assert [item["event_type"] for item in body["data"]] == ["conversion", "lead", "click", "click"]
        click_ids = [item["id"] for item in body["data"] if item["event_type"] == "click"]
        assert click_ids == sorted(click_ids, reverse=True)

    def test_no_events_is_an_empty_first_page(self, owner, program):
        assert events(owner, program).json() == {
            "data": [],
            "meta": {"pagination": {"page": 1, "pageSize": 10, "pageCount": 0, "total": 0}},
        }

    def test_a_member_may_list(self, sign_in, program, customer):
        clicks(program, customer, [1])
        assert events(sign_in(program, Role.MEMBER), program).json()["meta"]["pagination"]["total"] == 1


class TestCap:
    """pageSize 2: each type is read 6 rows deep. 8 of each type exist."""

    @pytest.fixture
    def loaded(self, program, customer):
        clicks(program, customer, range(0, 80, 10))  # 0, 10, ..., 70
        leads(program, customer, range(1, 81, 10))  # 1, 11, ..., 71
        sales(program, customer, range(2, 82, 10))  # 2, 12, ..., 72

    def test_one_type_is_capped_at_three_page_sizes(self, owner, program, loaded):
        body = events(owner, program, eventType="click", pageSize=2).json()
        assert body["meta"]["pagination"] == {"page": 1, "pageSize": 2, "pageCount": 3, "total": 6}
        assert kinds_and_times(body) == [("click", at(70).isoformat()), ("click", at(60).isoformat())]
        last = events(owner, program, eventType="click", pageSize=2, page=3).json()
        assert kinds_and_times(last) == [("click", at(30).isoformat()), ("click", at(20).isoformat())]

    def test_pages_past_the_cap_are_empty_even_though_older_events_exist(self, owner, program, loaded):
        body = events(owner, program, eventType="click", pageSize=2, page=4).json()
        assert body == {"data": [], "meta": {"pagination": {"page": 4, "pageSize": 2, "pageCount": 3, "total": 6}}}

    def test_all_types_merge_up_to_nine_page_sizes(self, owner, program, loaded):
        pages = [events(owner, program, pageSize=2, page=page).json() for page in range(1, 11)]
        assert pages[0]["meta"]["pagination"] == {"page": 1, "pageSize": 2, "pageCount": 9, "total": 18}
        merged = [pair for page in pages for pair in kinds_and_times(page)]
        expected = [
            (kind, at(minute).isoformat())
            for base in range(70, 10, -10)  # the 6 newest of each type: 70 .. 20
            for kind, minute in (("conversion", base + 2), ("lead", base + 1), ("click", base))
        ]
        assert merged == expected
        assert pages[9]["data"] == []

    def test_the_merged_set_is_not_the_overall_newest_when_one_type_dominates(self, owner, program, customer):
        # 10 recent clicks and 1 old lead: the lead is inside the merged set although older clicks exist.
        clicks(program, customer, range(100, 110))
        leads(program, customer, [1])
        body = events(owner, program, pageSize=2, page=4).json()
        assert body["meta"]["pagination"]["total"] == 7
        assert kinds_and_times(body) == [("lead", at(1).isoformat())]

    def test_narrowing_the_window_reaches_older_events(self, owner, program, loaded):
        body = events(owner, program, eventType="click", pageSize=2, dateTo=at(15).isoformat()).json()
        assert kinds_and_times(body) == [("click", at(10).isoformat()), ("click", at(0).isoformat())]
        assert body["meta"]["pagination"]["total"] == 2

    def test_the_query_count_does_not_grow_with_the_table(self, owner, program, loaded, django_assert_num_queries):
        # 1 session, 2 user, 3 program, 4 membership,
        # 5 clicks, 6 leads, 7 sales: each newest first LIMIT 3 x pageSize, the customer LEFT JOINed for
        # `converted` on clicks and leads (never a query per row)
        with django_assert_num_queries(7):
            assert events(owner, program, pageSize=2).status_code == 200
        customer = CustomerFactory(link=ReferralLinkFactory(program=program), first_sale_at=at(0))
        clicks(program, customer, range(200, 260))
        with django_assert_num_queries(7):
            body = events(owner, program, pageSize=100).json()
        assert body["meta"]["pagination"]["total"] == (60 + 8) + 8 + 8

    def test_one_type_is_one_query(self, owner, program, loaded, django_assert_num_queries):
        # 1 session, 2 user, 3 program, 4 membership, 5 leads
        with django_assert_num_queries(5):
            assert events(owner, program, eventType="lead").status_code == 200


class TestDateBounds:
    @pytest.fixture
    def days(self, program, customer):
        # One click, lead and sale at noon on Jan 1, 2 and 3.
        for day in (0, 1, 2):
            minute = day * 24 * 60 + 12 * 60
            clicks(program, customer, [minute])
            leads(program, customer, [minute])
            sales(program, customer, [minute])

    def test_dates_bound_whole_days_inclusive(self, owner, program, days):
        body = events(owner, program, dateFrom="2025-01-02", dateTo="2025-01-02").json()
        assert {item["timestamp"][:10] for item in body["data"]} == {"2025-01-02"}
        assert body["meta"]["pagination"]["total"] == 3

    def test_date_times_are_inclusive_bounds(self, owner, program, days):
        noon_2 = "2025-01-02T12:00:00+00:00"
        body = events(owner, program, eventType="lead", dateFrom=noon_2, dateTo=noon_2).json()
        assert kinds_and_times(body) == [("lead", noon_2)]

    def test_a_zulu_or_naive_time_is_utc_and_an_offset_is_honoured(self, owner, program, days):
        def total(**params):
            return events(owner, program, eventType="click", **params).json()["meta"]["pagination"]["total"]

        assert total(dateFrom="2025-01-02T12:00:00Z") == 2
        assert total(dateFrom="2025-01-02T12:00:00") == 2
        assert total(dateFrom="2025-01-02T12:00:01") == 1
        assert total(dateFrom="2025-01-02T13:00:00+01:00") == 2  # 12:00 UTC
        # An unencoded "+" arrives as a space.
        assert (
            owner.get(f"/api/tracking/events/{program.pk}?eventType=click&dateFrom=2025-01-02T13:00:00+01:00").json()[
                "meta"
            ]["pagination"]["total"]
            == 2
        )

    def test_only_a_lower_or_upper_bound(self, owner, program, days):
        assert events(owner, program, dateFrom="2025-01-03").json()["meta"]["pagination"]["total"] == 3
        assert events(owner, program, dateTo="2025-01-01").json()["meta"]["pagination"]["total"] == 3


class TestValidation:
    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"page": "0"}, "page must be a positive integer"),
            ({"page": "-1"}, "page must be a positive integer"),
            ({"page": "2.0"}, "page must be a positive integer"),
            ({"page": "two"}, "page must be a positive integer"),
            ({"pageSize": "0"}, "pageSize must be a positive integer"),
            ({"pageSize": "1e3"}, "pageSize must be a positive integer"),
            ({"pageSize": "101"}, "pageSize must be at most 100"),
            ({"pageSize": "9" * 40}, "pageSize must be at most 100"),
            ({"pageSize": "9" * 5000}, "pageSize must be at most 100"),
            ({"eventType": "sale"}, "eventType must be one of click, lead, conversion"),
            ({"eventType": "CLICK"}, "eventType must be one of click, lead, conversion"),
            ({"dateFrom": "yesterday"}, "dateFrom must be an ISO 8601 date or date-time"),
            ({"dateFrom": "2025-02-30"}, "dateFrom must be an ISO 8601 date or date-time"),
            ({"dateTo": "2025-13-01T00:00:00Z"}, "dateTo must be an ISO 8601 date or date-time"),
            ({"dateTo": "20250101"}, "dateTo must be an ISO 8601 date or date-time"),
            ({"dateFrom": "2025-01-03", "dateTo": "2025-01-02"}, "dateFrom must not be after dateTo"),
            (
                {"dateFrom": "2025-01-02T00:00:01Z", "dateTo": "2025-01-02T00:00:00Z"},
                "dateFrom must not be after dateTo",
            ),
        ],
    )
    def test_it_refuses_bad_parameters_with_a_clear_400(self, owner, program, params, message):
        response = events(owner, program, **params)
        assert response.status_code == 400
        assert response.json() == bad_request(message)

    def test_empty_parameters_mean_the_default(self, owner, program, customer):
        clicks(program, customer, [1])
        body = events(owner, program, page="", pageSize="", eventType="", dateFrom="", dateTo="").json()
        assert body["meta"]["pagination"] == {"page": 1, "pageSize": 10, "pageCount": 1, "total": 1}

    def test_the_largest_page_size_is_accepted(self, owner, program):
        assert events(owner, program, pageSize="100").status_code == 200

    def test_a_page_far_past_the_end_is_empty(self, owner, program, customer):
        clicks(program, customer, [1])
        body = events(owner, program, page="9" * 30).json()
        assert body["data"] == [] and body["meta"]["pagination"]["total"] == 1

    def test_the_same_day_as_both_bounds_is_fine(self, owner, program):
        assert events(owner, program, dateFrom="2025-01-02", dateTo="2025-01-02").status_code == 200


def test_a_server_failure_is_a_500_in_the_envelope(owner, program, monkeypatch):
    def boom(**kwargs):
        raise RuntimeError("database password=hunter2")

    monkeypatch.setattr("dashboard.api.views.tracking_events_list", boom)
    response = events(owner, program)
    assert response.status_code == 500
    assert response.json() == {
        "data": None,
        "error": {"status": 500, "name": "InternalServerError", "message": "Internal server error", "details": {}},
    }
    assert response["X-Request-ID"]
