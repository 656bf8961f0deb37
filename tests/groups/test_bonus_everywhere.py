"""A bonus commission has no sale: run through approval, a payout run, the portal's commissions and payouts pages,
the dashboard's commissions list and review queue, the agent API's commission list and detail and the webhooks,
it is shown as "Bonus: <name>" where a sale would be, with no error anywhere; a refund's clawback of it is
announced; a sale's commission payload is as before."""

import re
from datetime import timedelta
from html import unescape

import pytest
from django.test import Client
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission
from commissions.services import commission_hold, commission_release, partner_balance
from core.integrity import integrity_verify
from payouts.models import PayoutCommission, Rail
from payouts.services import manual_rail_set, payout_mark_paid, run_confirm, run_preview
from programs.services import agent_key_create
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory
from tests.portal.test_commissions_balance import invite, joined, partner_of
from tiers.milestones import bonuses_award
from webhooks.models import EventType, WebhookEvent
from webhooks.payloads import EXAMPLE_DATA, commission_data

from .world import bonus, refund, sale

pytestmark = pytest.mark.django_db


def text(html: bytes) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.decode()))).strip()


@pytest.fixture
def world():
    program = ProgramFactory(name="Acme Pro", hold_days=7)
    browser = joined(invite(program))
    partner = partner_of(program)
    link = ReferralLinkFactory(program=program, partner=partner)
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    return program, partner, link, browser, owner


def test_a_bonus_runs_through_approval_payout_pages_apis_and_webhooks(world):
    program, partner, link, browser, owner = world
    launch = bonus(program, name="Launch sprint", threshold=2, amount_cents=5000, period="lifetime")
    first = sale(link)
    sale(link)
    now = timezone.now()
    assert bonuses_award(program, now).awarded == 1
    commission = Commission.objects.get(kind="bonus")

    # Held by the owner, then shown in the review queue as the bonus.
    commission_hold(commission_id=commission.pk, reason="checking", actor="user:owner")
    review = owner.get(f"/programs/{program.pk}/review")
    assert review.status_code == 200
    assert "Bonus: Launch sprint" in text(review.content)
    commission_release(commission_id=commission.pk, actor="user:owner")

    # Approved by the hold-end job, then paid by a payout run.
    assert commissions_approve_due(now=now + timedelta(days=7)) == 1
    commission.refresh_from_db()
    assert (commission.status, commission.credited) == ("approved", True)
    manual_rail_set(account=partner.account, rail=Rail.PAYPAL, payout_email="pat-paypal@example.com", holder_name="Pat")
    run = run_preview(program=program, currency="USD", actor="user:owner", minimum_cents=0)
    [payout] = run_confirm(run_id=run.pk, actor="user:owner")
    assert payout.amount_cents == 5000
    assert PayoutCommission.objects.filter(payout=payout, commission=commission).exists()
    assert payout_mark_paid(payout_id=payout.pk, actor="user:owner")

    # The portal's pages.
    commissions_page = browser.get("/portal/commissions")
    assert commissions_page.status_code == 200
    assert "Bonus: Launch sprint" in text(commissions_page.content)
    payouts_page = browser.get("/portal/payouts")
    assert payouts_page.status_code == 200
    assert "Bonus: Launch sprint" in text(payouts_page.content)

    # The dashboard's commissions list, whole and by status.
    for query in ("", "?status=paid", "?status=approved"):
        listed = owner.get(f"/programs/{program.pk}/commissions{query}")
        assert listed.status_code == 200
    assert "Bonus: Launch sprint" in text(owner.get(f"/programs/{program.pk}/commissions").content)

    # The agent API's list and detail.
    _, raw = agent_key_create(workspace=program.workspace, name="agent", scopes=("commissions:read",), programs=())
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    listed = agent.get("/api/agent/v1/commissions")
    assert listed.status_code == 200, listed.content
    [row] = [row for row in listed.json()["data"] if row["id"] == commission.pk]
    assert (row["kind"], row["sale_id"], row["transaction_id"], row["status"]) == ("bonus", None, None, "paid")
    detail = agent.get(f"/api/agent/v1/commissions/{commission.pk}")
    assert detail.status_code == 200, detail.content

    # The webhooks: every event of the bonus names it; a sale's commission payload has neither key.
    events = WebhookEvent.objects.filter(object_id=commission.pk, type__startswith="commission.").order_by("pk")
    assert [event.type for event in events] == ["commission.created", "commission.approved"]
    for event in events:
        assert (event.data["sale_id"], event.data["customer_id"], event.data["kind"]) == (None, None, "bonus")
        assert event.data["bonus"] == {"id": launch.pk, "name": "Launch sprint"}
    # A sale's commission is sent as documented: the sample's keys, in its order, neither kind nor bonus.
    sale_data = commission_data(Commission.objects.get(pk=first.commission.pk))
    assert list(sale_data) == list(EXAMPLE_DATA[EventType.COMMISSION_CREATED])

    # A refund takes the figure below the threshold: the paid bonus is clawed back and announced.
    refund(first)
    commission.refresh_from_db()
    assert (commission.status, commission.deducted_cents) == ("reversed", 5000)
    reversed_event = WebhookEvent.objects.get(object_id=commission.pk, type="commission.reversed")
    assert (reversed_event.data["kind"], reversed_event.data["status"]) == ("bonus", "reversed")
    assert partner_balance(partner_id=partner.pk, currency="USD") == -5000
    assert owner.get(f"/programs/{program.pk}/commissions?status=reversed").status_code == 200
    assert browser.get("/portal/commissions").status_code == 200

    # The money records' invariants hold for the bonus (the sales' commissions here are made without events).
    failures = integrity_verify(examples=1000).failures
    assert [failure.line() for failure in failures if commission.pk in failure.examples] == []
