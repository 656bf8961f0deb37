"""Reads about payouts shared by the run's page, the agent API and the partner's statement."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from commissions.models import LedgerEntry

from .models import Payout, PayoutCommission, PayoutStatus

LEFT_STATUSES = (PayoutStatus.PROCESSING, PayoutStatus.PAID)


@dataclass(frozen=True)
class ClawedBack:
    """A refund clawback (or a void's deduction) of a commission a payout covers, recorded after the payout left."""

    payout_id: int
    commission_id: int
    amount_cents: int  # what it took back, positive
    currency: str
    memo: str
    created_at: datetime


def left_at(payout: Payout) -> datetime | None:
    """When the payout left: exported or sent (`sent_at`), else marked paid straight away (`paid_at`); None while it
    has not (pending), or once it failed or was cancelled (its commissions are back on the balance)."""
    if payout.status not in LEFT_STATUSES:
        return None
    return payout.sent_at or payout.paid_at


def clawbacks_after_sending(payouts: Iterable[Payout]) -> dict[int, list[ClawedBack]]:
    """{payout id: its clawbacks after it left, oldest first} for the payouts that left and had any: what refunds took
    back from a partner already paid (the balance went negative, the next run nets it). One read whatever the
    number of payouts, none when no payout has left."""
    left = {payout.pk: when for payout in payouts if (when := left_at(payout)) is not None}
    if not left:
        return {}
    # One read: each live covered row with its commission's deductions (one join, reused by the columns).
    entries = "commission__ledger_entries__"
    rows = (
        PayoutCommission.objects.filter(
            payout_id__in=left, active=True, **{f"{entries}kind": LedgerEntry.Kind.DEDUCTION}
        )
        .values_list(
            "payout_id",
            "commission_id",
            f"{entries}amount_cents",
            f"{entries}currency",
            f"{entries}memo",
            f"{entries}created_at",
        )
        .order_by(f"{entries}created_at", f"{entries}id")
    )
    found: dict[int, list[ClawedBack]] = {}
    for payout_id, commission_id, amount, currency, memo, created_at in rows:
        if created_at < left[payout_id]:
            continue  # before it left, the refund could still reduce the payout
        found.setdefault(payout_id, []).append(
            ClawedBack(
                payout_id=payout_id,
                commission_id=commission_id,
                amount_cents=-amount,
                currency=currency,
                memo=memo,
                created_at=created_at,
            )
        )
    return found
