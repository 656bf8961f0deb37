"""A refund of a commission whose payout has left (issue 37): once a payout is exported for PayPal or Wise, sent to
Stripe (both `processing`) or paid, the money is gone for the owner, so the refund raises the spec's manual-review
warning to the advertiser exactly as for a paid commission ("a manual-review warning to the advertiser if the
commission was already paid out"), through the refund's own outbox. A payout not sent yet is reduced instead, and
warns nobody. The run's page, the agent API and the partner's statement show what was clawed back after it left."""

import re
from html import unescape

import pytest
import stripe
from django.test import Client

from commissions.models import Commission, CommissionStatus, Notification, NotificationOutbox
from commissions.services import refund_apply
from payouts.models import Payout, PayoutStatus, Rail
from payouts.services import payout_mark_paid, run_confirm, run_export, run_preview
from payouts.stripe_rail import payout_send
from programs.models import Partner, Program, Role
from tests.agent_api.conftest import agent_for
from tests.factories import MembershipFactory, ProgramFactory
from tests.portal.test_commissions_balance import credited_for, invite, joined, partner_of
from tests.portal.test_payouts_portal import page_html, paid_by_paypal
from tests.stripe_fake.server import StripeFake

from .money import balance, credited, ledger_exact, payable_partner

pytestmark = pytest.mark.django_db

# As commissions.outbox writes it (the spec's warning): the partner's name and the refund's reason are filled in.
WARNING = (
    "Commission #{id} to {partner} was already paid out and its sale was refunded. Review it: the partner's balance "
    "is now reduced."
)


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def confirmed(program: Program) -> Payout:
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    return payout


def stripe_partner(server: StripeFake, program: Program) -> Partner:
    partner = payable_partner(program, name="Ann", rail=Rail.STRIPE)
    assert partner.account is not None
    account = server.create_account(email=partner.account.email)
    server.complete_onboarding(account["id"])
    partner.account.payout_account.stripe_account_id = account["id"]
    partner.account.payout_account.save(update_fields=["stripe_account_id"])
    return partner


def left_by(how: str, program: Program, server: StripeFake | None = None) -> tuple[Commission, Payout]:
    """A commission of 20.00 USD covered by a payout that left as `how` says (or has not: "pending")."""
    if how == "stripe_processing":
        assert server is not None
        partner = stripe_partner(server, program)
    else:
        partner = payable_partner(program, name="Ann", rail=Rail.WISE if how == "wise_exported" else Rail.PAYPAL)
    commission = credited(partner, program, amount=10_000)
    payout = confirmed(program)
    if how == "paypal_exported":
        run_export(run_id=payout.run_id, rail=Rail.PAYPAL, actor="a")
    elif how == "wise_exported":
        run_export(run_id=payout.run_id, rail=Rail.WISE, actor="a")
    elif how == "stripe_processing" and server is not None:
        server.fail_next_transfers(1, code="api_error", status=500)
        with pytest.raises(stripe.APIError):
            payout_send(payout_id=payout.pk)  # Stripe's 5xx: sent, not settled
    elif how == "paid":
        assert payout_mark_paid(payout_id=payout.pk, reference="PP-1")
    payout.refresh_from_db()
    return commission, payout


def advertiser_warnings(commission: Commission) -> list[str]:
    return list(
        Notification.objects.filter(
            commission=commission,
            audience=Notification.Audience.ADVERTISER,
            kind=Notification.Kind.MANUAL_REVIEW,
        ).values_list("message", flat=True)
    )


def refunded(commission: Commission, django_capture_on_commit_callbacks, **refund: object) -> None:
    assert commission.sale is not None
    with django_capture_on_commit_callbacks(execute=True):
        refund_apply(
            sale=commission.sale,
            amount=refund.get("amount"),  # type: ignore[arg-type]
            refund_id=refund.get("refund_id"),  # type: ignore[arg-type]
            reason="damaged",
        )


