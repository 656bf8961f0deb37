"""verification_run (the synthetic test click -> lead -> sale chain) and synthetic_event_send (one test
event), both through the real tracking services with the program's test key."""

from datetime import timedelta
from unittest import mock

import pytest

from commissions.models import Commission, LedgerEntry
from core.errors import BadRequestError
from programs.models import PartnerProgram, ProgramKey
from tests.factories import ProgramFactory, ReferralLinkFactory
from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent, TrackingLog
from tracking.rollups import rollups_update
from tracking.services.verification import (
    VERIFICATION_AMOUNT_CENTS,
    site_url,
    synthetic_event_send,
    verification_run,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="spring")


@pytest.fixture
def program():
    return ProgramFactory(domain="shop.example.com")


def nothing_real_touched(link) -> bool:
    rollups_update(settle=timedelta(0))  # the counters as the rollup run leaves them (it adds clicks and sales)
    metrics = PartnerProgram.objects.get(partner=link.partner, program=link.program)
    link.refresh_from_db()
    return (
        not Customer.objects.filter(is_test=False).exists()
        and not ClickEvent.objects.filter(is_test=False).exists()
        and not LeadEvent.objects.filter(is_test=False).exists()
        and not SaleEvent.objects.filter(is_test=False).exists()
        and not Commission.objects.exists()
        and not LedgerEntry.objects.exists()
        and (metrics.clicks, metrics.leads, metrics.sales, metrics.revenue_cents) == (0, 0, 0, 0)
        and link.clicks == 0
    )


class TestVerificationRun:
    def test_it_runs_click_lead_sale_in_test_mode(self, program, link):
        result = verification_run(program=program, request_id="req-verify-1")
        click, lead, sale = ClickEvent.objects.get(), LeadEvent.objects.get(), SaleEvent.objects.get()
        customer = Customer.objects.get()
        assert result == {
            "success": True,
            "run_id": result["run_id"],
            "program_id": program.pk,
            "steps": [
                {"step": "click", "ok": True, "event_id": click.pk},
                {"step": "lead", "ok": True, "event_id": lead.pk},
                {"step": "sale", "ok": True, "event_id": sale.pk},
            ],
            "click_id": customer.click_id,
            "customer_key": f"verify_{result['run_id']}",
            "duration_ms": result["duration_ms"],
        }
        assert isinstance(result["duration_ms"], float)
        assert click.is_test and lead.is_test and sale.is_test and customer.is_test
        assert (click.link_id, click.page_url) == (link.pk, "https://shop.example.com/")
        assert (sale.amount_cents, sale.customer_id, sale.attributed) == (VERIFICATION_AMOUNT_CENTS, customer.pk, True)
        assert (customer.customer_status, customer.customer_key) == ("converted", f"verify_{result['run_id']}")
        assert nothing_real_touched(link)
        assert list(TrackingLog.objects.order_by("pk").values_list("event", "is_test", "request_id")) == [
            ("click", True, "req-verify-1"),
            ("lead", True, "req-verify-1"),
            ("sale", True, "req-verify-1"),
        ]

    def test_it_can_run_again(self, program, link):
        assert verification_run(program=program)["success"] is True
        assert verification_run(program=program)["success"] is True
        assert SaleEvent.objects.filter(is_test=True).count() == 2

    def test_a_server_required_program_still_settles_the_lead(self, link):
        link.program.lead_auth = "server_required"
        link.program.save()
        assert verification_run(program=link.program)["success"] is True
        assert LeadEvent.objects.get().provisional is False

    def test_without_a_usable_link_the_click_step_fails(self, program):
        ReferralLinkFactory(program=program, is_active=False)
        ReferralLinkFactory(program=program, partner=None)
        ReferralLinkFactory()  # another program's
        result = verification_run(program=program)
        assert result["success"] is False
        assert result["steps"] == [{"step": "click", "ok": False, "message": "No active referral link with a partner"}]
        assert not ClickEvent.objects.exists()

    def test_without_a_test_key_the_click_step_fails(self, program, link):
        ProgramKey.objects.filter(program=program, mode="test").delete()
        result = verification_run(program=program)
        assert result["steps"] == [{"step": "click", "ok": False, "message": "The program has no test key"}]
        assert not ClickEvent.objects.exists()

    def test_a_failing_step_stops_the_chain_and_is_reported(self, program, link):
        refusal = BadRequestError("Customer status cannot be updated to lead. Current status: lead")
        with mock.patch("tracking.services.verification.lead_record", side_effect=refusal):
            result = verification_run(program=program)
        assert result["success"] is False
        assert result["steps"][1:] == [
            {
                "step": "lead",
                "ok": False,
                "status": 400,
                "message": "Customer status cannot be updated to lead. Current status: lead",
            }
        ]
        assert result["steps"][0]["ok"] is True
        assert not SaleEvent.objects.exists()

    @pytest.mark.parametrize(
        "domain", ["https://shop.example.com", "shop.example.com/landing?x=1#top", "SHOP.example.com:8443"]
    )
    def test_a_domain_with_a_scheme_path_or_port_still_works(self, link, domain):
        link.program.domain = domain
        link.program.save()
        assert verification_run(program=link.program)["success"] is True
        assert ClickEvent.objects.get().page_url == "https://shop.example.com/"

    @pytest.mark.parametrize("code", ["a+b", "x&y=z", "hash#tag", "with space", "ünï"])
    def test_a_short_link_with_url_characters_still_works(self, program, code):
        ReferralLinkFactory(program=program, short_link=code)
        assert verification_run(program=program)["success"] is True
        assert ClickEvent.objects.get().link.short_link == code


class TestSiteUrl:
    @pytest.mark.parametrize(
        ("domain", "expected"),
        [
            ("shop.example.com", "https://shop.example.com/"),
            (" http://Shop.Example.com/x ", "https://shop.example.com/"),
            ("", "https://example.com/"),
            ("http://[::1", "https://example.com/"),
        ],
    )
    def test_it_keeps_only_the_host(self, domain, expected):
        assert site_url(ProgramFactory.build(domain=domain)) == expected

    def test_it_encodes_the_query(self):
        assert site_url(ProgramFactory.build(domain="a.test"), aff="x&y+z") == "https://a.test/?aff=x%26y%2Bz"


class TestSyntheticEventSend:
    def test_a_click(self, program, link):
        result = synthetic_event_send(program=program, event_type="click", request_ip="10.0.0.1", user_agent="UA")
        click = ClickEvent.objects.get()
        assert result == {
            "event_type": "click",
            "program_id": program.pk,
            "test_mode": True,
            "event_id": click.pk,
            "message": "Test click recorded",
            "click_id": click.click_id,
        }
        assert (click.is_test, click.user_agent) == (True, "UA")
        assert nothing_real_touched(link)

    def test_an_unknown_event_type_is_refused_before_anything_is_recorded(self, program, link):
        with pytest.raises(BadRequestError, match="event_type must be one of click, lead, sale"):
            synthetic_event_send(program=program, event_type="refund")
        assert not (ClickEvent.objects.exists() or SaleEvent.objects.exists())

    def test_a_sale_needs_no_link(self, program):
        result = synthetic_event_send(program=program, event_type="sale")
        assert result["attributed"] is False
        assert SaleEvent.objects.get().is_test
