"""Refunds sent to the tracking API: the sale they name, refunded through commissions.services.refund_apply, or
nothing at all in test mode."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Required, TypedDict

from commissions.services import RefundOutcome, refund_apply
from core import messages
from core.errors import NotFoundError
from programs.models import ProgramKey

from ..models import SaleEvent
from .common import is_test_mode

RefundReason = Literal["refund", "chargeback"]


class RefundInput(TypedDict, total=False):
    """A refund as tracking.api's RefundInputSerializer validates it: an optional field the body leaves
    out is absent; one it sends may be null."""

    transaction_id: Required[str]
    reason: RefundReason | Literal[""] | None
    refund_amount_cents: int | None
    refund_id: str | None
    refund_reason: str | None


@dataclass(frozen=True)
class RefundInTestMode:
    """A refund in test mode (the test key, or additional_data.test_mode): nothing was refunded."""


def refund_record(
    *, key: ProgramKey, additional_data: Any, data: Callable[[], RefundInput]
) -> RefundOutcome | RefundInTestMode:
    """Refunds part or all of a sale of the key's program. In test mode (services.common.is_test_mode: the
    test key or additional_data.test_mode) nothing is refunded and the refund is not read: `data`, which reads
    and validates it (and may raise its errors), is called for a live refund only. Raises NotFoundError when
    the program has no live sale under that transaction_id."""
    if is_test_mode(additional_data, key):
        return RefundInTestMode()
    refund = data()
    sale = SaleEvent.objects.filter(
        program_id=key.program_id, processor_event_id=refund["transaction_id"], is_test=False
    ).first()
    if sale is None:
        raise NotFoundError(messages.REFUND_SALE_NOT_FOUND, code="not_found")
    reason = (refund.get("refund_reason") or "").strip() or (refund.get("reason") or "")
    return refund_apply(
        sale=sale,
        amount=refund.get("refund_amount_cents") or None,
        refund_id=refund.get("refund_id") or None,
        reason=reason,
    )
