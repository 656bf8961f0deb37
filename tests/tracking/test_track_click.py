"""POST /api/v1/track/click through the HTTP API: the spec's click rules, errors, limits and hot path."""

import re
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core import messages, sql
from core.sql import capabilities
from programs.models import ApiCall, PartnerProgram, ProgramKey
from programs.services import program_key_mark_rotation
from tests.factories import CustomerFactory, PartnerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW, assert_rate_limited, bad_request, bearer, platform_error
from tracking.enrichment import Geo
from tracking.models import ClickEvent, Customer, TrackingLog
from tracking.rollups import clicks_not_on_counters, link_click_counts, rollup_read, with_clicks_not_counted

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/click"
GB_IP = "81.2.69.160"  # GeoLite2 (bundled): GB / England / Willesden
US_IP = "2001:4860:4860::8888"  # GeoLite2 (bundled): US / California / Mountain View
GB_GEO = ("GB", "England", "Willesden")
US_GEO = ("US", "California", "Mountain View")
NO_GEO = ("", "", "")
IPHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
WINDOWS_CHROME_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
)
IPAD_UA = (
    "Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1"
)


def aff_url(code: str, param: str = "aff") -> str:
    return f"https://shop.example.com/pricing?{param}={code}"


def post_click(api_client, body: dict[str, Any], **extra):
    return api_client.post(URL, body, format="json", **extra)


def partner_program_clicks(link) -> int:
    """The partner's clicks in the program as every page reads them: its counter plus the clicks the rollup task
    has not added to it yet."""
    counter = PartnerProgram.objects.get(partner=link.partner, program=link.program).clicks
    more = rollup_read(lambda marks: clicks_not_on_counters(marks, program_id=link.program_id))
    return with_clicks_not_counted(counter, None, [row for row in more if row["partner_id"] == link.partner_id]).clicks


def link_clicks(link) -> tuple[int, datetime | None]:
    """The link's clicks and latest click as every page reads them (counters plus the clicks not on them yet)."""
    count = link_click_counts([link.pk])[link.pk]
    return count.clicks, count.last_clicked


def geo_of(event: ClickEvent) -> tuple[str, str, str]:
    return (event.geo_country, event.geo_region, event.geo_city)


def assert_nothing_recorded(link=None) -> None:
    assert not Customer.objects.exists()
    assert not ClickEvent.objects.exists()
    if link is not None:
        link.refresh_from_db()
        assert link_clicks(link)[0] == 0
        assert link_clicks(link)[1] is None
        if link.partner_id and link.program_id:
            assert partner_program_clicks(link) == 0


@pytest.fixture
def program():
    return ProgramFactory(cookie_duration=45)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="summer")


