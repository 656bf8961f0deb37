"""readiness_compute: the verdict shared by the readiness route, the dashboard and `svc status`."""

from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.times import utc_text
from insight.readiness import readiness_compute
from programs.models import PartnerProgram, ProgramKey, ReferralLink
from programs.services import program_key_mark_rotation
from tests.factories import CustomerFactory, PartnerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bearer
from tracking.models import ClickEvent, LeadEvent, ProcessorEvent
from tracking.services.first_party import first_party_seen_forget

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen")]

NOW = datetime(2025, 8, 1, 12, 0, tzinfo=UTC)
BASE = "https://track.example.test"


@pytest.fixture
def program():
    return ProgramFactory(domain="shop.example.com")


def checks(verdict) -> dict[str, tuple[str, str, str]]:
    return {check["id"]: (check["status"], check["detail"], check["next_step"]) for check in verdict["checks"]}


def statuses(verdict) -> dict[str, str]:
    return {check["id"]: check["status"] for check in verdict["checks"]}


def ready_program(program):
    """Everything working: enrolled link, live click, settled lead with customer_key, attributed sale, Stripe."""
    link = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link, customer_key="u1", customer_status="lead")
    ClickEvent.objects.create(program=program, customer=customer, click_timestamp=NOW - timedelta(hours=3))
    LeadEvent.objects.create(
        program=program, customer=customer, customer_key="u1", lead_timestamp=NOW - timedelta(hours=2)
    )
    SaleFactory(customer=customer, sale_date=NOW - timedelta(hours=1))
    program.stripe_account_id = "acct_1"
    program.save()
    ProcessorEvent.objects.create(
        event_id=f"evt_{program.pk}",
        event_type="invoice.payment_succeeded",
        program=program,
        payload={},
        received_at=NOW,
    )
    return link


class TestVerdict:
    def test_a_new_program_is_incomplete_and_says_what_to_do_first(self, program):
        verdict = readiness_compute(program=program, base_url=BASE + "/")
        live_key = ProgramKey.objects.get(program=program, mode="live")
        tag = f'<script src="{BASE}/js/svc-tracker.js" data-svc-program-id="{program.pk}" defer></script>'
        assert verdict == {
            "program_id": program.pk,
            "ready": False,
            "status": "incomplete",
            "next_step": "Create a partner and a referral link for this program (admin → Referral links).",
            "checked_at": NOW.isoformat(),
            "counts": {
                "clicks": 0,
                "leads": 0,
                "sales": 0,
                "attributed_sales": 0,
                "test_clicks": 0,
                "test_leads": 0,
                "test_sales": 0,
                "clicks_set_aside": 0,
            },
            "last_event_at": {"click": None, "lead": None, "sale": None},
            "checks": [
                {
                    "id": "referral_links",
                    "status": "fail",
                    "title": "Active referral links",
                    "detail": "No active referral link with a partner",
                    "next_step": "Create a partner and a referral link for this program (admin → Referral links).",
                },
                {
                    "id": "clicks_received",
                    "status": "fail",
                    "title": "Clicks received",
                    "detail": "No live click recorded yet",
                    "next_step": f"Add the tracker to every page of shop.example.com: {tag} then open a page with "
                    "?aff=<code>.",
                },
                {
                    "id": "leads_with_customer_key",
                    "status": "fail",
                    "title": "Leads with customer_key",
                    "detail": "No settled lead yet",
                    "next_step": "On signup call POST /api/v1/track/lead with the click_id from the svc_click_id "
                    "cookie and your user id as customer_key, or window.svc.signup(userId, email) in the browser.",
                },
                {
                    "id": "sales_attributed",
                    "status": "fail",
                    "title": "Sales attributed",
                    "detail": "No live sale yet",
                    "next_step": "Call POST /api/v1/track/sale with transaction_id, amount_cents and customer_key "
                    "after each payment, or connect Stripe.",
                },
                {
                    "id": "key_health",
                    "status": "pass",
                    "title": "API key",
                    "detail": f"{live_key.masked} is healthy",
                    "next_step": "",
                },
                {
                    "id": "stripe_connection",
                    "status": "warn",
                    "title": "Stripe connection",
                    "detail": "Not connected (optional)",
                    "next_step": "Connect Stripe to record payments and refunds without calling the sale endpoint.",
                },
                {
                    "id": "live_events",
                    "status": "warn",
                    "title": "Live events",
                    "detail": "No events yet",
                    "next_step": "Run a verification (svc test-event, or Run verification in the dashboard) to prove "
                    "the pipeline.",
                },
            ],
            "mistakes": [],
            "mistakes_count": 0,
            "clicks_set_aside": {"days": 7, "total": 0, "by_reason": {"duplicate": 0, "bot": 0, "prefetch": 0}},
        }

    def test_a_working_integration_is_ready(self, program):
        ready_program(program)
        verdict = readiness_compute(program=program, base_url=BASE)
        assert (verdict["ready"], verdict["status"], verdict["next_step"]) == (True, "ready", "")
        assert set(statuses(verdict).values()) == {"pass"}
        assert verdict["counts"] == {
            "clicks": 1,
            "leads": 1,
            "sales": 1,
            "attributed_sales": 1,
            "test_clicks": 0,
            "test_leads": 0,
            "test_sales": 0,
            "clicks_set_aside": 0,
        }
        assert verdict["last_event_at"] == {
            "click": (NOW - timedelta(hours=3)).isoformat(),
            "lead": (NOW - timedelta(hours=2)).isoformat(),
            "sale": (NOW - timedelta(hours=1)).isoformat(),
        }
        assert checks(verdict)["stripe_connection"][1] == "Connected (acct_1); last event 2025-08-01 12:00:00 UTC"

    def test_warnings_only_is_ready_with_warnings_and_the_first_warning_is_the_next_step(self, program):
        ready_program(program)
        program.stripe_account_id = ""
        program.save()
        verdict = readiness_compute(program=program, base_url=BASE)
        assert (verdict["ready"], verdict["status"]) == (True, "ready_with_warnings")
        assert verdict["next_step"] == checks(verdict)["stripe_connection"][2]


