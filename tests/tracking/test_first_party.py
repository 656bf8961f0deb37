"""First-party mode (tracking/api/first_party.py): a click or a visit that came through the shop's own proxy
(X-Forwarded-Prefix) answers with the svc_click_id cookie set by the server, with exact attributes; anything else
answers as before. The program's first-party calls are noted at most hourly, for readiness."""

import json
from http.cookies import SimpleCookie
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from programs.models import Program
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tracking.models import Customer, PageVisit
from tracking.services import first_party
from tracking.services.first_party import first_party_seen_forget

pytestmark = pytest.mark.django_db

CLICK_URL = "/api/v1/track/click"
VISIT_URL = "/api/v1/track/visit"
DAY = 86400
PREFIX = {"HTTP_X_FORWARDED_PREFIX": "/_svc"}
HTTPS = {"HTTP_X_FORWARDED_PROTO": "https"}
CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


@pytest.fixture(autouse=True)
def _nothing_noted_yet(settings):
    """Each test starts with no first-party call noted, in this process or in the (test's own) cache."""
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests-first-party"},
    }
    cache.clear()
    first_party_seen_forget()
    yield
    first_party_seen_forget()


@pytest.fixture
def program():
    return ProgramFactory(cookie_duration=45)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="summer")


def click(code: str = "summer", *, method: str = "POST", **headers: Any):
    body = {"affiliate_url": f"https://shop.example.com/pricing?aff={code}", "user_agent": CHROME}
    return Client().generic(method, CLICK_URL, _json(body), content_type="application/json", **headers)


def visit(program_id: int, click_id: str = "", **fields_and_headers):
    headers = {name: value for name, value in fields_and_headers.items() if name.isupper()}
    fields = {name: value for name, value in fields_and_headers.items() if not name.isupper()}
    body = {"program_id": program_id, "click_id": click_id, "page_url": "https://shop.example.com/p", **fields}
    return Client().post(VISIT_URL, _json(body), content_type="application/json", **headers)


def _json(body: dict[str, Any]) -> str:
    return json.dumps(body)


def set_cookie(response) -> str | None:
    """The Set-Cookie header of svc_click_id as the server sends it (the WSGI handler writes each cookie so)."""
    cookie = response.cookies.get("svc_click_id")
    return cookie.output(header="").strip() if cookie is not None else None


