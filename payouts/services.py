"""Payout runs: preview, confirm (one payout per partner, debited on the ledger in the same transaction), settle
as paid or failed, and fit payouts not sent yet to a clawback (docs/payouts.md).

Money invariants, each held by a lock order and a database constraint, not by a prior read:
- A partner's payout comes out of what is available under the partner row lock: the balance in the program and
  currency (commissions credited past their hold, minus clawbacks and payouts), never above the partner's whole
  balance in that currency minus open withdrawals. Held commissions are never credited, so never paid.
- Never two open payouts for one partner, program and currency (payout_one_open_per_partner), one debit per
  payout (ledger_one_debit_per_payout), one transfer per payout (idempotency key and transfer_group).
- Lock order, as the refund path's: commissions, then partners, then payouts. Confirm and marking paid take
  commissions first; a failure takes the partner, then the payout; sending takes only the payout.
- Every partner's ledger equals commissions credited minus clawbacks minus live payouts, at every commit."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from commissions.models import Commission, CommissionStatus, LedgerEntry, Withdrawal
from core.money import money
from core.tasks import enqueue
from programs.models import Partner, PartnerAccount, Program
from webhooks.events import event_emit
from webhooks.models import EventType

from .ledger import (
    DEBIT_MEMO,
    PayoutError,
    RunAlreadyConfirmed,
    _audit,
    payout_account_for,
    payout_mark_failed,
    payout_mark_paid,
    payouts_fit_balance,
)
from .models import (
    MANUAL_RAILS,
    OPEN_PAYOUT_STATUSES,
    Payout,
    PayoutAccount,
    PayoutCommission,
    PayoutMinimum,
    PayoutRun,
    PayoutRunAudit,
    PayoutStatus,
    Rail,
)
from .payloads import payout_event_data
from .stripe_rail import payout_send_task

# Settling lives in payouts.ledger (the Stripe rail settles through it too); these names are part of this module's
# interface for the dashboard, the agent API, the portal and the command.
__all__ = [
    "PayoutError",
    "RunAlreadyConfirmed",
    "available_by_partner",
    "manual_rail_set",
    "not_ready_reason",
    "payout_account_for",
    "payout_mark_failed",
    "payout_mark_paid",
    "payouts_fit_balance",
    "program_minimum",
    "run_confirm",
    "run_export",
    "run_preview",
    "scheduled_runs",
]


# --- What is available ------------------------------------------------------------------------------------------


def _sums_by_partner(rows: Iterable[Any]) -> dict[int, int]:
    """{partner_id: total} of a values("partner_id").annotate(total=...) read."""
    return {row["partner_id"]: row["total"] or 0 for row in rows}


def available_by_partner(*, program: Program, currency: str, partner_ids: list[int] | None = None) -> dict[int, int]:
    """What each partner of the program could be paid now in the currency (partners with nothing are left out):
    the program's balance, capped by the partner's whole balance in the currency less open withdrawals (the
    withdrawals a partner asked for are not the program's to spend twice). Three grouped reads."""
    ledger = LedgerEntry.objects.filter(currency=currency)
    if partner_ids is not None:
        ledger = ledger.filter(partner_id__in=partner_ids)
    in_program = _sums_by_partner(
        ledger.filter(program=program).values("partner_id").annotate(total=Sum("amount_cents")).order_by()
    )
    candidates = [partner_id for partner_id, total in in_program.items() if total > 0]
    if not candidates:
        return {}
    whole = _sums_by_partner(
        LedgerEntry.objects.filter(currency=currency, partner_id__in=candidates)
        .values("partner_id")
        .annotate(total=Sum("amount_cents"))
        .order_by()
    )
    withdrawals = _sums_by_partner(
        Withdrawal.objects.filter(currency=currency, partner_id__in=candidates, status=Withdrawal.Status.OPEN)
        .values("partner_id")
        .annotate(total=Sum("amount_cents"))
        .order_by()
    )
    available = {
        partner_id: min(in_program[partner_id], whole.get(partner_id, 0) - withdrawals.get(partner_id, 0))
        for partner_id in candidates
    }
    return {partner_id: amount for partner_id, amount in available.items() if amount > 0}


def program_minimum(*, program: Program, currency: str) -> int:
    """The program's minimum payout in the currency's minor units (0 when the owner set none)."""
    found = PayoutMinimum.objects.filter(program=program, currency=currency).first()
    return found.minimum_cents if found is not None else 0


def payout_account_of(partner: Partner, accounts: dict[int, PayoutAccount]) -> PayoutAccount | None:
    return accounts.get(partner.account_id) if partner.account_id is not None else None


def not_ready_reason(partner: Partner, payout_account: PayoutAccount | None) -> str:
    """Why a partner with money due cannot be paid now ("" when they can): shown to the owner in the preview."""
    if not partner.is_active:
        return "partner deactivated"
    if partner.account_id is None:
        return "no portal account: invite the partner so they can set up payouts"
    if payout_account is None:
        return "payouts not set up by the partner"
    if payout_account.rail == Rail.STRIPE:
        if not payout_account.stripe_account_id:
            return "Stripe onboarding not started"
        if not payout_account.transfers_active:
            due = ", ".join(payout_account.requirements_due[:5])
            return "Stripe onboarding not finished" + (f" (still due: {due})" if due else "")
        return ""
    if not payout_account.destination:
        return f"no {payout_account.get_rail_display().split(' ')[0]} email or bank reference"
    return ""


@dataclass(frozen=True)
class PreviewLine:
    partner_id: int
    partner: str
    amount_cents: int
    rail: str
    ready: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {
            "partner_id": self.partner_id,
            "partner": self.partner,
            "amount_cents": self.amount_cents,
            "rail": self.rail,
            "ready": self.ready,
            "reason": self.reason,
        }


def preview_lines(*, program: Program, currency: str, minimum_cents: int) -> list[PreviewLine]:
    """Every partner of the program whose available balance in the currency reaches the minimum, by name, with
    the rail they are paid by and, when they cannot be paid now, why."""
    available = available_by_partner(program=program, currency=currency)
    due = {partner_id: amount for partner_id, amount in available.items() if amount >= max(minimum_cents, 1)}
    partners = list(Partner.objects.filter(pk__in=due).order_by("name", "pk"))
    accounts = {
        payout_account.account_id: payout_account
        for payout_account in PayoutAccount.objects.filter(account_id__in=[p.account_id for p in partners])
    }
    open_payouts = set(
        Payout.objects.filter(
            program=program, currency=currency, partner_id__in=due, status__in=OPEN_PAYOUT_STATUSES
        ).values_list("partner_id", flat=True)
    )
    lines = []
    for partner in partners:
        payout_account = payout_account_of(partner, accounts)
        reason = not_ready_reason(partner, payout_account)
        if not reason and partner.pk in open_payouts:
            reason = "a payout to this partner is still open"
        lines.append(
            PreviewLine(
                partner_id=partner.pk,
                partner=partner.name,
                amount_cents=due[partner.pk],
                rail=payout_account.rail if payout_account is not None else "",
                ready=not reason,
                reason=reason,
            )
        )
    return lines


# --- Runs -------------------------------------------------------------------------------------------------------


def run_preview(*, program: Program, currency: str, actor: str, minimum_cents: int | None = None) -> PayoutRun:
    """A run in preview: the lines as they stand now (nothing is debited until it is confirmed)."""
    if minimum_cents is None:
        minimum_cents = program_minimum(program=program, currency=currency)
    if minimum_cents < 0:
        raise PayoutError("minimum_cents must be 0 or more")
    lines = preview_lines(program=program, currency=currency, minimum_cents=minimum_cents)
    with transaction.atomic():
        run = PayoutRun.objects.create(
            workspace_id=program.workspace_id,
            program=program,
            currency=currency,
            minimum_cents=minimum_cents,
            lines=[line.as_dict() for line in lines],
        )
        ready = [line for line in lines if line.ready]
        total = sum(line.amount_cents for line in ready)
        _audit(run, PayoutRunAudit.Action.PREVIEWED, actor, f"{len(ready)} payable, {money(total, currency)}")
    return run


def _coverable_commissions(*, program_id: int, currency: str, partner_ids: list[int]) -> dict[int, list[Commission]]:
    """Approved commissions not covered by a live payout, locked (the refund path's first lock), oldest approved
    first, by partner."""
    rows = (
        Commission.objects.select_for_update(of=("self",))
        .filter(
            program_id=program_id,
            currency=currency,
            partner_id__in=partner_ids,
            status__in=(CommissionStatus.APPROVED, CommissionStatus.REFUNDED),
            credited=True,
        )
        .exclude(payout_rows__active=True)
        .order_by("pk")
    )
    by_partner: dict[int, list[Commission]] = {}
    for commission in rows:
        by_partner.setdefault(commission.partner_id, []).append(commission)
    for commissions in by_partner.values():
        commissions.sort(key=lambda commission: (commission.approved_at or commission.created_at, commission.pk))
    return by_partner


def run_confirm(*, run_id: int, actor: str, now: datetime | None = None) -> list[Payout]:
    """Confirms a previewed run: for every partner that can be paid now, one payout of what is available under the
    partner lock (it may have changed since the preview), its ledger debit and the commissions it covers, in one
    transaction; Stripe payouts are sent after commit. A second confirm of the run, or a partner already being
    paid by another run, pays nothing more."""
    now = now or timezone.now()
    with transaction.atomic():
        run = PayoutRun.objects.select_for_update(of=("self",)).select_related("program").get(pk=run_id)
        if run.status != PayoutRun.Status.PREVIEW:
            raise RunAlreadyConfirmed(f"Payout run #{run.pk} is already confirmed")
        program = run.program
        partner_ids = sorted(line["partner_id"] for line in run.lines)
        coverable = _coverable_commissions(program_id=program.pk, currency=run.currency, partner_ids=partner_ids)
        partners = {
            partner.pk: partner
            for partner in Partner.objects.select_for_update().filter(pk__in=partner_ids).order_by("pk")
        }
        available = available_by_partner(program=program, currency=run.currency, partner_ids=partner_ids)
        accounts = {
            payout_account.account_id: payout_account
            for payout_account in PayoutAccount.objects.filter(
                account_id__in=[p.account_id for p in partners.values() if p.account_id is not None]
            )
        }
        busy = set(
            Payout.objects.select_for_update()
            .filter(program=program, currency=run.currency, partner_id__in=partner_ids, status__in=OPEN_PAYOUT_STATUSES)
            .values_list("partner_id", flat=True)
        )
        made: list[Payout] = []
        for partner_id in partner_ids:
            partner = partners.get(partner_id)
            amount = available.get(partner_id, 0)
            if partner is None or partner_id in busy or amount < max(run.minimum_cents, 1):
                continue
            payout_account = payout_account_of(partner, accounts)
            if payout_account is None or not_ready_reason(partner, payout_account):
                continue
            payout = Payout.objects.create(
                run=run,
                program=program,
                partner=partner,
                amount_cents=amount,
                currency=run.currency,
                rail=payout_account.rail,
                destination=payout_account.destination,
                created_at=now,
            )
            LedgerEntry.objects.create(
                partner=partner,
                program=program,
                kind=LedgerEntry.Kind.PAYOUT,
                amount_cents=-amount,
                currency=run.currency,
                memo=DEBIT_MEMO.format(pk=payout.pk),
                payout=payout,
                created_at=now,
            )
            _cover(payout, coverable.get(partner_id, []))
            event_emit(
                program_id=program.pk,
                type=EventType.PAYOUT_CREATED,
                livemode=True,
                object_id=payout.pk,
                data=payout_event_data(payout),
            )
            made.append(payout)
        run.status = PayoutRun.Status.CONFIRMED
        run.confirmed_at = now
        run.save(update_fields=["status", "confirmed_at"])
        total = sum(payout.amount_cents for payout in made)
        _audit(run, PayoutRunAudit.Action.CONFIRMED, actor, f"{len(made)} payouts, {money(total, run.currency)}")
        stripe_ids = [payout.pk for payout in made if payout.rail == Rail.STRIPE]
        if stripe_ids:
            transaction.on_commit(lambda: _send_later(stripe_ids))
    return made


def _send_later(payout_ids: list[int]) -> None:
    for payout_id in payout_ids:
        enqueue(payout_send_task, payout_id)


def _cover(payout: Payout, commissions: list[Commission]) -> None:
    """The commissions the payout's amount covers whole, oldest approved first (its statement)."""
    left = payout.amount_cents
    rows = []
    for commission in commissions:
        net = commission.amount_cents - commission.deducted_cents
        if net <= 0:
            continue
        if net > left:
            break
        left -= net
        rows.append(PayoutCommission(payout=payout, commission=commission, amount_cents=net))
    PayoutCommission.objects.bulk_create(rows)


# --- Manual rails -----------------------------------------------------------------------------------------------


def run_export(*, run_id: int, rail: str, actor: str) -> list[Payout]:
    """The run's payouts on a manual rail, for the owner to pay elsewhere: those not exported yet become
    `processing` (a refund no longer reduces them); exporting again lists the same open ones."""
    if rail not in MANUAL_RAILS:
        raise PayoutError(f"{rail!r} is not a manual rail: use one of {', '.join(MANUAL_RAILS)}")
    with transaction.atomic():
        run = PayoutRun.objects.select_for_update().get(pk=run_id)
        payouts = list(
            Payout.objects.select_for_update(of=("self",))
            .filter(run=run, rail=rail, status__in=OPEN_PAYOUT_STATUSES)
            .select_related("partner")
            .order_by("pk")
        )
        now = timezone.now()
        for payout in payouts:
            if payout.status == PayoutStatus.PENDING:
                payout.status = PayoutStatus.PROCESSING
                payout.sent_at = now
                payout.save(update_fields=["status", "sent_at", "updated_at"])
        _audit(run, PayoutRunAudit.Action.EXPORTED, actor, f"{len(payouts)} {rail} payouts")
    return payouts


# --- Payout accounts --------------------------------------------------------------------------------------------


def manual_rail_set(
    *, account: PartnerAccount, rail: str, payout_email: str = "", bank_reference: str = "", holder_name: str = ""
) -> PayoutAccount:
    """Chooses a manual rail: PayPal needs an email; Wise an email or a bank reference."""
    if rail not in MANUAL_RAILS:
        raise PayoutError(f"Choose one of: {', '.join(MANUAL_RAILS)}")
    payout_email = payout_email.strip().lower()
    bank_reference = bank_reference.strip()
    if rail == Rail.PAYPAL and not payout_email:
        raise PayoutError("PayPal payouts need the email of your PayPal account")
    if rail == Rail.WISE and not (payout_email or bank_reference):
        raise PayoutError("Wise payouts need an email or a bank reference")
    with transaction.atomic():
        payout_account = PayoutAccount.objects.select_for_update().get(pk=payout_account_for(account).pk)
        payout_account.rail = rail
        payout_account.payout_email = payout_email
        payout_account.bank_reference = bank_reference if rail == Rail.WISE else ""
        payout_account.holder_name = holder_name.strip()[:200]
        payout_account.save()
    return payout_account


def scheduled_runs(*, now: datetime | None = None) -> list[PayoutRun]:
    """The daily run of every program and currency whose minimum is marked automatic: previewed and confirmed by
    "schedule", audited like an owner's."""
    runs = []
    for minimum in PayoutMinimum.objects.filter(automatic=True).select_related("program").order_by("pk"):
        run = run_preview(
            program=minimum.program, currency=minimum.currency, actor="schedule", minimum_cents=minimum.minimum_cents
        )
        if any(line["ready"] for line in run.lines):
            run_confirm(run_id=run.pk, actor="schedule", now=now)
        runs.append(run)
    return runs
