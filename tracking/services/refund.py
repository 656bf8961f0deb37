"""Refunds sent to the tracking API: the sale they name, refunded through commissions.services.refund_apply, or
nothing at all in test mode."""

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


def refund_test_mode(*, key: ProgramKey, additional_data: Any) -> RefundInTestMode | None:
    """A refund in test mode (services.common.is_test_mode: the test key, or additional_data.test_mode) refunds
    nothing, whatever else it says: a caller may answer it before reading the rest of the refund."""
    return RefundInTestMode() if is_test_mode(additional_data, key) else None


def refund_record(
    *, data: RefundInput, key: ProgramKey, additional_data: Any = None
) -> RefundOutcome | RefundInTestMode:
    """Refunds part or all of a sale of the key's program; in test mode (refund_test_mode) nothing. Raises
    NotFoundError when the program has no live sale under that transaction_id."""
    in_test_mode = refund_test_mode(key=key, additional_data=additional_data)
    if in_test_mode is not None:
        return in_test_mode
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
