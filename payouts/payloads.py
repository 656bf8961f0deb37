from typing import Any

from webhooks.models import utc_text


def payout_event_data(payout: Any) -> dict[str, Any]:
    """payout.created / paid / failed: the payout as the change left it."""
    return {
        "run_id": payout.run_id,
        "partner_id": payout.partner_id,
        "amount_cents": payout.amount_cents,
        "currency": payout.currency,
        "status": payout.status,
        "rail": payout.rail,
        "stripe_transfer_id": payout.stripe_transfer_id or None,
        "failure_code": payout.failure_code or None,
        "failure_message": payout.failure_message or None,
        "created_at": utc_text(payout.created_at),
        "paid_at": utc_text(payout.paid_at),
        "failed_at": utc_text(payout.failed_at),
    }
