"""The payouts' invariants for `manage.py verify_integrity` (core.integrity), registered in PayoutsConfig.ready: each
partner's balance against what its commissions and payouts say, each payout's ledger entries and statement, and the
webhook events of a payout's life.

The checks written as SQL are the app's only hand-written SQL, so this module is payouts' SQL module
(tests/core/test_sql_homes.py); each says, in the comment above it, why it is not the ORM."""

from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core.integrity import CheckContext, IntegrityCheck, Sql
from webhooks.models import EventType, WebhookEvent

from .models import Payout, PayoutCommission, PayoutStatus

DEAD = (PayoutStatus.FAILED.value, PayoutStatus.CANCELLED.value)


def _tables() -> dict[str, str]:
    return {
        "ledger": LedgerEntry._meta.db_table,
        "commission": Commission._meta.db_table,
        "payout": Payout._meta.db_table,
    }


# Not the ORM: it groups the rows of a UNION ALL, and a union's QuerySet takes no annotate() or filter().
def partner_balances(context: CheckContext) -> Sql:
    """Each partner's balance in a program and currency (the sum of its ledger entries, what payouts pay and
    partners see) is what its sources say: what its credited commissions still pay, less what its live payouts
    took, plus the entries that stand alone (adjustments, paid withdrawals, an imported commission's payment).
    The project keeps no balance apart from the ledger, so this is the ledger against the rows it records."""
    payout_kind = LedgerEntry.Kind.PAYOUT.value
    sql = (
        "SELECT CAST(partner_id AS TEXT) || '/' || COALESCE(CAST(program_id AS TEXT), '-') || '/' || currency "
        "AS integrity_ref, program_id AS integrity_program FROM ("
        "SELECT partner_id, program_id, currency, amount_cents AS delta FROM {ledger} "
        "WHERE commission_id IS NOT NULL OR payout_id IS NOT NULL "
        "UNION ALL SELECT partner_id, program_id, currency, "
        "-(CASE WHEN credited THEN amount_cents - deducted_cents ELSE 0 END) FROM {commission} "
        "UNION ALL SELECT partner_id, program_id, currency, CASE WHEN status IN (%s, %s) THEN 0 ELSE amount_cents END "
        "FROM {payout} "
        "UNION ALL SELECT partner_id, program_id, currency, -amount_cents FROM {ledger} "
        "WHERE commission_id IS NOT NULL AND kind = %s"
        ") sources GROUP BY partner_id, program_id, currency HAVING SUM(delta) <> 0"
    ).format(**_tables())
    return Sql(sql, [*DEAD, payout_kind])


# Not the ORM: it joins no grouped subquery; as a Subquery per payout the ledger would be summed again for each.
def payout_ledger(context: CheckContext) -> Sql:
    """A payout's entries (its debit, less what a refund reduced it by) add up to minus its amount while it is live,
    and to nothing once it failed (all of it given back) or was cancelled."""
    return Sql(
        "SELECT p.id AS integrity_ref, p.program_id AS integrity_program FROM {payout} p "
        "LEFT JOIN (SELECT payout_id, SUM(amount_cents) AS total FROM {ledger} WHERE payout_id IS NOT NULL "
        "GROUP BY payout_id) l ON l.payout_id = p.id "
        "WHERE COALESCE(l.total, 0) <> CASE WHEN p.status IN (%s, %s) THEN 0 ELSE -p.amount_cents END".format(
            **_tables()
        ),
        list(DEAD),
    )


def ledger_against_payout(context: CheckContext) -> QuerySet[LedgerEntry]:
    return LedgerEntry.objects.filter(payout__isnull=False).filter(
        ~Q(partner_id=F("payout__partner_id"))
        | ~Q(currency=F("payout__currency"))
        | Q(program_id__isnull=True)
        | ~Q(program_id=F("payout__program_id"))
        | ~Q(kind=LedgerEntry.Kind.PAYOUT)
    )


