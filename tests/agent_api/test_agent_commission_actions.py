"""POST /api/agent/v1/commissions/:id/approve, /void, /hold, /release: scope, what a key may reach, the effect on
the commission and the partner's ledger, the refusals (409 commission_state), idempotency and the audit entry."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agent_api import messages
from agent_api.models import AgentAuditEntry
from commissions.approval import commission_approve, commission_approve_early
from commissions.models import Commission, CommissionStatus, LedgerEntry
from commissions.services import commission_hold, partner_balance, withdrawal_mark_paid, withdrawal_request
from core import messages as core_messages
from programs.models import Partner, Program
from tests.agent_api.conftest import agent_for
from tests.factories import CommissionFactory, ProgramFactory, ReferralLinkFactory, WorkspaceFactory
from tests.helpers import platform_error, run_together

pytestmark = pytest.mark.django_db

COMMISSIONS = "/api/agent/v1/commissions"
ACTIONS = ("approve", "void", "hold", "release")


def commission_in(program: Program, partner: Partner | None = None, **fields: Any) -> Commission:
    """A pending commission of this program whose hold period ends in a week."""
    link = ReferralLinkFactory.create(program=program, **({"partner": partner} if partner else {}))
    fields.setdefault("hold_until", timezone.now() + timedelta(days=7))
    return CommissionFactory.create(sale__customer__link=link, amount_cents=2_000, **fields)


def act(agent, commission: Commission | str, action: str, body: dict[str, Any] | None = None, **headers):
    commission_id = commission.pk if isinstance(commission, Commission) else commission
    if body is None:
        body = {"reason": "fraud"} if action == "void" else {}
    return agent.client.post(f"{COMMISSIONS}/{commission_id}/{action}", body, format="json", **headers)


def balance(commission: Commission) -> int:
    return partner_balance(partner_id=commission.partner_id, currency=commission.currency)


def conflict(message: str) -> dict[str, Any]:
    return platform_error(409, "ConflictError", message, messages.CODE_COMMISSION_STATE)


class TestScopesAndReach:
    @pytest.mark.parametrize("action", ACTIONS)
    def test_a_key_with_commissions_read_only_gets_403_naming_commissions_write(self, workspace, program, action):
        commission = commission_in(program)
        response = act(agent_for(workspace, scopes=("commissions:read", "payouts:write")), commission, action)
        assert response.json() == platform_error(
            403,
            "ForbiddenError",
            messages.SCOPE_MISSING.format(scope="commissions:write"),
            "missing_scope",
            {"scope": "commissions:write"},
        )
        commission.refresh_from_db()
        assert (commission.status, commission.held_at) == (CommissionStatus.PENDING, None)
        assert not AgentAuditEntry.objects.exists()

    @pytest.mark.parametrize("action", ACTIONS)
    def test_a_commission_outside_the_key_is_404(self, workspace, program, action):
        outside = commission_in(ProgramFactory.create(workspace=workspace))
        foreign = commission_in(ProgramFactory.create(workspace=WorkspaceFactory.create()))
        limited = agent_for(workspace, programs=(program,))
        everything = agent_for(workspace)
        not_found = platform_error(404, "NotFoundError", messages.COMMISSION_NOT_FOUND, "not_found")
        for agent, commission in ((limited, outside), (everything, foreign)):
            assert act(agent, commission, action).json() == not_found
        for malformed in ("abc", "0", str(10**30), "-1"):
            assert act(everything, malformed, action).json() == not_found
        assert set(Commission.objects.values_list("status", flat=True)) == {CommissionStatus.PENDING}
        assert not Commission.objects.filter(held_at__isnull=False).exists()
        assert not LedgerEntry.objects.exists() and not AgentAuditEntry.objects.exists()


class TestApprove:
    def test_it_approves_before_the_hold_period_ends_and_credits_the_partner(self, agent, program):
        commission = commission_in(program)
        response = act(agent, commission, "approve")
        assert response.status_code == 200
        data = response.json()["data"]
        commission.refresh_from_db()
        assert (commission.status, commission.credited) == (CommissionStatus.APPROVED, True)
        assert (data["id"], data["status"], data["approved_at"]) == (
            commission.pk,
            "approved",
            commission.approved_at.isoformat(),
        )
        assert data["payable_cents"] == 2_000
        [credit] = LedgerEntry.objects.filter(commission=commission)
        assert (credit.kind, credit.amount_cents) == (LedgerEntry.Kind.CREDIT, 2_000)
        assert balance(commission) == 2_000
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == (
            "commission.approve",
            "commission",
            str(commission.pk),
        )
        assert entry.before["status"] == "pending" and entry.before["approved_at"] is None
        assert entry.after == data

    def test_an_approved_commission_is_409_and_credited_once(self, agent, program):
        commission = commission_in(program)
        commission_approve_early(commission_id=commission.pk)
        response = act(agent, commission, "approve")
        assert response.json() == conflict(core_messages.COMMISSION_APPROVE_NOT_PENDING.format(status="approved"))
        assert LedgerEntry.objects.count() == 1 and balance(commission) == 2_000
        assert not AgentAuditEntry.objects.exists()

    def test_a_held_commission_is_409_until_released(self, agent, program):
        commission = commission_in(program)
        commission_hold(commission_id=commission.pk, reason="checking", actor="test")
        response = act(agent, commission, "approve")
        assert response.json() == conflict(core_messages.COMMISSION_APPROVE_NOT_PENDING.format(status="pending"))
        assert balance(commission) == 0  # only the hold's record, of no amount
        assert act(agent, commission, "release").status_code == 200
        assert act(agent, commission, "approve").status_code == 200
        assert balance(commission) == 2_000

    def test_a_retry_with_the_same_idempotency_key_credits_once(self, agent, program):
        commission = commission_in(program)
        first = act(agent, commission, "approve", HTTP_IDEMPOTENCY_KEY="approve-1")
        again = act(agent, commission, "approve", HTTP_IDEMPOTENCY_KEY="approve-1")
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        assert "Idempotent-Replayed" not in first
        assert LedgerEntry.objects.count() == 1 and balance(commission) == 2_000
        assert AgentAuditEntry.objects.count() == 1
        # Without the key, the retry is a new request: refused, the commission is no longer pending.
        assert act(agent, commission, "approve").status_code == 409

    def test_the_same_idempotency_key_with_another_request_is_409(self, agent, program):
        commission = commission_in(program)
        assert act(agent, commission, "hold", {"reason": "a"}, HTTP_IDEMPOTENCY_KEY="k").status_code == 200
        other = act(agent, commission, "hold", {"reason": "b"}, HTTP_IDEMPOTENCY_KEY="k")
        assert other.json() == platform_error(
            409, "ConflictError", messages.IDEMPOTENCY_CONFLICT, messages.CODE_IDEMPOTENCY_CONFLICT
        )
        elsewhere = act(agent, commission, "release", HTTP_IDEMPOTENCY_KEY="k")
        assert elsewhere.json()["error"]["code"] == messages.CODE_IDEMPOTENCY_CONFLICT
        commission.refresh_from_db()
        assert commission.hold_reason == "a" and commission.held_at is not None
        assert AgentAuditEntry.objects.count() == 1


class TestVoid:
    def test_voiding_a_pending_commission_reverses_it_with_a_ledger_record_of_no_amount(self, agent, program):
        commission = commission_in(program)
        response = act(agent, commission, "void", {"reason": "test order"})
        assert response.status_code == 200
        data = response.json()["data"]
        commission.refresh_from_db()
        assert (commission.status, commission.void_reason) == (CommissionStatus.REVERSED, "test order")
        assert (data["status"], data["void_reason"], data["voided_at"]) == (
            "reversed",
            "test order",
            commission.voided_at.isoformat(),
        )
        assert data["payable_cents"] == 0
        assert list(LedgerEntry.objects.values_list("kind", "amount_cents")) == [("review", 0)]
        assert balance(commission) == 0
        review = commission.reviews.get()
        assert review.action == "voided" and review.actor.startswith("agent key ")
        assert agent.raw_key not in review.actor  # the key's mask, never the key
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == (
            "commission.void",
            "commission",
            str(commission.pk),
        )
        assert (entry.before["status"], entry.before["voided_at"], entry.after) == ("pending", None, data)

    def test_voiding_a_credited_commission_deducts_its_credit(self, agent, program):
        commission = commission_in(program, hold_until=timezone.now())
        assert commission_approve(commission_id=commission.pk)
        assert balance(commission) == 2_000
        response = act(agent, commission, "void", {"reason": "fraud"})
        assert response.status_code == 200
        assert balance(commission) == 0
        deduction = LedgerEntry.objects.get(kind=LedgerEntry.Kind.DEDUCTION)
        assert (deduction.amount_cents, deduction.commission_id) == (-2_000, commission.pk)
        assert response.json()["data"]["clawed_back_cents"] == 2_000
        entry = AgentAuditEntry.objects.get()
        assert (entry.before["status"], entry.after["status"]) == ("approved", "reversed")

    def test_voiding_shrinks_an_open_withdrawal_to_fit(self, agent, program):
        commission = commission_in(program, hold_until=timezone.now())
        assert commission_approve(commission_id=commission.pk)
        kept = commission_in(program, partner=commission.partner, hold_until=timezone.now())
        assert commission_approve(commission_id=kept.pk)
        withdrawal = withdrawal_request(partner=commission.partner, amount_cents=3_000, currency="USD")
        assert act(agent, commission, "void", {"reason": "fraud"}).status_code == 200
        withdrawal.refresh_from_db()
        assert (balance(commission), withdrawal.amount_cents, withdrawal.status) == (2_000, 2_000, "open")

    def test_a_paid_or_reversed_commission_is_409(self, agent, program):
        commission = commission_in(program, hold_until=timezone.now())
        assert commission_approve(commission_id=commission.pk)
        assert withdrawal_mark_paid(
            withdrawal=withdrawal_request(partner=commission.partner, amount_cents=2_000, currency="USD")
        )
        commission.refresh_from_db()
        assert commission.status == CommissionStatus.PAID
        assert act(agent, commission, "void").json() == conflict(core_messages.COMMISSION_VOID_PAID)
        voided = commission_in(program)
        assert act(agent, voided, "void").status_code == 200
        assert act(agent, voided, "void").json() == conflict(core_messages.COMMISSION_VOID_REVERSED)
        assert balance(commission) == 0 and AgentAuditEntry.objects.count() == 1

    @pytest.mark.parametrize(
        "body",
        [
            {},
            {"reason": ""},
            {"reason": "   "},
            {"reason": None},
            {"reason": 42},
            {"reason": ["fraud"]},
            {"reason": "x" * 501},
            {"why": "fraud"},
        ],
    )
    def test_a_missing_or_bad_reason_is_400_and_changes_nothing(self, agent, program, body):
        commission = commission_in(program)
        response = act(agent, commission, "void", body)
        assert response.json() == platform_error(
            400, "BadRequestError", messages.VOID_REASON_INVALID, messages.CODE_BAD_REQUEST
        )
        commission.refresh_from_db()
        assert commission.status == CommissionStatus.PENDING and not AgentAuditEntry.objects.exists()

    @pytest.mark.parametrize("action", ["void", "hold"])
    def test_a_reason_with_a_nul_character_is_400(self, agent, program, action):
        commission = commission_in(program)
        response = act(agent, commission, action, {"reason": "nul\x00byte"})
        assert response.json() == platform_error(
            400, "BadRequestError", core_messages.TEXT_NOT_STORABLE.format(field="reason"), messages.CODE_BAD_REQUEST
        )
        commission.refresh_from_db()
        assert (commission.status, commission.held_at) == (CommissionStatus.PENDING, None)

    def test_a_body_that_is_not_an_object_is_400(self, agent, program):
        commission = commission_in(program)
        for action in ("void", "hold"):
            response = act(agent, commission, action, ["fraud"])
            assert response.json() == platform_error(
                400, "BadRequestError", messages.BODY_NOT_OBJECT, messages.CODE_BAD_REQUEST
            )

    def test_a_reason_of_500_characters_is_kept(self, agent, program):
        commission = commission_in(program)
        assert act(agent, commission, "void", {"reason": "x" * 500}).status_code == 200
        commission.refresh_from_db()
        assert commission.void_reason == "x" * 500


class TestHoldAndRelease:
    def test_hold_keeps_a_due_commission_from_approval_until_released(self, agent, program):
        commission = commission_in(program, hold_until=timezone.now())
        response = act(agent, commission, "hold", {"reason": "checking the order"})
        assert response.status_code == 200
        data = response.json()["data"]
        commission.refresh_from_db()
        assert commission.held_at is not None and commission.hold_reason == "checking the order"
        assert (data["held_at"], data["hold_reason"], data["status"]) == (
            commission.held_at.isoformat(),
            "checking the order",
            "pending",
        )
        assert not commission_approve(commission_id=commission.pk)
        released = act(agent, commission, "release")
        assert released.status_code == 200
        assert (released.json()["data"]["held_at"], released.json()["data"]["hold_reason"]) == (None, "")
        # Its hold period is over: the release approved and credited it at once.
        assert released.json()["data"]["status"] == "approved"
        assert not commission_approve(commission_id=commission.pk)
        assert balance(commission) == 2_000
        hold, release = AgentAuditEntry.objects.order_by("pk")
        assert (hold.action, hold.before["held_at"], hold.after) == ("commission.hold", None, data)
        assert (release.action, release.before["hold_reason"], release.after) == (
            "commission.release",
            "checking the order",
            released.json()["data"],
        )

    @pytest.mark.parametrize("body", [{}, {"reason": None}, {"reason": ""}])
    def test_the_hold_reason_is_optional(self, agent, program, body):
        commission = commission_in(program)
        response = act(agent, commission, "hold", body)
        assert response.status_code == 200 and response.json()["data"]["hold_reason"] == ""
        commission.refresh_from_db()
        assert commission.held_at is not None

    @pytest.mark.parametrize("reason", [42, "x" * 501, ["why"]])
    def test_a_bad_hold_reason_is_400(self, agent, program, reason):
        commission = commission_in(program)
        response = act(agent, commission, "hold", {"reason": reason})
        assert response.json() == platform_error(
            400, "BadRequestError", messages.HOLD_REASON_INVALID, messages.CODE_BAD_REQUEST
        )
        commission.refresh_from_db()
        assert commission.held_at is None

    def test_holding_a_commission_that_is_not_pending_is_409(self, agent, program):
        commission = commission_in(program)
        commission_approve_early(commission_id=commission.pk)
        response = act(agent, commission, "hold")
        assert response.json() == conflict(core_messages.COMMISSION_HOLD_NOT_PENDING.format(status="approved"))

    def test_releasing_a_commission_not_on_hold_is_409(self, agent, program):
        response = act(agent, commission_in(program), "release")
        assert response.json() == conflict(core_messages.COMMISSION_NOT_HELD)
        assert not AgentAuditEntry.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_concurrent_approve_and_void_leave_a_consistent_ledger(workspace, program):
    agent = agent_for(workspace)
    commissions = [commission_in(program) for _ in range(3)]

    def send(n: int) -> list[int]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent.raw_key}")
        action = "approve" if n % 2 == 0 else "void"
        statuses = []
        for commission in commissions:
            path = f"{COMMISSIONS}/{commission.pk}/{action}"
            statuses.append(
                client.post(path, {"reason": "race"} if action == "void" else {}, format="json").status_code
            )
        return statuses

    approvers_and_voiders = run_together(4, send)

    for index, commission in enumerate(commissions):
        commission.refresh_from_db()
        statuses = sorted(answers[index] for answers in approvers_and_voiders)
        # A void of a commission never credited writes a record of no amount; only money entries matter here.
        entries = list(
            LedgerEntry.objects.filter(commission=commission)
            .exclude(kind=LedgerEntry.Kind.REVIEW)
            .values_list("kind", "amount_cents")
        )
        # Whoever came first, the commission ends reversed and pays nothing: one void wins, the other is refused.
        assert commission.status == CommissionStatus.REVERSED
        assert sum(amount for _, amount in entries) == 0
        if entries:
            # approved first: credited once, then the whole credit deducted once
            assert sorted(entries) == sorted([(LedgerEntry.Kind.CREDIT, 2_000), (LedgerEntry.Kind.DEDUCTION, -2_000)])
            assert statuses == [200, 200, 409, 409]
        else:
            assert statuses == [200, 409, 409, 409]
        assert balance(commission) == 0
    audited = AgentAuditEntry.objects.count()
    assert audited == sum(status == 200 for answers in approvers_and_voiders for status in answers)
