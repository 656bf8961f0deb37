"""The sales' invariants for `manage.py verify_integrity` (core.integrity), registered in TrackingConfig.ready: every
attributed live sale settled (its commission, or the recorded reason it pays none), each commission agreeing with
its sale, refunds within the sale, and the sale.created webhook event of each sale."""

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from commissions.models import Commission
from core.integrity import CheckContext, IntegrityCheck
from webhooks.models import EventType, WebhookEvent

from .models import SaleEvent
from .reconciler import sales_missing_commission


def unsettled_sales(context: CheckContext) -> QuerySet[SaleEvent]:
    """The reconciler's own definition (tracking.reconciler): past its grace period, such a sale's commission was
    lost and the reconciler has not completed it."""
    return sales_missing_commission(now=context.now)


def commission_against_sale(context: CheckContext) -> QuerySet[Commission]:
    """A commission is its sale's: same program, partner and currency, on a live attributed sale that has no
    reason recorded for paying nothing. A milestone bonus has no sale (tiers.milestones): not asked here."""
    return Commission.objects.filter(sale__isnull=False).filter(
        ~Q(program_id=F("sale__program_id"))
        | Q(sale__partner_id__isnull=True)
        | ~Q(partner_id=F("sale__partner_id"))
        | ~Q(currency=F("sale__currency"))
        | Q(sale__is_test=True)
        | Q(sale__attributed=False)
        | ~Q(sale__no_commission_reason="")
    )


def refunds_within_sale(context: CheckContext) -> QuerySet[Commission]:
    """What refunds took of a sale (its commission's running total) never exceeds the sale."""
    return Commission.objects.filter(Q(sale_refunded_cents__gt=F("sale__amount_cents")) | Q(sale_refunded_cents__lt=0))


def sale_created_events(context: CheckContext) -> QuerySet[SaleEvent]:
    """Every sale the service recorded (live or test) wrote its sale.created event with it; imported sales
    (imports.engine) were never announced."""
    announced = WebhookEvent.objects.filter(type=EventType.SALE_CREATED, object_id=OuterRef("pk"), synthetic=False)
    return (
        SaleEvent.objects.filter(created_at__gte=context.events_since)
        .exclude(attributed_by="import")
        .exclude(Exists(announced))
    )


CHECKS = (
    IntegrityCheck(
        "sale_settled",
        "attributed and live, without a commission or a recorded reason for none",
        "sale(s)",
        unsettled_sales,
    ),
    IntegrityCheck(
        "commission_matches_sale",
        "of another program, partner or currency than their sale, or on a test, unattributed or unpaid sale",
        "commission(s)",
        commission_against_sale,
    ),
    IntegrityCheck(
        "refunds_within_sale",
        "refunded for more than the sale's amount",
        "sale(s)",
        refunds_within_sale,
        ref="sale_id",
    ),
    IntegrityCheck(
        "sale_created_events",
        "without their sale.created webhook event",
        "sale(s)",
        sale_created_events,
    ),
)
