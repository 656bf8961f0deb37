"""The commissions' invariants for `manage.py verify_integrity` (core.integrity), registered in CommissionsConfig.ready:
each commission's ledger entries, its status against its credit, its clawbacks, and the webhook events a commission
announces. Each is one set-based statement (a grouped join or an anti-join).

The checks written as SQL are the app's only hand-written SQL, so this module is commissions' SQL module
(tests/core/test_sql_homes.py); each says, in the comment above it, why it is not the ORM."""

from typing import Any

from django.db.models import BigIntegerField, Count, Exists, F, OuterRef, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from core.integrity import CheckContext, IntegrityCheck, Sql
from webhooks.models import EventType, WebhookEvent

from .models import Commission, CommissionStatus, LedgerEntry

# Imported commissions (imports.engine) arrive with their history: no webhook event announced them.
IMPORTED = Q(sale__attributed_by="import")


def _tables() -> dict[str, str]:
    return {"commission": Commission._meta.db_table, "ledger": LedgerEntry._meta.db_table}


# Not the ORM: it joins no grouped subquery; as a Subquery per commission the ledger would be summed again for each.
def commission_ledger(context: CheckContext) -> Sql:
    """A credited commission's credit and deduction entries add up to what it still pays (its amount less what
    refunds or a void took back); one never credited has none that move money. Payout-kind entries on a commission
    are an imported commission's payment, not its credit."""
    return Sql(
        "SELECT c.id AS integrity_ref, c.program_id AS integrity_program "
        "FROM {commission} c LEFT JOIN (SELECT commission_id, SUM(amount_cents) AS total FROM {ledger} "
        "WHERE commission_id IS NOT NULL AND kind <> %s GROUP BY commission_id) l ON l.commission_id = c.id "
        "WHERE COALESCE(l.total, 0) <> CASE WHEN c.credited THEN c.amount_cents - c.deducted_cents ELSE 0 END".format(
            **_tables()
        ),
        [LedgerEntry.Kind.PAYOUT.value],
    )


# Not the ORM: it joins no grouped subquery; the deductions are summed once and joined, as in commission_ledger.
def clawbacks_within_commission(context: CheckContext) -> Sql:
    """Refunds and voids never take back more than the commission: neither deducted_cents nor the ledger's
    deductions exceed its amount."""
    return Sql(
        "SELECT c.id AS integrity_ref, c.program_id AS integrity_program "
        "FROM {commission} c LEFT JOIN (SELECT commission_id, -SUM(amount_cents) AS clawed FROM {ledger} "
        "WHERE commission_id IS NOT NULL AND kind = %s GROUP BY commission_id) d ON d.commission_id = c.id "
        "WHERE c.deducted_cents > c.amount_cents OR c.deducted_cents < 0 OR COALESCE(d.clawed, 0) > c.amount_cents "
        "OR COALESCE(d.clawed, 0) < 0".format(**_tables()),
        [LedgerEntry.Kind.DEDUCTION.value],
    )


def status_against_credit(context: CheckContext) -> QuerySet[Commission]:
    """Approved and paid commissions were credited; a pending one was not."""
    past_pending = Q(status__in=(CommissionStatus.APPROVED, CommissionStatus.PAID))
    return Commission.objects.filter(
        (past_pending & Q(credited=False)) | Q(status=CommissionStatus.PENDING, credited=True)
    )


def ledger_against_commission(context: CheckContext) -> QuerySet[LedgerEntry]:
    """An entry naming a commission is that commission's partner's, in its program and currency: else a balance
    would hold another partner's money, or money in another currency."""
    return LedgerEntry.objects.filter(commission__isnull=False).filter(
        ~Q(partner_id=F("commission__partner_id"))
        | ~Q(currency=F("commission__currency"))
        | Q(program_id__isnull=True)
        | ~Q(program_id=F("commission__program_id"))
    )


def _announced(event_type: str) -> Any:
    return Exists(WebhookEvent.objects.filter(type=event_type, object_id=OuterRef("pk"), synthetic=False))


def commission_created_events(context: CheckContext) -> QuerySet[Commission]:
    return (
        Commission.objects.filter(created_at__gte=context.events_since)
        .exclude(IMPORTED)
        .exclude(_announced(EventType.COMMISSION_CREATED))
    )


def commission_approved_events(context: CheckContext) -> QuerySet[Commission]:
    return (
        Commission.objects.filter(credited=True, approved_at__gte=context.events_since)
        .exclude(IMPORTED)
        .exclude(_announced(EventType.COMMISSION_APPROVED))
    )


def commission_voided_events(context: CheckContext) -> QuerySet[Commission]:
    return Commission.objects.filter(voided_at__gte=context.events_since).exclude(
        _announced(EventType.COMMISSION_REVERSED)
    )


# Not the ORM: it joins no grouped subquery (the per-sale counts, a QuerySet compiled), only a Subquery per row.
def refund_events(context: CheckContext) -> Sql:
    """Each refund applied to a commission (refund_count) wrote one refund.applied event naming the sale. Asked of
    commissions created in the window, so every refund of theirs is too. The events are counted per sale once, then
    joined: a count per commission would read the events again for each."""
    per_sale = (
        WebhookEvent.objects.filter(type=EventType.REFUND_APPLIED, synthetic=False)
        .annotate(sale_ref=Cast(KeyTextTransform("sale_id", "data"), BigIntegerField()))
        .order_by()
        .values("sale_ref")
        .annotate(n=Count("pk"))
        .values("sale_ref", "n")
    )
    events_sql, events_params = per_sale.query.sql_with_params()
    commission = _tables()["commission"]
    return Sql(
        f"SELECT c.id AS integrity_ref, c.program_id AS integrity_program FROM {commission} c "
        "LEFT JOIN (" + events_sql + ") e ON e.sale_ref = c.sale_id "
        "WHERE c.created_at >= %s AND c.refund_count > 0 AND COALESCE(e.n, 0) <> c.refund_count",
        [*events_params, context.events_since],
    )


CHECKS = (
    IntegrityCheck(
        "commission_ledger",
        "whose ledger entries do not add up to what they credit less what refunds took back",
        "commission(s)",
        commission_ledger,
    ),
    IntegrityCheck(
        "clawbacks_within_commission",
        "from which refunds took back more than the commission (or less than nothing)",
        "commission(s)",
        clawbacks_within_commission,
    ),
    IntegrityCheck(
        "commission_status_credit",
        "approved or paid but never credited, or pending yet credited",
        "commission(s)",
        status_against_credit,
    ),
    IntegrityCheck(
        "ledger_commission_owner",
        "naming a commission of another partner, program or currency",
        "ledger entry(ies)",
        ledger_against_commission,
    ),
    IntegrityCheck(
        "commission_created_events",
        "without their commission.created webhook event",
        "commission(s)",
        commission_created_events,
    ),
    IntegrityCheck(
        "commission_approved_events",
        "credited without their commission.approved webhook event",
        "commission(s)",
        commission_approved_events,
    ),
    IntegrityCheck(
        "commission_voided_events",
        "voided without their commission.reversed webhook event",
        "commission(s)",
        commission_voided_events,
    ),
    IntegrityCheck(
        "refund_events",
        "whose refunds do not each have their refund.applied webhook event",
        "commission(s)",
        refund_events,
    ),
)
