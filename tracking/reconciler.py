"""Completes attributed live sales whose commission was lost: the sale endpoint stores the sale on its own
(so a resend answers 409) and settles its commission in a second transaction, so a process killed in between,
or a commission that failed with a 500, leaves a sale that is neither commissioned nor marked as paying
nothing. The reconciler finishes such a sale the way the request would have: the same entry point
(commission_create_for_sale: policy, customer conversion, commission) at the sale's own time (the rollup run
counts the sale on the partner-program counters, as it does every live sale). It lives with tracking, which owns
the sale and its settlement."""

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from commissions.models import Commission

from .models import Customer, SaleEvent
from .services.settlement import commission_create_for_sale

logger = logging.getLogger("svc.commissions")

# A sale request settles its commission within the request, and gunicorn kills a request after its 30-second
# worker timeout (processor events store the sale and its commission in one transaction, never apart). A sale
# 2 minutes old without either is therefore one whose request died; the reconciler never races a live one.
RECONCILE_GRACE = timedelta(minutes=2)


def sales_missing_commission(*, now: datetime, grace: timedelta = RECONCILE_GRACE) -> QuerySet[SaleEvent]:
    """Attributed live sales with a partner that have no commission and no recorded reason for none,
    stored more than `grace` ago."""
    return SaleEvent.objects.filter(
        attributed=True,
        is_test=False,
        partner__isnull=False,
        customer__isnull=False,
        no_commission_reason="",
        commission__isnull=True,
        created_at__lt=now - grace,
    )


def sale_reconcile(*, sale_id: int) -> bool:
    """Settles one sale's commission if it is still missing. True when this call settled it (a commission,
    or the policy's reason for none); False when there was nothing to do or another run holds the sale.
    The sale row is locked (skip_locked) so concurrent reconcilers never both settle it; the one-commission-
    per-sale constraint stops anything else."""
    with transaction.atomic():
        sale = SaleEvent.objects.select_for_update(skip_locked=True).filter(pk=sale_id).first()
        # Read after the lock, so a run that settled the sale just before is seen.
        if (
            sale is None
            or sale.customer_id is None
            or sale.no_commission_reason
            or Commission.objects.filter(sale_id=sale_id).exists()
        ):
            return False
        customer = Customer.objects.get(pk=sale.customer_id)
        settled = commission_create_for_sale(sale=sale, customer=customer, program=sale.program, now=sale.created_at)
        if settled.commission is not None and not settled.created:
            return False
    # Counted after commit, as the sale path counts: the metrics never undo a settled commission.
    logger.info(
        "commission.reconciled",
        extra={
            "sale_id": sale.pk,
            "commission_id": settled.commission.pk if settled.commission else None,
            "no_commission": settled.no_commission,
        },
    )
    return True


def commissions_reconcile(
    *, now: datetime | None = None, grace: timedelta = RECONCILE_GRACE, batch_size: int = 500
) -> int:
    """Settles every sale whose commission is missing (see sales_missing_commission). A sale that fails is
    logged and left for the next run. Returns how many sales this run settled."""
    now = now or timezone.now()
    settled = 0
    after = 0
    while True:
        ids = list(
            sales_missing_commission(now=now, grace=grace)
            .filter(pk__gt=after)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch_size]
        )
        for sale_id in ids:
            try:
                settled += sale_reconcile(sale_id=sale_id)
            except Exception:
                logger.exception("commission.reconcile_failed", extra={"sale_id": sale_id})
        if len(ids) < batch_size:
            return settled
        after = ids[-1]