def commissions_paid_twice(context: CheckContext) -> QuerySet[Commission]:
    """No commission is in two live payouts (neither failed nor cancelled), whatever the rows' active flags say."""
    twice = (
        PayoutCommission.objects.exclude(payout__status__in=DEAD)
        .order_by()
        .values("commission_id")
        .annotate(payouts=Count("payout_id", distinct=True))
        .filter(payouts__gt=1)
        .values("commission_id")
    )
    return Commission.objects.filter(pk__in=twice)


def statement_rows_follow_payout(context: CheckContext) -> QuerySet[PayoutCommission]:
    """A payout's statement rows are active exactly while it is live: a failed or cancelled payout's commissions can
    be covered again."""
    dead = Q(payout__status__in=DEAD)
    return PayoutCommission.objects.filter((Q(active=True) & dead) | (Q(active=False) & ~dead))


def paid_payout_commissions(context: CheckContext) -> QuerySet[PayoutCommission]:
    """A paid payout's commissions are paid (or refunded since): none is still pending or approved."""
    return PayoutCommission.objects.filter(
        active=True,
        payout__status=PayoutStatus.PAID,
        commission__status__in=(CommissionStatus.PENDING, CommissionStatus.APPROVED),
    )


def payout_times(context: CheckContext) -> QuerySet[Payout]:
    """A paid payout has its paid_at, a failed one its failed_at."""
    return Payout.objects.filter(
        Q(status=PayoutStatus.PAID, paid_at__isnull=True) | Q(status=PayoutStatus.FAILED, failed_at__isnull=True)
    )


def _unannounced(event_type: str, since_field: str) -> Any:
    """The payouts that reached the event's moment in the window without their event. One check per event: an
    anti-join each, where one check OR-ing the three would read the events once per payout."""

    def offenders(context: CheckContext) -> QuerySet[Payout]:
        announced = WebhookEvent.objects.filter(type=event_type, object_id=OuterRef("pk"), synthetic=False)
        return Payout.objects.filter(**{f"{since_field}__gte": context.events_since}).exclude(Exists(announced))

    return offenders


CHECKS = (
    IntegrityCheck(
        "partner_balances",
        "(partner/program/currency) whose ledger sum is not what their commissions and payouts say",
        "partner balance(s)",
        partner_balances,
    ),
    IntegrityCheck(
        "payout_ledger",
        "whose ledger entries do not add up to minus their amount (nothing once failed or cancelled)",
        "payout(s)",
        payout_ledger,
    ),
    IntegrityCheck(
        "ledger_payout_owner",
        "naming a payout of another partner, program or currency, or not of the payout kind",
        "ledger entry(ies)",
        ledger_against_payout,
    ),
    IntegrityCheck(
        "commission_paid_once",
        "covered by two live payouts",
        "commission(s)",
        commissions_paid_twice,
    ),
    IntegrityCheck(
        "payout_statement_active",
        "with statement rows active though failed or cancelled, or inactive though live",
        "payout(s)",
        statement_rows_follow_payout,
        ref="payout_id",
        program="payout__program_id",
    ),
    IntegrityCheck(
        "paid_payout_commissions",
        "in a paid payout yet still pending or approved",
        "commission(s)",
        paid_payout_commissions,
        ref="commission_id",
        program="payout__program_id",
    ),
    IntegrityCheck(
        "payout_status_times",
        "paid without paid_at, or failed without failed_at",
        "payout(s)",
        payout_times,
    ),
    IntegrityCheck(
        "payout_created_events",
        "without their payout.created webhook event",
        "payout(s)",
        _unannounced(EventType.PAYOUT_CREATED, "created_at"),
    ),
    IntegrityCheck(
        "payout_paid_events",
        "paid without their payout.paid webhook event (also when a reversal failed them since)",
        "payout(s)",
        _unannounced(EventType.PAYOUT_PAID, "paid_at"),
    ),
    IntegrityCheck(
        "payout_failed_events",
        "failed without their payout.failed webhook event",
        "payout(s)",
        _unannounced(EventType.PAYOUT_FAILED, "failed_at"),
    ),
)
