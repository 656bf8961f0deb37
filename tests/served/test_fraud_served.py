"""The fraud rules on the real server, 3 workers: a visitor's clicks are duplicates whichever worker takes each
(the visitor hash is keyed by the installation's SECRET_KEY, the same in every process), a setting saved in one
process reaches every worker within FRAUD_RULES_CACHE_SECONDS, a HEAD is recorded as a prefetch through gunicorn,
and a self-referred sale is held until an owner releases it over the agent API."""

import time
from collections import Counter
from typing import Any

import httpx
import pytest
from django.conf import settings

from commissions.models import Commission, LedgerEntry
from fraud.config import rule_update
from fraud.rules import Rule
from programs.models import AGENT_SCOPES
from programs.services import agent_key_create
from tests.factories import PartnerFactory, PartnerProgramFactory, ProgramFactory, ReferralLinkFactory
from tracking.models import ClickEvent

from .conftest import Served, loopback_with_a_full_window, send_concurrently

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CLICK = "/api/v1/track/click"
CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"


def clicker(served: Served) -> httpx.Client:
    """A client from a loopback address of its own (the server sees it as the visitor's IP); a new connection per
    request, so the clicks spread over the workers."""
    transport = httpx.HTTPTransport(local_address=loopback_with_a_full_window())
    return httpx.Client(
        base_url=served.url, transport=transport, timeout=15, limits=httpx.Limits(max_keepalive_connections=0)
    )


def click_body(link, user_agent: str = CHROME) -> dict[str, Any]:
    return {"affiliate_url": f"https://{link.program.domain}/?aff={link.short_link}", "user_agent": user_agent}


def test_one_visitors_clicks_count_once_whichever_worker_takes_them(served):
    link = ReferralLinkFactory()
    with clicker(served) as client:
        first = client.post(CLICK, json=click_body(link))
        assert first.status_code == 200
        # One after the other (twins at the same instant are the rollup run's to settle: test_racing_duplicates),
        # until both workers have answered some: which worker accepts a connection is the kernel's choice, and a
        # fast path may see one worker take many in a row.
        answers: list[int] = []
        while len(answers) < 8 or (len(served.pids_that_answered(CLICK)) < 2 and len(answers) < 60):
            answers.append(client.post(CLICK, json=click_body(link)).status_code)
    assert answers == [200] * len(answers)
    assert len(served.pids_that_answered(CLICK)) >= 2
    traffic = Counter(ClickEvent.objects.filter(link=link).values_list("traffic", flat=True))
    assert traffic == {"": 1, "duplicate": len(answers)}


def test_a_setting_saved_here_reaches_every_worker_within_the_cache_time(served):
    link = ReferralLinkFactory()
    with clicker(served) as client:
        # Every worker reads (and keeps) the program's rules: duplicates on.
        send_concurrently(lambda n: client.post(CLICK, json=click_body(link, f"{CHROME} warm/{n}")), 9, threads=9)
        rule_update(program_id=link.program_id, rule=Rule.DUPLICATE_CLICK, enabled=False)
        time.sleep(settings.FRAUD_RULES_CACHE_SECONDS + 1)
        answers = [client.post(CLICK, json=click_body(link)).status_code for _ in range(6)]
    assert answers == [200] * 6
    assert ClickEvent.objects.filter(link=link, user_agent=CHROME, traffic="").count() == 6


def test_a_head_through_gunicorn_is_a_prefetch_answered_without_a_body(served):
    link = ReferralLinkFactory()
    with clicker(served) as client:
        response = client.request("HEAD", CLICK, json=click_body(link))
        bot = client.post(CLICK, json=click_body(link, "Mozilla/5.0 (compatible; Googlebot/2.1)"))
    assert (response.status_code, response.content) == (200, b"")
    assert bot.status_code == 200 and bot.json()["click_id"]
    assert sorted(ClickEvent.objects.filter(link=link).values_list("traffic", "customer")) == [
        ("bot", None),
        ("prefetch", None),
    ]


def test_a_self_referred_sale_is_held_until_the_owner_releases_it_over_the_agent_api(served):
    program = ProgramFactory(hold_days=0)
    partner = PartnerFactory(workspace=program.workspace, email="pat@partner-co.example")
    PartnerProgramFactory(partner=partner, program=program)
    link = ReferralLinkFactory(program=program, partner=partner)
    _, raw = agent_key_create(workspace=program.workspace, name="served reviewer", scopes=AGENT_SCOPES)
    server = {"Authorization": f"Bearer {program.raw_api_key}"}
    with clicker(served) as client:
        click_id = client.post(CLICK, json=click_body(link)).json()["click_id"]
        lead = {"click_id": click_id, "customer_key": "c-1", "email": "sam@partner-co.example"}
        assert client.post("/api/v1/track/lead", json=lead, headers=server).status_code == 200
        sale = {"transaction_id": "served-self-1", "amount_cents": 5000, "customer_key": "c-1"}
        assert client.post("/api/v1/track/sale", json=sale, headers=server).status_code == 200
        commission = Commission.objects.get(sale__processor_event_id="served-self-1")
        assert (commission.status, commission.hold_rule, commission.credited) == ("pending", "self_referral", False)
        released = client.post(
            f"/api/agent/v1/commissions/{commission.pk}/release",
            json={"reason": "same company, checked"},
            headers={"Authorization": f"Bearer {raw}"},
        )
    assert released.status_code == 200, released.text
    commission.refresh_from_db()
    assert (commission.status, commission.credited, commission.held_at) == ("approved", True, None)
    money = LedgerEntry.objects.filter(commission=commission).exclude(kind="review")
    assert list(money.values_list("kind", "amount_cents")) == [("credit", commission.amount_cents)]
