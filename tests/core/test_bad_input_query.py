"""Numbers outside the body: page numbers, path ids and query parameters of the dashboard pages, the dashboard
API and the CLI routes. Digits of other scripts ("²" passes str.isdigit() and then int() raises; "١" is read as 1)
and numbers past a bigint are refused or fall back the way a malformed value does, never a 500."""

import pytest
from django.test import Client

from cli_api.services import cli_token_create
from core import messages
from core.ids import MAX_BIGINT, id_parse, integer_parse, page_number_parse
from programs.models import Program, Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

OTHER_DIGITS = ["²", "١", "１", "٣٠", "1²", "¹²"]
TOO_BIG = [str(2**63), "9" * 40, "9" * 5000]


@pytest.fixture
def program():
    return ProgramFactory()


@pytest.fixture
def owner(program):
    return MembershipFactory(workspace=program.workspace, role=Role.OWNER).user


@pytest.fixture
def page_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def api_owner(api_client, owner):
    api_client.force_login(owner)
    return api_client


class TestIdParsing:
    @pytest.mark.parametrize("value", OTHER_DIGITS + ["", " ", "1.0", "1e3", "+1", "0x10", "1_000", None, True, 1.0])
    def test_anything_but_ascii_digits_is_no_id(self, value):
        assert id_parse(value) is None

    @pytest.mark.parametrize(
        ("value", "expected"), [(7, 7), ("7", 7), (" 42 ", 42), ("007", 7), (MAX_BIGINT, MAX_BIGINT)]
    )
    def test_ascii_digits_and_integers_are_ids(self, value, expected):
        assert id_parse(value) == expected

    @pytest.mark.parametrize("value", [0, -1, "-1", MAX_BIGINT + 1, *TOO_BIG])
    def test_ids_are_positive_and_fit_a_bigint(self, value):
        assert id_parse(value) is None

    def test_integers_may_be_negative_when_asked(self):
        assert integer_parse("-12") == -12 and integer_parse("-12", minimum=0) is None

    @pytest.mark.parametrize("value", [None, "", "0", "-2", "²", "١", "abc", "9" * 40])
    def test_a_page_number_falls_back_to_1(self, value):
        assert page_number_parse(value) == 1


class TestDashboardPages:
    @pytest.mark.parametrize("page", OTHER_DIGITS + TOO_BIG + ["0", "-1", "abc"])
    @pytest.mark.parametrize("view", ["events", "partners", "commissions"])
    def test_a_malformed_page_shows_the_first_page(self, page_client, program, view, page):
        response = page_client.get(f"/programs/{program.pk}/{view}", {"page": page})
        assert response.status_code == 200

    def test_the_events_page_hands_the_first_page_to_the_table(self, page_client, program):
        response = page_client.get(f"/programs/{program.pk}/events", {"page": "²"})
        assert b'data-page="1"' in response.content

    @pytest.mark.parametrize("digits", OTHER_DIGITS)
    def test_a_program_id_in_other_digits_is_no_page(self, page_client, digits):
        assert page_client.get(f"/programs/{digits}/").status_code == 404


