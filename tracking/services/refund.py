from typing import Any

from commissions.services import RefundOutcome, refund_apply
from core import messages
from core.errors import NotFoundError
from programs.models import ProgramKey

from ..models import SaleEvent


def refund_record(*, data: dict[str, Any], key: ProgramKey) -> RefundOutcome:
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