@pytest.mark.parametrize(
    ("how", "status"),
    [
        ("paypal_exported", PayoutStatus.PROCESSING),
        ("wise_exported", PayoutStatus.PROCESSING),
        ("stripe_processing", PayoutStatus.PROCESSING),
        ("paid", PayoutStatus.PAID),
    ],
)
def test_a_refund_after_the_payout_left_warns_the_advertiser(
    program, stripe_server, django_capture_on_commit_callbacks, how, status
):
    commission, payout = left_by(how, program, stripe_server)
    assert payout.status == status

    refunded(commission, django_capture_on_commit_callbacks)

    assert NotificationOutbox.objects.get(commission=commission).was_paid_out
    expected = WARNING.format(id=commission.pk, partner=commission.partner.name) + " Reason: damaged."
    assert advertiser_warnings(commission) == [expected]
    payout.refresh_from_db()
    assert (payout.status, payout.amount_cents) == (status, 2_000)  # left as is: the balance goes negative
    assert balance(commission.partner) == -2_000
    ledger_exact(commission.partner)


def test_a_refund_before_the_payout_left_reduces_it_and_warns_nobody(program, django_capture_on_commit_callbacks):
    commission, payout = left_by("pending", program)

    refunded(commission, django_capture_on_commit_callbacks)

    assert not NotificationOutbox.objects.get(commission=commission).was_paid_out
    assert advertiser_warnings(commission) == []
    payout.refresh_from_db()
    assert (payout.status, payout.amount_cents) == (PayoutStatus.CANCELLED, 0)
    ledger_exact(commission.partner)


def test_a_stripe_payout_not_sent_yet_warns_nobody(program, stripe_server, django_capture_on_commit_callbacks):
    partner = stripe_partner(stripe_server, program)
    commission = credited(partner, program, amount=10_000)
    payout = confirmed(program)  # its send task has not run
    assert payout.status == PayoutStatus.PENDING

    refunded(commission, django_capture_on_commit_callbacks, amount=5_000, refund_id="re_1")

    assert advertiser_warnings(commission) == []
    payout.refresh_from_db()
    assert (payout.status, payout.amount_cents) == (PayoutStatus.PENDING, 1_000)
    ledger_exact(partner)


def test_a_second_refund_of_a_partly_refunded_commission_paid_since_warns(program, django_capture_on_commit_callbacks):
    """A partly refunded commission stays `refunded` when its payout is paid (only approved ones become `paid`): the
    payout covering it, not its status, says the money left."""
    ann = payable_partner(program, name="Ann")
    commission = credited(ann, program, amount=10_000)
    refunded(commission, django_capture_on_commit_callbacks, amount=2_500, refund_id="re_1")
    payout = confirmed(program)
    assert payout_mark_paid(payout_id=payout.pk, reference="PP-1")
    assert Commission.objects.get(pk=commission.pk).status == CommissionStatus.REFUNDED
    assert advertiser_warnings(commission) == []

    refunded(commission, django_capture_on_commit_callbacks, amount=2_500, refund_id="re_2")

    assert len(advertiser_warnings(commission)) == 1
    ledger_exact(ann)


def test_a_failed_payout_covers_nothing_and_its_refunds_warn_nobody(program, django_capture_on_commit_callbacks):
    from payouts.services import payout_mark_failed

    commission, payout = left_by("paypal_exported", program)
    assert payout_mark_failed(payout_id=payout.pk, code="bounced", message="PayPal account closed")

    refunded(commission, django_capture_on_commit_callbacks)

    assert advertiser_warnings(commission) == []
    ledger_exact(commission.partner)


# --- What shows what was clawed back after the payout left --------------------------------------------------------


def text(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))).strip()