class TestDashboardApi:
    @pytest.mark.parametrize("page", OTHER_DIGITS + ["0", "1.0"])
    def test_events_refuse_a_page_in_other_digits(self, api_owner, program, page):
        response = api_owner.get(f"/api/tracking/events/{program.pk}", {"page": page})
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "page must be a positive integer"

    @pytest.mark.parametrize("size", OTHER_DIGITS)
    def test_events_refuse_a_page_size_in_other_digits(self, api_owner, program, size):
        response = api_owner.get(f"/api/tracking/events/{program.pk}", {"pageSize": size})
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "pageSize must be a positive integer"

    @pytest.mark.parametrize("page", TOO_BIG)
    def test_a_page_past_any_row_is_a_4xx_or_empty_never_an_overflow(self, api_owner, program, page):
        response = api_owner.get(f"/api/tracking/events/{program.pk}", {"page": page})
        assert response.status_code in (200, 400), response.content

    @pytest.mark.parametrize("route", ["status", "events", "performance", "readiness"])
    @pytest.mark.parametrize("digits", OTHER_DIGITS)
    def test_a_path_id_in_other_digits_names_no_program(self, api_owner, program, route, digits):
        """ "١" was int()-ed to 1: the owner of program 1 reached it under any script's digits."""
        path_id = str(program.pk).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")) if digits == "١" else digits
        response = api_owner.get(f"/api/tracking/{route}/{path_id}")
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "Program not found"

    @pytest.mark.parametrize("digits", OTHER_DIGITS)
    def test_a_body_program_id_in_other_digits_is_400(self, api_owner, digits):
        response = api_owner.post("/api/tracking/test", {"program_id": digits, "event_type": "click"}, format="json")
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "program_id must be an integer"

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("commission_rate", "1e30", messages.PROGRAM_RATE_NOT_POSITIVE),
            ("commission_rate", 1e300, messages.PROGRAM_RATE_NOT_POSITIVE),
            ("commission_rate", "10000000000", messages.PROGRAM_RATE_NOT_POSITIVE),
            ("duration_months", 10**12, messages.PROGRAM_DURATION_INVALID),
            ("duration_months", "١٢", messages.PROGRAM_DURATION_INVALID),
            ("cookie_duration", 10**30, messages.PROGRAM_COOKIE_INVALID),
            ("hold_days", "٣٠", "hold_days must be a whole number of days from 0 to 365"),
        ],
    )
    def test_settings_refuse_numbers_past_their_column(self, api_owner, program, field, value, message):
        program.commission_type = "fixed"
        program.save()
        response = api_owner.patch(f"/api/v1/programs/{program.pk}/settings", {field: value}, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["message"] == message
        assert Program.objects.get(pk=program.pk).commission_rate == program.commission_rate


class TestCliRoutes:
    @pytest.mark.parametrize("state", ["²", "١", "a" * 5000])
    def test_poll_with_an_odd_state_finds_no_session(self, api_client, state):
        response = api_client.get("/api/v1/cli/auth/poll", {"state": state})
        assert 400 <= response.status_code < 500

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("commission_rate", "1e30", messages.PROGRAM_RATE_NOT_POSITIVE),
            ("duration_months", 10**12, messages.PROGRAM_DURATION_INVALID),
            ("cookie_duration", "３０", messages.PROGRAM_COOKIE_INVALID),
        ],
    )
    def test_init_refuses_numbers_past_their_column(self, api_client, owner, field, value, message):
        api_client.credentials(**bearer(cli_token_create(user=owner)[1]))
        body = {"name": "Shop", "domain": "shop.test", "commission_type": "fixed", "commission_rate": 500}
        before = Program.objects.count()
        response = api_client.post("/api/v1/cli/init", {**body, field: value}, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["message"] == message
        assert Program.objects.count() == before

    @pytest.mark.parametrize("advertiser", ["²", "١", 10**30, -1])
    def test_init_refuses_an_advertiser_in_other_digits(self, api_client, owner, advertiser):
        api_client.credentials(**bearer(cli_token_create(user=owner)[1]))
        body = {"name": "Shop", "domain": "shop.test", "commission_type": "percent", "commission_rate": 10}
        response = api_client.post("/api/v1/cli/init", {**body, "advertiser_id": advertiser}, format="json")
        assert response.status_code == 403


class TestSvcClient:
    @pytest.mark.parametrize(("header", "expected"), [("30", 30), ("²", None), ("٣٠", None), ("", None)])
    def test_the_cli_reads_only_ascii_digits_in_retry_after(self, header, expected):
        """The svc client parsed Retry-After with str.isdigit() and int(): "²" from a proxy crashed it."""
        import httpx

        from svc_cli.client import _failure_from

        headers = {"Retry-After": header.encode()}
        response = httpx.Response(429, headers=headers, json={"error": {"message": "slow down"}})
        assert _failure_from(response).retry_after_seconds == expected


class TestTimesAtTheCalendarsEnds:
    """A date or time at the ends of the calendar is a bound like any other: the last day has no next midnight, and
    an offset can move a time out of the calendar once in UTC (refused like any malformed time), never a 500."""

    @pytest.mark.parametrize(
        "query",
        [
            "dateTo=9999-12-31",
            "dateFrom=9999-12-31",
            "dateFrom=0001-01-01&dateTo=9999-12-31",
            "dateTo=9999-12-31T23:59:59.999999Z",
            "dateFrom=0001-01-01T00:00:00Z",
        ],
    )
    def test_the_events_list_answers(self, api_owner, program, query):
        response = api_owner.get(f"/api/tracking/events/{program.pk}?{query}")
        assert response.status_code == 200

    @pytest.mark.parametrize(
        ("query", "message"),
        [
            ("dateFrom=0001-01-01T00:00:00%2B05:00", "dateFrom must be an ISO 8601 date or date-time"),
            ("dateTo=9999-12-31T23:00:00-05:00", "dateTo must be an ISO 8601 date or date-time"),
        ],
    )
    def test_a_time_out_of_the_calendar_in_utc_is_refused(self, api_owner, program, query, message):
        response = api_owner.get(f"/api/tracking/events/{program.pk}?{query}")
        assert response.status_code == 400
        assert response.json()["error"]["message"] == message

    @pytest.mark.parametrize("query", ["dateFrom=9999-12-31", "dateTo=0001-01-01", "dateFrom=9999-12-25"])
    def test_the_performance_report_answers(self, api_owner, program, query):
        assert api_owner.get(f"/api/tracking/performance/{program.pk}?{query}").status_code == 200

    def test_the_request_log_answers(self, api_owner, program):
        assert api_owner.get(f"/api/tracking/logs/{program.pk}?until=9999-12-31").status_code == 200