class TestReferralLinks:
    def test_inactive_links_and_links_without_a_partner_do_not_count(self, program):
        ReferralLinkFactory(program=program, is_active=False)
        ReferralLink.objects.create(short_link="orphan", program=program, partner=None)
        status, detail, _ = checks(readiness_compute(program=program))["referral_links"]
        assert (status, detail) == ("fail", "No active referral link with a partner")

    def test_the_services_own_verification_link_does_not_count(self, program):
        ReferralLinkFactory(program=program, is_synthetic=True)
        status, detail, _ = checks(readiness_compute(program=program))["referral_links"]
        assert (status, detail) == ("fail", "No active referral link with a partner")

    def test_links_whose_partner_is_not_enrolled_fail_because_their_sales_would_be_refused(self, program):
        link = ReferralLinkFactory(program=program)
        PartnerProgram.objects.filter(partner=link.partner, program=program).delete()
        status, detail, next_step = checks(readiness_compute(program=program))["referral_links"]
        assert status == "fail"
        assert detail == "1 active link(s), but no partner enrolled in the program: their sales are refused"
        assert next_step == "Enrol each link's partner in the program (admin → Partner programs)."

    def test_some_unenrolled_links_are_a_warning(self, program):
        ReferralLinkFactory(program=program)
        stray = ReferralLinkFactory(program=program, partner=PartnerFactory(workspace=program.workspace))
        PartnerProgram.objects.filter(partner=stray.partner).delete()
        status, detail, _ = checks(readiness_compute(program=program))["referral_links"]
        assert status == "warn"
        assert detail == (
            "1 active link(s) with an enrolled partner; 1 link(s) whose partner is not enrolled in the program"
        )

    def test_an_enrolment_in_another_program_does_not_count(self, program):
        link = ReferralLinkFactory(program=program)
        PartnerProgram.objects.filter(partner=link.partner, program=program).delete()
        PartnerProgram.objects.create(partner=link.partner, program=ProgramFactory(workspace=program.workspace))
        assert statuses(readiness_compute(program=program))["referral_links"] == "fail"

    def test_enrolled_links_pass(self, program):
        ReferralLinkFactory(program=program)
        ReferralLinkFactory(program=program)
        status, detail, _ = checks(readiness_compute(program=program))["referral_links"]
        assert (status, detail) == ("pass", "2 active link(s) with an enrolled partner")