class TestSuccess:
    def test_it_answers_the_click_id_partner_code_and_cookie_window(self, api_client, link, program):
        response = post_click(api_client, {"affiliate_url": aff_url("summer")})
        assert response.status_code == 200
        customer = Customer.objects.get()
        assert response.json() == {
            "success": True,
            "click_id": customer.click_id,
            "partner_code": "summer",
            "cookie_window_days": 45,
        }
        assert re.fullmatch(rf"cust_{program.pk}_\d+\S*", customer.click_id)

    def test_it_creates_a_clicked_customer_of_the_links_program_and_partner(self, api_client, link, program):
        post_click(api_client, {"affiliate_url": aff_url("summer")})
        customer = Customer.objects.get()
        assert customer.program == program
        assert customer.customer_status == "click"
        assert customer.first_partner == link.partner
        assert customer.first_link == link
        assert customer.customer_key is None
        assert customer.is_test is False

    def test_it_stores_the_click_event_with_the_request_fields(self, api_client, link, program):
        before = timezone.now()
        response = post_click(
            api_client,
            {
                "affiliate_url": aff_url("summer"),
                "page_url": "https://shop.example.com/pricing",
                "page_title": "Pricing",
                "referrer_url": "https://blog.example.org/review",
                "session_id": "sess-1",
                "screen_resolution": "1920x1080",
                "viewport_size": "1280x720",
                "language": "en-GB",
                "timezone": "Europe/London",
            },
            HTTP_USER_AGENT=WINDOWS_CHROME_UA,
        )
        event = ClickEvent.objects.get()
        customer = Customer.objects.get()
        assert event.program == program
        assert event.partner == link.partner
        assert event.link == link
        assert event.customer == customer
        assert event.click_id == response.json()["click_id"] == customer.click_id
        assert event.page_url == "https://shop.example.com/pricing"
        assert event.page_title == "Pricing"
        assert event.referrer_url == "https://blog.example.org/review"
        assert event.session_id == "sess-1"
        assert event.screen_resolution == "1920x1080"
        assert event.viewport_size == "1280x720"
        assert event.language == "en-GB"
        assert event.timezone == "Europe/London"
        assert event.user_agent == WINDOWS_CHROME_UA
        assert event.is_test is False
        assert before <= event.click_timestamp <= timezone.now()

    def test_it_counts_the_click_on_the_link_and_the_partner_program(self, api_client, link):
        before = timezone.now()
        post_click(api_client, {"affiliate_url": aff_url("summer")})
        link.refresh_from_db()
        assert link_clicks(link)[0] == 1
        assert before <= link_clicks(link)[1] <= timezone.now()
        assert partner_program_clicks(link) == 1

        # Another visitor (another address): the same visitor again within the hour would be a duplicate.
        post_click(api_client, {"affiliate_url": aff_url("summer")}, REMOTE_ADDR="203.0.113.9")
        link.refresh_from_db()
        assert link_clicks(link)[0] == 2
        assert partner_program_clicks(link) == 2
        assert Customer.objects.count() == 2  # no existing_click_id: each click is a new customer

    def test_the_same_visitor_again_within_the_hour_is_recorded_but_not_counted(self, api_client, link):
        first = post_click(api_client, {"affiliate_url": aff_url("summer")})
        again = post_click(api_client, {"affiliate_url": aff_url("summer")})
        assert first.status_code == again.status_code == 200
        assert [event.traffic for event in ClickEvent.objects.order_by("pk")] == ["", "duplicate"]
        assert link_clicks(link)[0] == 1
        assert partner_program_clicks(link) == 1

    def test_it_accepts_the_via_alias(self, api_client, link):
        response = post_click(api_client, {"affiliate_url": aff_url("summer", param="via")})
        assert response.status_code == 200
        assert response.json()["partner_code"] == "summer"

    @pytest.mark.parametrize("query", ["aff=alpha&via=beta", "via=beta&aff=alpha"])
    def test_it_lets_aff_win_when_both_are_present(self, api_client, program, query):
        alpha = ReferralLinkFactory(program=program, short_link="alpha")
        ReferralLinkFactory(program=program, short_link="beta")
        response = post_click(api_client, {"affiliate_url": f"https://shop.example.com/?{query}"})
        assert response.json()["partner_code"] == "alpha"
        assert ClickEvent.objects.get().link == alpha

    def test_it_lets_aff_win_even_when_only_the_via_code_exists(self, api_client, link):
        response = post_click(api_client, {"affiliate_url": "https://shop.example.com/?aff=nobody&via=summer"})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.REFERRAL_LINK_NOT_FOUND)
        assert_nothing_recorded(link)

    def test_it_finds_the_code_in_any_program_without_program_id(self, api_client):
        other_link = ReferralLinkFactory(short_link="elsewhere")
        response = post_click(api_client, {"affiliate_url": aff_url("elsewhere")})
        assert response.status_code == 200
        assert Customer.objects.get().program == other_link.program