def test_the_run_page_and_the_agent_api_show_what_was_clawed_back_after_sending(
    program, django_capture_on_commit_callbacks
):
    ann = payable_partner(program, name="Ann")
    kept = credited(ann, program, amount=10_000)
    refunded_before = credited(ann, program, amount=5_000)
    taken = credited(ann, program, amount=25_000)
    payout = confirmed(program)
    assert payout.amount_cents == 8_000
    refunded(refunded_before, django_capture_on_commit_callbacks, amount=5_000, refund_id="re_0")  # before: reduced
    run_export(run_id=payout.run_id, rail=Rail.PAYPAL, actor="a")
    refunded(taken, django_capture_on_commit_callbacks, amount=10_000, refund_id="re_1")  # 20.00 of 50.00 back
    refunded(taken, django_capture_on_commit_callbacks, amount=5_000, refund_id="re_2")  # 10.00 more
    payout.refresh_from_db()
    assert (payout.status, payout.amount_cents) == (PayoutStatus.PROCESSING, 7_000)

    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.MEMBER).user)
    html = owner.get(f"/programs/{program.pk}/payouts/runs/{payout.run_id}").content.decode()
    found = re.search(rf'<tr id="payout-{payout.pk}".*?</tr>', html, re.S)
    assert found is not None
    shown = text(found[0])
    assert "Clawed back after it was sent: 30.00 USD" in shown
    assert f"commission #{taken.pk}: 20.00 USD" in shown and f"commission #{taken.pk}: 10.00 USD" in shown
    assert f"commission #{refunded_before.pk}" not in shown and f"commission #{kept.pk}" not in shown

    agent = agent_for(program.workspace)
    data = agent.get(f"/api/agent/v1/payouts/payouts/{payout.pk}").json()["data"]
    assert [(item["commission_id"], item["amount_cents"]) for item in data["clawed_back_after_sending"]] == [
        (taken.pk, 2_000),
        (taken.pk, 1_000),
    ]
    assert all(
        item["memo"].startswith(f"Refund of sale #{taken.sale_id}") for item in data["clawed_back_after_sending"]
    )
    listed = agent.get("/api/agent/v1/payouts/payouts").json()["data"]
    assert listed[0]["clawed_back_after_sending"] == data["clawed_back_after_sending"]
    run = agent.get(f"/api/agent/v1/payouts/runs/{payout.run_id}").json()["data"]
    assert run["payouts"][0]["clawed_back_after_sending"] == data["clawed_back_after_sending"]
    ledger_exact(ann)


def test_a_payout_not_sent_yet_shows_no_clawback(program, django_capture_on_commit_callbacks):
    ann = payable_partner(program, name="Ann")
    credited(ann, program, amount=10_000)
    taken = credited(ann, program, amount=25_000)
    payout = confirmed(program)
    refunded(taken, django_capture_on_commit_callbacks, amount=10_000, refund_id="re_1")

    data = agent_for(program.workspace).get(f"/api/agent/v1/payouts/payouts/{payout.pk}").json()["data"]
    assert data["clawed_back_after_sending"] == []
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.MEMBER).user)
    html = owner.get(f"/programs/{program.pk}/payouts/runs/{payout.run_id}").content.decode()
    assert "Clawed back after it was sent" not in html


def test_the_partners_statement_shows_what_was_taken_back_after_the_payout_was_sent(
    django_capture_on_commit_callbacks,
):
    program = ProgramFactory.create(name="Acme Pro", hold_days=30)
    browser = joined(invite(program))
    partner = partner_of(program)
    paid_by_paypal(partner)
    credited_for(partner, program, amount=10_000)
    taken = credited_for(partner, program, amount=25_000)
    payout = confirmed(program)
    run_export(run_id=payout.run_id, rail=Rail.PAYPAL, actor="a")
    refunded(taken, django_capture_on_commit_callbacks, amount=10_000, refund_id="re_1")

    shown = text(page_html(browser))
    assert "50.00 USD · taken back after it was sent: 20.00 USD" in shown
    assert shown.count("taken back after it was sent") == 1