class TestEvents:
    def test_test_events_are_counted_apart_and_never_pass_a_check(self, program):
        link = ReferralLinkFactory(program=program)
        customer = CustomerFactory(link=link, is_test=True)
        ClickEvent.objects.create(program=program, customer=customer, is_test=True)
        LeadEvent.objects.create(program=program, customer=customer, customer_key="u", is_test=True)
        SaleFactory(customer=customer, is_test=True)
        verdict = readiness_compute(program=program)
        assert verdict["counts"]["test_clicks"] == verdict["counts"]["test_leads"] == 1
        assert verdict["counts"]["test_sales"] == 1
        assert verdict["last_event_at"] == {"click": None, "lead": None, "sale": None}
        found = checks(verdict)
        assert [found[name][0] for name in ("clicks_received", "leads_with_customer_key", "sales_attributed")] == [
            "fail",
            "fail",
            "fail",
        ]
        assert found["live_events"][:2] == ("warn", "Only test events so far (3)")

    def test_leads_without_customer_key_warn_and_provisional_leads_do_not_count(self, program):
        customer = CustomerFactory(link=ReferralLinkFactory(program=program))
        LeadEvent.objects.create(program=program, customer=customer, customer_key="u1", provisional=True)
        assert checks(readiness_compute(program=program))["leads_with_customer_key"][:2] == (
            "fail",
            "No settled lead yet",
        )
        LeadEvent.objects.create(program=program, customer=customer, customer_key="")
        verdict = readiness_compute(program=program)
        assert verdict["counts"]["leads"] == 1
        assert checks(verdict)["leads_with_customer_key"][:2] == ("warn", "1 lead(s) but none with customer_key")

    def test_unattributed_sales_warn(self, program):
        customer = CustomerFactory(link=ReferralLinkFactory(program=program))
        SaleFactory(customer=customer, attributed=False)
        assert checks(readiness_compute(program=program))["sales_attributed"][:2] == (
            "warn",
            "1 sale(s), none attributed",
        )
        SaleFactory(customer=customer)
        assert checks(readiness_compute(program=program))["sales_attributed"][:2] == (
            "pass",
            "1 of 2 live sale(s) attributed",
        )

    def test_with_stripe_connected_no_sale_says_payments_record_themselves(self, program):
        program.stripe_account_id = "acct_9"
        program.save()
        found = checks(readiness_compute(program=program))
        assert found["sales_attributed"][2] == "Payments on the connected Stripe account record sales automatically."
        assert found["stripe_connection"][:2] == ("pass", "Connected (acct_9); last event none yet")

    @pytest.mark.parametrize("traffic", ["bot", "prefetch", "duplicate"])
    def test_clicks_the_fraud_rules_did_not_count_are_not_clicks_arriving(self, program, traffic):
        link = ReferralLinkFactory(program=program)
        at = NOW - timedelta(minutes=5)
        ClickEvent.objects.create(program=program, link=link, traffic=traffic, click_timestamp=at)

        verdict = readiness_compute(program=program, base_url=BASE)

        assert verdict["counts"]["clicks"] == 0 and verdict["last_event_at"]["click"] is None
        status, detail, next_step = checks(verdict)["clicks_received"]
        assert status == "fail"
        assert detail == (
            "No counted live click yet: only clicks the fraud rules did not count (bots, prefetches or "
            f"duplicates), the latest at {utc_text(at)}"
        )
        assert next_step.startswith("Open a page of shop.example.com with ?aff=<code> in a normal browser window")
        assert verdict["ready"] is False

    def test_recent_bots_after_a_counted_click_leave_the_last_click_the_counted_one(self, program):
        link = ReferralLinkFactory(program=program)
        counted_at = NOW - timedelta(days=2)
        ClickEvent.objects.create(program=program, link=link, click_timestamp=counted_at)
        for minutes in (1, 2, 3):
            ClickEvent.objects.create(
                program=program, link=link, traffic="bot", click_timestamp=NOW - timedelta(minutes=minutes)
            )

        verdict = readiness_compute(program=program)

        assert verdict["counts"]["clicks"] == 1
        assert verdict["last_event_at"]["click"] == counted_at.isoformat()
        assert checks(verdict)["clicks_received"][:2] == ("pass", "1 click(s), last at 2025-07-30 12:00:00 UTC")

    def test_a_paid_ad_click_is_flagged_but_counted(self, program):
        ClickEvent.objects.create(program=program, link=ReferralLinkFactory(program=program), flags=["paid_ads"])
        assert checks(readiness_compute(program=program))["clicks_received"][0] == "pass"

    def test_other_programs_events_are_not_counted(self, program):
        ready_program(ProgramFactory())
        assert readiness_compute(program=program)["counts"]["clicks"] == 0