class TestUserAgentAndDevice:
    def test_it_falls_back_to_the_user_agent_header(self, api_client, link):
        post_click(api_client, {"affiliate_url": aff_url("summer")}, HTTP_USER_AGENT=IPHONE_UA)
        assert ClickEvent.objects.get().user_agent == IPHONE_UA

    def test_it_prefers_the_body_user_agent_to_the_header(self, api_client, link):
        post_click(
            api_client,
            {"affiliate_url": aff_url("summer"), "user_agent": WINDOWS_CHROME_UA},
            HTTP_USER_AGENT=IPHONE_UA,
        )
        event = ClickEvent.objects.get()
        assert event.user_agent == WINDOWS_CHROME_UA
        assert (event.device_type, event.device_os, event.browser_name) == ("desktop", "Windows", "Chrome")

    @pytest.mark.parametrize(
        ("user_agent", "device"),
        [
            (IPHONE_UA, ("mobile", "iOS", "Mobile Safari")),
            (WINDOWS_CHROME_UA, ("desktop", "Windows", "Chrome")),
            (IPAD_UA, ("tablet", "iOS", "Mobile Safari")),
            ("Googlebot/2.1 (+http://www.google.com/bot.html)", ("bot", "Other", "Googlebot")),
        ],
    )
    def test_it_derives_device_type_os_and_browser(self, api_client, link, user_agent, device):
        post_click(api_client, {"affiliate_url": aff_url("summer"), "user_agent": user_agent})
        event = ClickEvent.objects.get()
        assert (event.device_type, event.device_os, event.browser_name) == device

    def test_it_leaves_the_device_empty_without_any_user_agent(self, api_client, link):
        post_click(api_client, {"affiliate_url": aff_url("summer")})
        event = ClickEvent.objects.get()
        assert (event.user_agent, event.device_type, event.device_os, event.browser_name) == ("", "", "", "")


class TestErrors:
    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, messages.AFFILIATE_URL_REQUIRED),
            ({"affiliate_url": ""}, messages.AFFILIATE_URL_REQUIRED),
            ({"affiliate_url": None}, messages.AFFILIATE_URL_REQUIRED),
            ({"affiliate_url": "not a url"}, messages.INVALID_AFFILIATE_URL),
            ({"affiliate_url": "shop.example.com/?aff=summer"}, messages.INVALID_AFFILIATE_URL),
            ({"affiliate_url": "ftp://shop.example.com/?aff=summer"}, messages.INVALID_AFFILIATE_URL),
            ({"affiliate_url": 42}, messages.INVALID_AFFILIATE_URL),
            ({"affiliate_url": "https://shop.example.com/pricing"}, messages.NO_AFF_PARAMETER),
            ({"affiliate_url": "https://shop.example.com/?aff=&via="}, messages.NO_AFF_PARAMETER),
            ({"affiliate_url": "https://shop.example.com/?ref=summer"}, messages.NO_AFF_PARAMETER),
            ({"affiliate_url": aff_url("nobody")}, messages.REFERRAL_LINK_NOT_FOUND),
        ],
    )
    def test_it_answers_400_in_the_platform_envelope_and_records_nothing(self, api_client, link, body, message):
        response = post_click(api_client, body)
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        assert_nothing_recorded(link)

    def test_it_refuses_a_link_without_partner_as_invalid_configuration(self, api_client, program):
        link = ReferralLinkFactory(program=program, partner=None, short_link="orphan")
        response = post_click(api_client, {"affiliate_url": aff_url("orphan")})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.INVALID_LINK_CONFIGURATION)
        assert_nothing_recorded(link)

    def test_it_refuses_a_link_without_program_as_invalid_configuration(self, api_client):
        link = ReferralLinkFactory(program=None, partner=PartnerFactory(), short_link="homeless")
        response = post_click(api_client, {"affiliate_url": aff_url("homeless")})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.INVALID_LINK_CONFIGURATION)
        assert_nothing_recorded(link)


class TestProgramId:
    @pytest.mark.parametrize("as_sent", ["int", "numeric string"])
    def test_it_scopes_the_lookup_to_the_program(self, api_client, link, program, as_sent):
        program_id = program.pk if as_sent == "int" else str(program.pk)
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "program_id": program_id})
        assert response.status_code == 200
        assert response.json()["partner_code"] == "summer"
        assert Customer.objects.get().program == program

    @pytest.mark.parametrize("program_id", [999999, "999999", 0, "abc", "-1"])
    def test_it_answers_unknown_program_id_for_an_id_that_is_not_a_program(self, api_client, link, program_id):
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "program_id": program_id})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.UNKNOWN_PROGRAM_ID)
        assert_nothing_recorded(link)

    def test_it_does_not_find_a_link_of_another_program(self, api_client, link):
        other = ProgramFactory()
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "program_id": other.pk})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.REFERRAL_LINK_NOT_FOUND)
        assert_nothing_recorded(link)