class TestTheClickCookie:
    @pytest.mark.parametrize("window", [1, 30, 45, 90, 365])
    def test_a_first_party_click_sets_it_for_the_programs_window(self, window):
        link = ReferralLinkFactory(program=ProgramFactory(cookie_duration=window), short_link="summer")
        response = click(**PREFIX)
        assert response.status_code == 200
        click_id = response.json()["click_id"]
        assert Customer.objects.get(click_id=click_id).first_link_id == link.pk
        assert set_cookie(response) == f"svc_click_id={click_id}; Max-Age={window * DAY}; Path=/; SameSite=Lax"

    def test_the_body_is_the_same_as_without_the_proxy(self, link):
        plain, first_party = click().json(), click(**PREFIX).json()
        assert list(first_party) == list(plain) == ["success", "click_id", "partner_code", "cookie_window_days"]
        assert (first_party["partner_code"], first_party["cookie_window_days"]) == ("summer", 45)

    def test_it_is_never_httponly_and_the_browser_reads_it_back_as_sent(self, link):
        response = click(**PREFIX)
        parsed = SimpleCookie(set_cookie(response))["svc_click_id"]
        assert parsed.value == response.json()["click_id"]
        assert (parsed["httponly"], parsed["path"], parsed["samesite"], parsed["max-age"]) == (
            "",
            "/",
            "Lax",
            "3888000",
        )

    def test_secure_when_the_visitor_called_over_https(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 1
        response = click(**PREFIX, **HTTPS)
        click_id = response.json()["click_id"]
        assert set_cookie(response) == f"svc_click_id={click_id}; Max-Age={45 * DAY}; Path=/; SameSite=Lax; Secure"
        assert "Secure" not in set_cookie(click(**PREFIX, HTTP_X_FORWARDED_PROTO="http"))

    def test_secure_when_this_server_itself_was_called_over_https(self, link):
        assert set_cookie(click(**PREFIX, secure=True)).endswith("; SameSite=Lax; Secure")

    def test_with_no_trusted_proxy_the_forwarded_host_and_scheme_are_ignored(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 0
        settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com"
        response = click(**PREFIX, **HTTPS, HTTP_X_FORWARDED_HOST="www.example.com")
        click_id = response.json()["click_id"]
        assert set_cookie(response) == f"svc_click_id={click_id}; Max-Age={45 * DAY}; Path=/; SameSite=Lax"

    @pytest.mark.parametrize(
        ("shop_host", "domain"),
        [
            ("www.example.com", "example.com"),
            ("example.com", "example.com"),
            ("EXAMPLE.com:443", "example.com"),
            ("shop.other.test", None),  # not under it: a browser would drop a cookie with that Domain
            ("badexample.com", None),
        ],
    )
    def test_domain_when_set_and_the_shops_host_is_under_it(self, link, settings, shop_host, domain):
        settings.TRUSTED_PROXY_COUNT = 1
        settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com"
        response = click(**PREFIX, **HTTPS, HTTP_X_FORWARDED_HOST=shop_host)
        click_id = response.json()["click_id"]
        attributes = f"Domain={domain}; " if domain else ""
        expected = f"svc_click_id={click_id}; {attributes}Max-Age={45 * DAY}; Path=/; SameSite=Lax; Secure"
        assert set_cookie(response) == expected

    def test_several_domains_each_shop_takes_its_own(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 1
        settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com, .shop.test"
        response = click(**PREFIX, HTTP_X_FORWARDED_HOST="www.shop.test")
        assert SimpleCookie(set_cookie(response))["svc_click_id"]["domain"] == "shop.test"

    @pytest.mark.parametrize(
        ("forwarded_host", "domain"),
        [
            # Apache appends the Host the visitor asked for to whatever the client sent: the right-most is the proxy's.
            ("evil.example, shop.example", "shop.example"),
            ("www.example.com, shop.example", "shop.example"),
            ("www.example.com,shop.example", "shop.example"),
            ("shop.example, evil.example", None),
            ("shop.example, www.example.com:443", "example.com"),
        ],
    )
    def test_an_appended_forwarded_host_is_read_by_the_value_the_proxy_added(
        self, link, settings, forwarded_host, domain
    ):
        settings.TRUSTED_PROXY_COUNT = 1
        settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com, shop.example"
        response = click(**PREFIX, HTTP_X_FORWARDED_HOST=forwarded_host)
        assert SimpleCookie(set_cookie(response))["svc_click_id"]["domain"] == (domain or "")

    def test_an_appended_forwarded_proto_is_read_by_the_value_the_proxy_added(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 1
        assert "Secure" not in set_cookie(click(**PREFIX, HTTP_X_FORWARDED_PROTO="https, http"))
        assert set_cookie(click(**PREFIX, HTTP_X_FORWARDED_PROTO="http, https")).endswith("; Secure")

    def test_no_domain_when_the_setting_is_empty(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 1
        settings.FIRST_PARTY_COOKIE_DOMAIN = ""
        assert "Domain" not in set_cookie(click(**PREFIX, HTTP_X_FORWARDED_HOST="www.example.com"))


class TestNoCookie:
    def test_without_x_forwarded_prefix(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 1
        settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com"
        response = click(**HTTPS, HTTP_X_FORWARDED_HOST="www.example.com")
        assert response.status_code == 200 and not response.cookies
        assert not click(HTTP_X_FORWARDED_PREFIX=" ").cookies

    @pytest.mark.parametrize(
        ("code", "status"),
        [("nobody", 400), ("paused", 410), ("%00", 400)],
        ids=["an unknown link", "a paused link", "a broken URL"],
    )
    def test_on_a_refused_click(self, link, code, status):
        ReferralLinkFactory(program=link.program, short_link="paused", is_active=False)
        response = click(code, **PREFIX)
        assert response.status_code == status and not response.cookies

    def test_on_a_click_without_aff(self, link):
        body = {"affiliate_url": "https://shop.example.com/pricing"}
        response = Client().post(CLICK_URL, _json(body), content_type="application/json", **PREFIX)
        assert response.status_code == 400 and not response.cookies

    def test_on_a_click_of_a_link_whose_partner_is_gone(self, link):
        ReferralLinkFactory(program=link.program, short_link="orphan", partner=None)
        response = click("orphan", **PREFIX)
        assert response.status_code == 400 and not response.cookies

    def test_on_a_bots_click_which_attributes_nothing(self, link):
        body = {"affiliate_url": "https://shop.example.com/?aff=summer", "user_agent": "Googlebot/2.1"}
        response = Client().post(CLICK_URL, _json(body), content_type="application/json", **PREFIX)
        assert response.status_code == 200 and response.json()["click_id"] and not response.cookies

    def test_on_a_head_request(self, link):
        response = click(method="HEAD", **PREFIX)
        assert response.status_code == 200 and not response.cookies

    def test_on_a_test_click_whose_id_the_tracker_keeps(self, link):
        body = {"affiliate_url": "https://shop.example.com/?aff=summer", "additional_data": {"test_mode": True}}
        response = Client().post(CLICK_URL, _json(body), content_type="application/json", **PREFIX)
        assert response.status_code == 200 and response.json()["data"]["click_id"] and not response.cookies

    def test_for_a_click_id_the_cookie_could_not_carry_as_it_is(self, link):
        body = {"affiliate_url": "https://shop.example.com/?aff=summer", "existing_click_id": "mine, with spaces"}
        response = Client().post(CLICK_URL, _json(body), content_type="application/json", **PREFIX)
        assert response.json()["click_id"] == "mine, with spaces" and not response.cookies

    def test_a_returning_visitors_click_sets_it_again(self, link):
        CustomerFactory(link=link, click_id="cust_returning")
        body = {"affiliate_url": "https://shop.example.com/?aff=summer", "existing_click_id": "cust_returning"}
        response = Client().post(CLICK_URL, _json(body), content_type="application/json", **PREFIX)
        assert set_cookie(response) == f"svc_click_id=cust_returning; Max-Age={45 * DAY}; Path=/; SameSite=Lax"


JUNK = [
    "x" * 8000,
    "/_svc\x01\x7f",
    "https\x00",
    "\u00e9\u202e",
    ",,,",
    "https, http",
    ":::",
    "[::1",
    "a" * 300 + ".com",
]


@pytest.mark.parametrize("value", JUNK, ids=range(len(JUNK)))
@pytest.mark.parametrize("header", ["HTTP_X_FORWARDED_PREFIX", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PROTO"])
def test_junk_forwarded_headers_are_never_a_500(link, settings, header, value):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com"
    for send in (
        lambda: click(**{**PREFIX, header: value}),
        lambda: visit(link.program_id, **{**PREFIX, header: value}),
    ):
        response = send()
        assert response.status_code < 500, response.content
        cookie = set_cookie(response)
        assert cookie is None or "Domain" not in cookie


class TestTheVisit:
    def test_a_first_party_visit_of_a_known_click_refreshes_the_cookie(self, link):
        customer = CustomerFactory(link=link, click_id="cust_known")
        response = visit(link.program_id, customer.click_id, **PREFIX)
        assert response.status_code == 200
        assert list(response.json()) == ["success", "visit_id"]
        assert set_cookie(response) == f"svc_click_id=cust_known; Max-Age={45 * DAY}; Path=/; SameSite=Lax"
        assert PageVisit.objects.get().click_id == "cust_known"

    def test_over_https_behind_a_trusted_proxy_with_the_domain(self, link, settings):
        settings.TRUSTED_PROXY_COUNT = 1
        settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com"
        CustomerFactory(link=link, click_id="cust_known")
        response = visit(link.program_id, "cust_known", **PREFIX, **HTTPS, HTTP_X_FORWARDED_HOST="www.example.com")
        expected = f"svc_click_id=cust_known; Domain=example.com; Max-Age={45 * DAY}; Path=/; SameSite=Lax; Secure"
        assert set_cookie(response) == expected

    def test_a_visit_without_the_proxy_refreshes_nothing(self, link):
        CustomerFactory(link=link, click_id="cust_known")
        response = visit(link.program_id, "cust_known")
        assert response.status_code == 200 and not response.cookies

    @pytest.mark.parametrize("click_id", ["", "cust_nobody", "cust_other", "cust_test_customer"])
    def test_only_a_click_id_the_service_accepts_for_the_program(self, link, click_id):
        CustomerFactory(link=ReferralLinkFactory(), click_id="cust_other")  # another program's
        CustomerFactory(link=link, click_id="cust_test_customer", is_test=True)
        response = visit(link.program_id, click_id, **PREFIX)
        assert response.status_code == 200 and not response.cookies
        assert PageVisit.objects.get().click_id == click_id  # stored as sent, as ever

    def test_a_test_mode_visit_refreshes_nothing(self, link):
        CustomerFactory(link=link, click_id="cust_known")
        response = visit(link.program_id, "cust_known", additional_data={"test_mode": True}, **PREFIX)
        assert response.status_code == 200 and not response.cookies

    def test_a_refused_visit_sets_nothing(self, link):
        CustomerFactory(link=link, click_id="cust_known")
        response = visit(999999, "cust_known", **PREFIX)
        assert response.status_code == 400 and not response.cookies

    def test_it_costs_one_query_more_only_with_a_click_id_through_the_proxy(self, link):
        CustomerFactory(link=link, click_id="cust_known")
        visit(link.program_id, **PREFIX)  # the program's first-party call noted (one UPDATE, once an hour)

        def queries(**kwargs) -> int:
            with CaptureQueriesContext(connection) as captured:
                assert visit(link.program_id, **kwargs).status_code == 200
            return len(captured.captured_queries)

        plain = queries(click_id="cust_known")
        assert queries(**PREFIX) == plain
        assert queries(click_id="cust_known", **PREFIX) == plain + 1  # the customer and the program's window


class TestFirstPartyCallsNoted:
    def seen(self, program) -> object:
        return Program.objects.values_list("first_party_seen_at", flat=True).get(pk=program.pk)

    def test_a_first_party_click_notes_the_program(self, link, program):
        assert self.seen(program) is None
        click()
        assert self.seen(program) is None
        click(**PREFIX)
        assert self.seen(program) is not None

    def test_a_first_party_visit_notes_the_program(self, program):
        visit(program.pk, **PREFIX)
        assert self.seen(program) is not None

    def test_a_refused_click_notes_nothing(self, link, program):
        click("nobody", **PREFIX)
        assert self.seen(program) is None

    def test_at_most_once_an_hour_whichever_process_answers(self, link, program):
        click(**PREFIX)
        first = self.seen(program)
        updates = self.updates_during(lambda: click(**PREFIX))
        assert updates == [] and self.seen(program) == first
        first_party_seen_forget()  # another process: the cache still says it was noted this hour
        assert self.updates_during(lambda: click(**PREFIX)) == []
        cache.delete(first_party.SEEN_CACHE_KEY.format(program_id=program.pk))  # the hour is over
        first_party_seen_forget()
        assert len(self.updates_during(lambda: click(**PREFIX))) == 1

    def test_a_failing_cache_fails_no_click(self, link, program, monkeypatch):
        class Down:
            def add(self, *args: object, **kwargs: object) -> bool:
                raise ConnectionError("cache down")

        monkeypatch.setattr("tracking.services.first_party.cache", Down())
        response = click(**PREFIX)
        assert response.status_code == 200 and set_cookie(response)

    @staticmethod
    def updates_during(action) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            action()
        table = Program._meta.db_table
        return [q["sql"] for q in captured.captured_queries if q["sql"].startswith(f'UPDATE "{table}"')]


class TestTheClickHotPath:
    def test_a_first_party_click_costs_no_query_more_once_noted(self, link):
        click()  # the link and the program's rules are cached
        click(**PREFIX)  # the program's first-party call noted (one UPDATE, once an hour)

        def statements(**headers: Any) -> list[str]:
            with CaptureQueriesContext(connection) as captured:
                assert click(**headers).status_code == 200
            return [q["sql"].split()[0] for q in captured.captured_queries]

        assert statements(**PREFIX, **HTTPS, HTTP_X_FORWARDED_HOST="www.example.com") == statements()

    def test_the_click_is_answered_by_the_lean_path(self, link, monkeypatch):
        from tracking.api import lean

        handed: list[object] = []
        monkeypatch.setattr(lean, "drf_track_click", handed.append)
        assert set_cookie(click(**PREFIX)) and handed == []