class TestKeyHealth:
    def test_it_checks_the_key_it_is_given(self, program):
        test_key = ProgramKey.objects.get(program=program, mode="test")
        assert checks(readiness_compute(program=program, key=test_key))["key_health"][1] == (
            f"{test_key.masked} is healthy"
        )

    def test_a_flagged_key_warns_and_a_retired_one_fails(self, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=NOW + timedelta(days=2))
        status, detail, _ = checks(readiness_compute(program=program))["key_health"]
        assert (status, detail) == ("warn", "Must be rotated before 2025-08-03 12:00:00 UTC")
        program_key_mark_rotation(key=key, deadline=NOW)
        status, detail, _ = checks(readiness_compute(program=program))["key_health"]
        assert (status, detail) == ("fail", "Retired on 2025-08-01 12:00:00 UTC")

    def test_no_live_key_fails(self, program):
        ProgramKey.objects.filter(program=program, mode="live").delete()
        assert checks(readiness_compute(program=program))["key_health"] == (
            "fail",
            "The program has no live key",
            "Regenerate the key in the dashboard.",
        )


def test_without_a_counted_click_it_reads_the_latest_uncounted_one_more():
    counted, uncounted = ProgramFactory(), ProgramFactory()
    ClickEvent.objects.create(program=counted, click_id="human-1")
    # A prefetch: a bot's click costs one query more again, its user agents (test_bot_clicks_are_named_...).
    ClickEvent.objects.create(program=uncounted, click_id="prefetch-1", traffic="prefetch", user_agent="Chrome")

    def queries(of) -> int:
        with mock.patch("insight.readiness.mistakes_find", return_value=[]):
            with CaptureQueriesContext(connection) as captured:
                readiness_compute(program=of)
        return len(captured)

    assert queries(uncounted) == queries(counted) + 1


def test_it_reads_a_fixed_number_of_queries(program, django_assert_num_queries):
    ready_program(program)
    for _ in range(3):
        ready_program(ProgramFactory())
    # 1 links (total and enrolled), 2 the rollup watermarks, 3 the rollup sums per test flag, 4-6 the clicks,
    # leads and sales above the watermarks, 7 the watermarks again (no run committed meanwhile), 8 the latest
    # live (counted) click, lead and sale, 9 the live key, 10 the latest Stripe event, 11 the latest integrity run,
    # 12 the last import (with its partners not invited yet and any interrupted run), 13 the billing connections
    # with their events' figures: the same thirteen however many events. (A program without a counted click reads
    # its latest uncounted one too: the test below.)
    # The mistakes' detectors count their own queries (tests/tracking/test_diagnosis_*.py).
    with mock.patch("insight.readiness.mistakes_find", return_value=[]):
        with django_assert_num_queries(13):
            readiness_compute(program=program)
        key = ProgramKey.objects.get(program=program, mode="live")
        with django_assert_num_queries(12):  # the key is given: no key query
            readiness_compute(program=program, key=key)


GOOGLEBOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
FACEBOOK_UA = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
CHROME_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
BOT_NEXT_STEP = (
    "If one of these is your own server or app rather than a crawler, send the visitor's browser user agent as "
    "user_agent in the click body (without it, the User-Agent header is judged only when it is a browser's), or "
    "turn the bot rule off; crawlers and link previews need nothing."
)