class TestInactiveLink:
    def test_it_answers_410_link_disabled_in_the_typed_body(self, api_client, program):
        ReferralLinkFactory(program=program, short_link="paused", is_active=False)
        response = post_click(api_client, {"affiliate_url": aff_url("paused")})
        assert response.status_code == 410
        assert response.json() == {
            "error": {
                "code": "link_disabled",
                "message": messages.LINK_DISABLED,
                "hint": messages.LINK_DISABLED_HINT,
            },
            "success": False,
            "message": messages.LINK_DISABLED,
        }

    def test_it_records_nothing(self, api_client, program):
        link = ReferralLinkFactory(program=program, short_link="paused", is_active=False)
        post_click(api_client, {"affiliate_url": aff_url("paused")})
        assert_nothing_recorded(link)

    def test_it_refuses_test_mode_too_and_records_nothing(self, api_client, program):
        link = ReferralLinkFactory(program=program, short_link="paused", is_active=False)
        response = post_click(api_client, {"affiliate_url": aff_url("paused"), "additional_data": {"test_mode": True}})
        assert response.status_code == 410
        assert_nothing_recorded(link)

    def test_it_works_again_when_turned_back_on(self, api_client, program):
        link = ReferralLinkFactory(program=program, short_link="paused", is_active=False)
        assert post_click(api_client, {"affiliate_url": aff_url("paused")}).status_code == 410
        link.is_active = True
        link.save(update_fields=["is_active"])
        response = post_click(api_client, {"affiliate_url": aff_url("paused")})
        assert response.status_code == 200
        assert response.json()["click_id"] == Customer.objects.get().click_id
        link.refresh_from_db()
        assert link_clicks(link)[0] == 1
        assert partner_program_clicks(link) == 1
        assert ClickEvent.objects.count() == 1


class TestExistingClickId:
    def test_it_reuses_the_customer_who_keeps_the_first_partner(self, api_client, program, link):
        customer = CustomerFactory(link=link)
        second = ReferralLinkFactory(program=program, short_link="winter")
        assert second.partner != link.partner

        response = post_click(api_client, {"affiliate_url": aff_url("winter"), "existing_click_id": customer.click_id})

        assert response.status_code == 200
        assert response.json() == {
            "success": True,
            "click_id": customer.click_id,
            "partner_code": "winter",
            "cookie_window_days": 45,
        }
        assert Customer.objects.count() == 1
        customer.refresh_from_db()
        assert customer.first_partner == link.partner
        assert customer.first_link == link
        assert customer.customer_status == "click"

    def test_it_records_the_click_for_the_new_partner(self, api_client, program, link):
        customer = CustomerFactory(link=link)
        second = ReferralLinkFactory(program=program, short_link="winter")
        post_click(api_client, {"affiliate_url": aff_url("winter"), "existing_click_id": customer.click_id})

        event = ClickEvent.objects.get()
        assert event.customer == customer
        assert event.click_id == customer.click_id
        assert event.partner == second.partner
        assert event.link == second
        second.refresh_from_db()
        assert link_clicks(second)[0] == 1
        assert partner_program_clicks(second) == 1
        assert partner_program_clicks(link) == 0

    def test_it_leaves_a_reused_customers_later_status_alone(self, api_client, link):
        customer = CustomerFactory(link=link, customer_status="lead", customer_key="user-1")
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "existing_click_id": customer.click_id})
        assert response.json()["click_id"] == customer.click_id
        customer.refresh_from_db()
        assert customer.customer_status == "lead"
        assert customer.customer_key == "user-1"

    def test_it_reuses_a_customer_of_that_program_with_program_id(self, api_client, program, link):
        customer = CustomerFactory(link=link)
        response = post_click(
            api_client,
            {
                "affiliate_url": aff_url("summer"),
                "existing_click_id": customer.click_id,
                "program_id": program.pk,
            },
        )
        assert response.json()["click_id"] == customer.click_id
        assert Customer.objects.count() == 1

    def test_it_does_not_reuse_a_customer_of_another_program_with_program_id(self, api_client, program, link):
        foreign = CustomerFactory(link=ReferralLinkFactory(short_link="abroad"))
        response = post_click(
            api_client,
            {
                "affiliate_url": aff_url("summer"),
                "existing_click_id": foreign.click_id,
                "program_id": program.pk,
            },
        )
        assert response.status_code == 200
        click_id = response.json()["click_id"]
        assert click_id != foreign.click_id
        created = Customer.objects.get(click_id=click_id)
        assert created.program == program
        assert created.first_partner == link.partner
        assert created.customer_status == "click"
        assert ClickEvent.objects.get().customer == created
        foreign_before = foreign.last_clicked_at
        foreign.refresh_from_db()
        assert foreign.program != program
        assert foreign.last_clicked_at == foreign_before

    def test_it_reuses_a_customer_of_another_program_without_program_id(self, api_client, link):
        # The spec restricts reuse to the program only "with program_id".
        foreign = CustomerFactory(link=ReferralLinkFactory(short_link="abroad"))
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "existing_click_id": foreign.click_id})
        assert response.json()["click_id"] == foreign.click_id
        assert Customer.objects.count() == 1

    def test_it_creates_the_customer_under_an_unknown_id(self, api_client, program, link):
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "existing_click_id": "cookie-abc-123"})
        assert response.status_code == 200
        assert response.json()["click_id"] == "cookie-abc-123"
        customer = Customer.objects.get()
        assert customer.click_id == "cookie-abc-123"
        assert customer.program == program
        assert customer.first_partner == link.partner
        assert customer.customer_status == "click"
        assert ClickEvent.objects.get().click_id == "cookie-abc-123"


