from typing import Literal, Required, TypedDict

from commissions.services import RefundOutcome, refund_apply
from core import messages
from core.errors import NotFoundError
from programs.models import ProgramKey

from ..models import SaleEvent

RefundReason = Literal["refund", "chargeback"]


class RefundInput(TypedDict, total=False):
    """A refund as tracking.api's RefundInputSerializer validates it: an optional field the body leaves
    out is absent; one it sends may be null."""

    transaction_id: Required[str]
    reason: RefundReason | Literal[""] | None
    refund_amount_cents: int | None
    refund_id: str | None
    refund_reason: str | None


def refund_record(*, data: RefundInput, key: ProgramKey) -> RefundOutcome:
    """Refunds part or all of a sale of the key's program. Raises NotFoundError when the program has
    no live sale under that transaction_id."""
    sale = SaleEvent.objects.filter(
        program_id=key.program_id, processor_event_id=data["transaction_id"], is_test=False
    ).first()
    if sale is None:
        raise NotFoundError(messages.REFUND_SALE_NOT_FOUND, code="not_found")
    reason = (data.get("refund_reason") or "").strip() or (data.get("reason") or "")
    return refund_apply(
        sale=sale,
        amount=data.get("refund_amount_cents") or None,
        refund_id=data.get("refund_id") or None,
        reason=reason,
    )