class TestBotClicks:
    """Readiness names the clicks the bot rule set aside and the user agents they came with, over HTTP."""

    @staticmethod
    def click(api_client, link, *, header: str = "", **body) -> None:
        payload = {"affiliate_url": f"https://shop.example.com/?aff={link.short_link}", **body}
        extra = {"HTTP_USER_AGENT": header} if header else {}
        response = api_client.post(
            "/api/v1/track/click", payload, format="json", **extra, **bearer(link.program.raw_api_key)
        )
        assert response.status_code == 200, response.content

    @staticmethod
    def readiness(api_client, program) -> dict[str, Any]:
        response = api_client.get("/api/v1/programs/me/readiness", **bearer(program.raw_api_key))
        assert response.status_code == 200, response.content
        return response.json()

    def test_bot_clicks_are_named_with_their_user_agents(self, api_client, program):
        ready_program(program)
        link = ReferralLinkFactory(program=program)
        for _ in range(2):
            self.click(api_client, link, user_agent=GOOGLEBOT_UA)
        self.click(api_client, link, user_agent=FACEBOOK_UA)
        self.click(api_client, link, header=GOOGLEBOT_UA)  # the tracker in a crawler: the header's agent

        verdict = self.readiness(api_client, program)

        bots = next(check for check in verdict["checks"] if check["id"] == "bot_clicks")
        # Crawlers beside counted clicks are ordinary traffic: named, but they hold nothing at a warning.
        assert bots == {
            "id": "bot_clicks",
            "status": "pass",
            "title": "Clicks set aside as bots",
            "detail": "4 live click(s) of the last 7 days set aside as bots (never counted, never attributed), by "
            f'user agent: "{GOOGLEBOT_UA}" (3), "{FACEBOOK_UA}" (1)',
            "next_step": BOT_NEXT_STEP,
        }
        # After the seven checks: the bots, then every click set aside (the bots among them) with its reason.
        assert [check["id"] for check in verdict["checks"][-2:]] == ["bot_clicks", "clicks_set_aside"]
        assert (verdict["ready"], verdict["status"]) == (True, "ready")

    def test_bot_clicks_with_no_counted_click_beside_them_are_a_warning(self, api_client, program):
        link = ReferralLinkFactory(program=program)
        self.click(api_client, link, user_agent=GOOGLEBOT_UA)

        verdict = self.readiness(api_client, program)

        assert statuses(verdict)["bot_clicks"] == "warn"
        assert statuses(verdict)["clicks_received"] == "fail"
        bots = next(check for check in verdict["checks"] if check["id"] == "bot_clicks")
        assert f'"{GOOGLEBOT_UA}" (1)' in bots["detail"]

    def test_a_server_side_click_is_not_set_aside_nor_named(self, api_client, program):
        link = ReferralLinkFactory(program=program)
        self.click(api_client, link, header="Python-urllib/3.11", visitor_ip="203.0.113.7")
        self.click(api_client, link, header="Java/17", visitor_ip="203.0.113.8")

        verdict = self.readiness(api_client, program)

        assert "bot_clicks" not in statuses(verdict)
        assert verdict["counts"]["clicks"] == 2
        assert statuses(verdict)["clicks_received"] == "pass"

    def test_the_most_frequent_five_are_named_and_the_others_counted(self, program):
        for number in range(7):
            for _ in range(number + 1):
                ClickEvent.objects.create(program=program, traffic="bot", user_agent=f"crawler-{number}")
        detail = checks(readiness_compute(program=program))["bot_clicks"][1]
        assert detail.startswith("28 live click(s) of the last 7 days set aside as bots")
        assert detail.endswith(
            'by user agent: "crawler-6" (7), "crawler-5" (6), "crawler-4" (5), "crawler-3" (4), "crawler-2" (3); '
            "2 other user agent(s)"
        )

    def test_old_test_and_other_programs_bots_are_not_named(self, program):
        ClickEvent.objects.create(
            program=program, traffic="bot", user_agent="old", click_timestamp=NOW - timedelta(days=7, seconds=1)
        )
        ClickEvent.objects.create(program=program, traffic="bot", user_agent="test", is_test=True)
        ClickEvent.objects.create(program=program, traffic="prefetch", user_agent=CHROME_UA)
        ClickEvent.objects.create(program=ProgramFactory(), traffic="bot", user_agent="elsewhere")
        assert "bot_clicks" not in statuses(readiness_compute(program=program))


def test_the_user_agents_of_bot_clicks_cost_one_query_more_only_when_there_are_some():
    prefetched, crawled = ProgramFactory(), ProgramFactory()
    ClickEvent.objects.create(program=prefetched, traffic="prefetch", user_agent=CHROME_UA)
    ClickEvent.objects.create(program=crawled, traffic="bot", user_agent=GOOGLEBOT_UA)

    def queries(of) -> int:
        with mock.patch("insight.readiness.mistakes_find", return_value=[]):
            with CaptureQueriesContext(connection) as captured:
                readiness_compute(program=of)
        return len(captured)

    assert queries(crawled) == queries(prefetched) + 1