class TestVisitorIp:
    """visitor_ip locates the click only with the live key of the link's own program; otherwise the
    request's own address is used (here REMOTE_ADDR is a US address, visitor_ip a GB one)."""

    def click_with(self, api_client, visitor_ip, **extra):
        extra.setdefault("REMOTE_ADDR", US_IP)
        return post_click(api_client, {"affiliate_url": aff_url("summer"), "visitor_ip": visitor_ip}, **extra)

    @pytest.mark.parametrize(("visitor_ip", "geo"), [(GB_IP, GB_GEO), (US_IP, US_GEO)])
    def test_it_is_used_with_the_links_own_program_key(self, api_client, link, program, visitor_ip, geo):
        response = self.click_with(api_client, visitor_ip, REMOTE_ADDR="127.0.0.1", **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert geo_of(ClickEvent.objects.get()) == geo

    def test_it_is_ignored_without_a_key(self, api_client, link):
        assert self.click_with(api_client, GB_IP).status_code == 200
        assert geo_of(ClickEvent.objects.get()) == US_GEO

    def test_it_is_ignored_with_another_programs_key(self, api_client, link):
        other = ProgramFactory()
        assert self.click_with(api_client, GB_IP, **bearer(other.raw_api_key)).status_code == 200
        assert geo_of(ClickEvent.objects.get()) == US_GEO

    def test_it_is_ignored_with_a_key_past_its_rotation_deadline(self, api_client, link, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(minutes=1))
        response = self.click_with(api_client, GB_IP, **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert geo_of(ClickEvent.objects.get()) == US_GEO

    def test_it_is_used_with_a_key_before_its_rotation_deadline(self, api_client, link, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() + timedelta(days=7))
        response = self.click_with(api_client, GB_IP, **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert geo_of(ClickEvent.objects.get()) == GB_GEO

    def test_it_is_ignored_with_a_token_that_matches_no_program(self, api_client, link):
        response = self.click_with(api_client, GB_IP, **bearer("aff_not_a_real_key"))
        assert response.status_code == 200
        assert geo_of(ClickEvent.objects.get()) == US_GEO

    @pytest.mark.parametrize("visitor_ip", ["not-an-ip", "999.1.1.1", "", 12345, [GB_IP], {"ip": GB_IP}])
    def test_it_ignores_an_invalid_value_and_never_refuses(self, api_client, link, program, visitor_ip):
        response = self.click_with(api_client, visitor_ip, **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert geo_of(ClickEvent.objects.get()) == US_GEO

    def test_it_ignores_a_null_value_and_never_refuses(self, api_client, link, program):
        response = self.click_with(api_client, None, **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert geo_of(ClickEvent.objects.get()) == US_GEO

    def test_it_leaves_the_location_empty_for_a_private_visitor_ip(self, api_client, link, program):
        self.click_with(api_client, "192.168.1.20", **bearer(program.raw_api_key))
        assert geo_of(ClickEvent.objects.get()) == NO_GEO

    def test_it_leaves_the_location_empty_for_a_private_request_ip(self, api_client, link):
        post_click(api_client, {"affiliate_url": aff_url("summer")}, REMOTE_ADDR="10.1.2.3")
        assert geo_of(ClickEvent.objects.get()) == NO_GEO


class TestTestMode:
    def assert_no_real_effects(self, link) -> None:
        link.refresh_from_db()
        assert link_clicks(link)[0] == 0
        assert link_clicks(link)[1] is None
        assert partner_program_clicks(link) == 0
        assert not Customer.objects.filter(is_test=False).exists()
        assert not ClickEvent.objects.filter(is_test=False).exists()

    def assert_test_body(self, response, program) -> None:
        assert response.status_code == 200
        event = ClickEvent.objects.get()
        customer = Customer.objects.get()
        assert response.json() == {
            "success": True,
            "message": messages.CLICK_TEST_RECORDED,
            "data": {
                "eventId": event.pk,
                "programId": program.pk,
                "test_mode": True,
                "click_id": customer.click_id,
            },
        }
        assert event.is_test is True
        assert event.customer == customer
        assert customer.is_test is True
        assert customer.program == program
        assert customer.first_partner_id == event.partner_id

    def test_it_records_a_test_click_for_the_body_flag_and_touches_no_counter(self, api_client, link, program):
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "additional_data": {"test_mode": True}})
        self.assert_test_body(response, program)
        self.assert_no_real_effects(link)

    def test_the_test_key_alone_does_not_make_a_test_click(self, api_client, link, program):
        # "An optional Bearer program key affects only visitor_ip."
        response = post_click(api_client, {"affiliate_url": aff_url("summer")}, **bearer(program.raw_test_api_key))
        assert set(response.json()) == {"success", "click_id", "partner_code", "cookie_window_days"}
        assert ClickEvent.objects.get().is_test is False

    def test_it_records_a_real_click_for_test_mode_false(self, api_client, link):
        response = post_click(api_client, {"affiliate_url": aff_url("summer"), "additional_data": {"test_mode": False}})
        assert set(response.json()) == {"success", "click_id", "partner_code", "cookie_window_days"}
        assert ClickEvent.objects.get().is_test is False

    def test_it_leaves_a_trail_in_the_tracking_log(self, api_client, link, program):
        post_click(api_client, {"affiliate_url": aff_url("summer"), "additional_data": {"test_mode": True}})
        log = TrackingLog.objects.get()
        assert (log.program, log.event, log.is_test) == (program, "click", True)

    @pytest.mark.parametrize("key_mode", ["live", "test"])
    def test_it_answers_403_for_a_key_with_another_programs_program_id(self, api_client, link, program, key_mode):
        other = ProgramFactory()
        raw = program.raw_api_key if key_mode == "live" else program.raw_test_api_key
        response = post_click(
            api_client,
            {
                "affiliate_url": aff_url("summer"),
                "additional_data": {"test_mode": True, "program_id": other.pk},
            },
            **bearer(raw),
        )
        assert response.status_code == 403
        assert response.json() == platform_error(403, "ForbiddenError", messages.PROGRAM_ID_MISMATCH)
        assert_nothing_recorded(link)

    def test_it_accepts_a_key_with_its_own_program_id(self, api_client, link, program):
        response = post_click(
            api_client,
            {
                "affiliate_url": aff_url("summer"),
                "additional_data": {"test_mode": True, "program_id": program.pk},
            },
            **bearer(program.raw_api_key),
        )
        self.assert_test_body(response, program)

    def test_it_does_not_check_program_id_on_a_keyless_test_click(self, api_client, link, program):
        other = ProgramFactory()
        response = post_click(
            api_client,
            {
                "affiliate_url": aff_url("summer"),
                "additional_data": {"test_mode": True, "program_id": other.pk},
            },
        )
        self.assert_test_body(response, program)

    def test_it_does_not_check_program_id_outside_test_mode(self, api_client, link, program):
        other = ProgramFactory()
        response = post_click(
            api_client,
            {"affiliate_url": aff_url("summer"), "additional_data": {"program_id": other.pk}},
            **bearer(program.raw_api_key),
        )
        assert response.status_code == 200
        assert ClickEvent.objects.get().is_test is False


class TestRateLimitAndHeaders:
    def test_it_answers_429_to_the_61st_click_in_a_minute_and_records_nothing(self, api_client, link):
        # 60 visitors behind one address (one user agent each: the same visitor again would be a duplicate).
        for index in range(60):
            response = post_click(
                api_client,
                {"affiliate_url": aff_url("summer"), "user_agent": f"{WINDOWS_CHROME_UA} visitor/{index}"},
                REMOTE_ADDR="203.0.113.5",
            )
            assert response.status_code == 200

        response = post_click(api_client, {"affiliate_url": aff_url("summer")}, REMOTE_ADDR="203.0.113.5")

        assert_rate_limited(response)
        assert response["X-RateLimit-Limit"] == "60"
        assert response.has_header("X-Request-ID")
        assert Customer.objects.count() == 60
        assert ClickEvent.objects.count() == 60
        link.refresh_from_db()
        assert link_clicks(link)[0] == 60
        assert partner_program_clicks(link) == 60

    def test_it_counts_the_limit_per_ip(self, api_client, link):
        for _ in range(60):
            post_click(api_client, {"affiliate_url": aff_url("summer")}, REMOTE_ADDR="203.0.113.5")
        response = post_click(api_client, {"affiliate_url": aff_url("summer")}, REMOTE_ADDR="203.0.113.6")
        assert response.status_code == 200

    def test_it_sends_request_id_and_rate_limit_headers(self, api_client, link):
        response = post_click(api_client, {"affiliate_url": aff_url("summer")})
        assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
        assert response["X-RateLimit-Limit"] == "60"
        assert response["X-RateLimit-Remaining"] == "59"
        assert int(response["X-RateLimit-Reset"]) >= int(timezone.now().timestamp())

    def test_it_echoes_the_callers_request_id(self, api_client, link):
        response = post_click(api_client, {"affiliate_url": aff_url("summer")}, HTTP_X_REQUEST_ID="trace-0001-abcd")
        assert response["X-Request-ID"] == "trace-0001-abcd"

    def test_it_sends_them_on_errors_too(self, api_client, program, link):
        ReferralLinkFactory(program=program, short_link="paused", is_active=False)
        not_found = post_click(api_client, {"affiliate_url": aff_url("nobody")})
        disabled = post_click(api_client, {"affiliate_url": aff_url("paused")})
        assert (not_found.status_code, disabled.status_code) == (400, 410)
        for response, remaining in ((not_found, "59"), (disabled, "58")):
            assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
            assert response["X-RateLimit-Limit"] == "60"
            assert response["X-RateLimit-Remaining"] == remaining
            assert response.has_header("X-RateLimit-Reset")


class TestHotPath:
    def test_a_plain_click_reads_the_link_and_writes_one_statement(self, api_client, link, django_assert_num_queries):
        # Measured the same on SQLite and PostgreSQL. Django (>= 4.2) logs transaction statements too:
        # inside the test's transaction the service's atomic() is SAVEPOINT / RELEASE SAVEPOINT.
        # 1. SELECT referral link JOIN partner JOIN program WHERE short_link = 'summer' LIMIT 1
        # 2. SELECT the program's fraud rule settings (fraud.config; like the link, kept per process after)
        # 3. SAVEPOINT
        # 4. WITH first_row AS (INSERT customer RETURNING id) INSERT click event, whose traffic column holds the
        #    duplicate rule's probe (PostgreSQL: one statement, atomic by itself, so in production it runs
        #    alone, without BEGIN/COMMIT: see the test below); SQLite has no INSERT in WITH: INSERT customer,
        #    INSERT click event (the probe in its traffic column), in a transaction
        # 5. RELEASE SAVEPOINT
        # No counter UPDATE: the rollup task adds clicks to the link and partner counters (tracking.rollups).
        # No key lookup (no Authorization header), no customer lookup (no existing_click_id) and no
        # program lookup (no program_id).
        inserts = 1 if capabilities().insert_in_with else 2
        with django_assert_num_queries(4 + inserts + REQUEST_LOG_ROW):
            response = post_click(api_client, {"affiliate_url": aff_url("summer")})
        assert response.status_code == 200

    @pytest.mark.postgres
    @pytest.mark.django_db(transaction=True)
    def test_in_production_a_plain_click_is_two_statements(self, api_client, link):
        with CaptureQueriesContext(connection) as captured:
            assert post_click(api_client, {"affiliate_url": aff_url("summer")}).status_code == 200
        click_sql = [q["sql"] for q in captured.captured_queries if ApiCall._meta.db_table not in q["sql"]]
        # The link and the program's rules (both cached per process after), then the customer and its click in
        # one statement, in autocommit: no BEGIN/COMMIT (the request log's row, one COPY written in batches in
        # production, is left out of click_sql).
        assert [sql.split()[0] for sql in click_sql] == ["SELECT", "SELECT", "WITH"]

    @pytest.mark.postgres
    @pytest.mark.django_db(transaction=True)
    def test_with_warm_caches_a_click_is_one_statement(self, api_client, link):
        post_click(api_client, {"affiliate_url": aff_url("summer")}, REMOTE_ADDR="203.0.113.1")
        with CaptureQueriesContext(connection) as captured:
            assert post_click(api_client, {"affiliate_url": aff_url("summer")}).status_code == 200
        click_sql = [q["sql"] for q in captured.captured_queries if ApiCall._meta.db_table not in q["sql"]]
        assert [sql.split()[0] for sql in click_sql] == ["WITH"]

    @pytest.mark.parametrize("path", ["native", "portable"])
    def test_both_paths_store_the_same_customer_and_click(self, api_client, link, monkeypatch, path):
        if path == "portable":
            # The rows a database without INSERT in WITH gets (SQLite), forced on this one.
            monkeypatch.setitem(sql._capabilities, "default", sql.PORTABLE)
        body = {"affiliate_url": aff_url("summer"), "page_url": "https://shop.example.com/p", "session_id": "s1"}
        click_id = post_click(api_client, body, HTTP_USER_AGENT=WINDOWS_CHROME_UA).json()["click_id"]
        customer = Customer.objects.get()
        event = ClickEvent.objects.get()
        assert (customer.click_id, event.click_id, event.customer_id) == (click_id, click_id, customer.pk)
        assert (customer.program_id, customer.first_partner_id, customer.first_link_id) == (
            link.program_id,
            link.partner_id,
            link.pk,
        )
        assert (customer.customer_status, customer.customer_key, customer.is_test) == ("click", None, False)
        assert customer.first_clicked_at == customer.last_clicked_at == event.click_timestamp == event.created_at
        assert (event.page_url, event.session_id, event.device_type, event.browser_name) == (
            "https://shop.example.com/p",
            "s1",
            "desktop",
            "Chrome",
        )

    @pytest.mark.postgres
    @pytest.mark.django_db(transaction=True)
    def test_a_click_insert_that_fails_leaves_no_customer(self, api_client, link, monkeypatch):
        # The customer's INSERT and the click's are one statement: the click's failing undoes the customer's.
        monkeypatch.setattr("tracking.services.click.geo_for_ip", lambda ip: Geo(country="XXX"))  # 2 characters
        response = post_click(api_client, {"affiliate_url": aff_url("summer")})
        assert response.status_code == 500
        assert response.json() == platform_error(500, "InternalServerError", messages.CLICK_TRACKING_FAILED)
        assert_nothing_recorded(link)


class TestServerFailure:
    def test_it_answers_500_click_tracking_failed_and_leaves_no_customer(self, api_client, link):
        # The click event fails to save: with the customer in one statement (insert_pair) or after it in a
        # transaction (ClickEvent.save, the path SQLite takes).
        failure = RuntimeError("db exploded: password=hunter2")
        with (
            mock.patch("tracking.services.click.insert_pair", side_effect=failure),
            mock.patch("tracking.services.click.ClickEvent.save", side_effect=failure),
        ):
            response = post_click(api_client, {"affiliate_url": aff_url("summer")})
        assert response.status_code == 500
        assert response.json() == platform_error(500, "InternalServerError", messages.CLICK_TRACKING_FAILED)
        assert "hunter2" not in response.content.decode()
        assert "RuntimeError" not in response.content.decode()
        assert response.has_header("X-Request-ID")
        assert_nothing_recorded(link)