class TestCookieMode:
    """cookie_mode: how the svc_click_id cookie is kept, first-party (set by the service through the shop's own
    origin) or written by the tracker's script, and what that loses in Safari."""

    FIRST_PARTY_STEP = (
        "Serve the tracker from your own site: proxy a path of it (such as /_svc) to this service, load "
        "/_svc/js/svc-tracker.js from there, and the service sets the cookie itself for the whole window "
        "(docs/first-party.md)."
    )

    @staticmethod
    def cookie_mode(verdict) -> dict[str, Any] | None:
        return next((check for check in verdict["checks"] if check["id"] == "cookie_mode"), None)

    def test_a_program_that_has_seen_nothing_has_no_cookie_mode_yet(self, program):
        assert self.cookie_mode(readiness_compute(program=program)) is None

    @pytest.mark.parametrize("window", [30, 60, 90])
    def test_clicks_with_no_first_party_call_name_the_loss_in_safari(self, window):
        program = ProgramFactory(cookie_duration=window)
        ready_program(program)
        verdict = readiness_compute(program=program, base_url=BASE)
        assert self.cookie_mode(verdict) == {
            "id": "cookie_mode",
            "status": "pass",
            "title": "Click cookie",
            "detail": f"script-written cookie: Safari keeps it 7 days, your window is {window}",
            "next_step": self.FIRST_PARTY_STEP,
        }
        # Right after the seven checks; a working script-mode integration stays ready.
        assert [check["id"] for check in verdict["checks"]].index("cookie_mode") == 7
        assert (verdict["ready"], verdict["status"], verdict["next_step"]) == (True, "ready", "")

    @pytest.mark.parametrize(
        "click_fields",
        [{"traffic": "bot"}, {"is_test": True}],
        ids=["only a click set aside", "only a test click"],
    )
    def test_any_click_seen_is_enough_to_say_it(self, program, click_fields):
        ClickEvent.objects.create(program=program, **click_fields)
        detail = checks(readiness_compute(program=program))["cookie_mode"][1]
        assert detail == "script-written cookie: Safari keeps it 7 days, your window is 30"

    def test_first_party_calls_seen_say_so(self, program):
        ready_program(program)
        seen_at = NOW - timedelta(minutes=40)
        type(program).objects.filter(pk=program.pk).update(first_party_seen_at=seen_at)
        program.refresh_from_db()
        verdict = readiness_compute(program=program, base_url=BASE)
        assert self.cookie_mode(verdict) == {
            "id": "cookie_mode",
            "status": "pass",
            "title": "Click cookie",
            "detail": "First-party calls seen (the tracker served from your own site), last at "
            f"{utc_text(seen_at)}: the service sets svc_click_id itself, for your whole window of 30 days",
            "next_step": "",
        }
        assert verdict["status"] == "ready"

    def test_a_first_party_click_through_the_api_shows_in_the_readiness_route(self, api_client, program, settings):
        settings.CACHES = {
            **settings.CACHES,
            "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests-readiness"},
        }
        first_party_seen_forget()
        ReferralLinkFactory(program=program, short_link="fp")
        route = "/api/v1/programs/me/readiness"

        def cookie_mode_detail() -> str:
            check = self.cookie_mode(api_client.get(route, **bearer(program.raw_api_key)).json())
            assert check is not None
            return check["detail"]

        body = {"affiliate_url": "https://shop.example.com/?aff=fp", "user_agent": CHROME_UA}
        assert api_client.post("/api/v1/track/click", body, format="json").status_code == 200
        assert cookie_mode_detail() == "script-written cookie: Safari keeps it 7 days, your window is 30"
        clicked = api_client.post("/api/v1/track/click", body, format="json", HTTP_X_FORWARDED_PREFIX="/_svc")
        assert clicked.cookies["svc_click_id"].value == clicked.json()["click_id"]
        assert cookie_mode_detail().startswith(
            f"First-party calls seen (the tracker served from your own site), last at {utc_text(NOW)}"
        )
        first_party_seen_forget()
