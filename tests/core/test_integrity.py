"""`manage.py verify_integrity` (core.integrity): it passes on a world made through the real services, and each
invariant, broken by hand with an UPDATE, fails it naming the rows. On SQLite and PostgreSQL alike: the checks are
plain ORM or portable SQL."""

import json
from collections.abc import Callable
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import F
from django.utils import timezone

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core.integrity import integrity_readiness, integrity_verify, integrity_verify_task
from core.models import IntegrityRun
from insight.readiness import readiness_compute
from payouts.models import Payout, PayoutCommission
from programs.models import Partner
from tracking.models import SaleEvent
from webhooks.models import EventType, WebhookEvent

from .integrity_world import World, world_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> World:
    return world_build()


def verify(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("verify_integrity", *args, stdout=out)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_a_world_made_through_the_services_holds_every_invariant(world):
    sales = SaleEvent.objects.filter(pk__in=[s.pk for s in world.sales.values()])
    assert sales.filter(no_commission_reason="").count() == sales.count() - 1  # the renewal pays nothing
    assert Commission.objects.filter(status=CommissionStatus.REVERSED).exists()
    assert Commission.objects.filter(status=CommissionStatus.PAID).exists()

    status, out = verify()

    assert status == 0, out
    assert "integrity: 22 checks, all held" in out
    call_command("verify_integrity", stdout=StringIO())  # returns: no SystemExit


def _event(type: str, object_id: int) -> WebhookEvent:
    return WebhookEvent.objects.get(type=type, object_id=object_id)


def _credit(commission: Commission) -> LedgerEntry:
    return LedgerEntry.objects.get(commission=commission, kind=LedgerEntry.Kind.CREDIT)


def _debit(payout: Payout) -> LedgerEntry:
    return LedgerEntry.objects.get(payout=payout, amount_cents__lt=0)


def break_commission_ledger(w: World) -> object:
    commission = w.commission("failed0")
    LedgerEntry.objects.filter(pk=_credit(commission).pk).update(amount_cents=F("amount_cents") + 1)
    return commission.pk


def break_clawbacks(w: World) -> object:
    commission = w.commission("paid1")
    LedgerEntry.objects.filter(commission=commission, kind=LedgerEntry.Kind.DEDUCTION).update(
        amount_cents=-(commission.amount_cents + 1)
    )
    return commission.pk


def break_status_credit(w: World) -> object:
    commission = w.commission("held0")
    Commission.objects.filter(pk=commission.pk).update(status=CommissionStatus.APPROVED)
    return commission.pk


def break_ledger_commission_owner(w: World) -> object:
    entry = _credit(w.commission("failed1"))
    LedgerEntry.objects.filter(pk=entry.pk).update(partner=w.partners["reduced"])
    return entry.pk


def break_commission_created(w: World) -> object:
    commission = w.commission("paid0")
    WebhookEvent.objects.filter(pk=_event(EventType.COMMISSION_CREATED, commission.pk).pk).update(object_id=None)
    return commission.pk


def break_commission_approved(w: World) -> object:
    commission = w.commission("failed0")
    WebhookEvent.objects.filter(pk=_event(EventType.COMMISSION_APPROVED, commission.pk).pk).update(synthetic=True)
    return commission.pk


def break_commission_voided(w: World) -> object:
    commission = w.commission("voided")
    WebhookEvent.objects.filter(type=EventType.COMMISSION_REVERSED, object_id=commission.pk).update(
        type=EventType.COMMISSION_REFUNDED
    )
    return commission.pk


def break_refund_events(w: World) -> object:
    commission = w.commission("paid1")
    WebhookEvent.objects.filter(type=EventType.REFUND_APPLIED, data__sale_id=commission.sale_id).update(
        type=EventType.LEAD_CREATED
    )
    return commission.pk


def break_sale_settled(w: World) -> object:
    sale = w.sales["renewal"]
    SaleEvent.objects.filter(pk=sale.pk).update(no_commission_reason="", created_at=timezone.now() - timedelta(hours=1))
    return sale.pk


def break_commission_matches_sale(w: World) -> object:
    commission = w.commission("reduced0")
    assert commission.sale_id is not None
    SaleEvent.objects.filter(pk=commission.sale_id).update(attributed=False)
    return commission.pk


def break_refunds_within_sale(w: World) -> object:
    sale = w.sales["paid1"]
    Commission.objects.filter(sale=sale).update(sale_refunded_cents=sale.amount_cents + 1)
    return sale.pk


def break_sale_created(w: World) -> object:
    sale = w.sales["test"]
    WebhookEvent.objects.filter(type=EventType.SALE_CREATED, object_id=sale.pk).update(object_id=None)
    return sale.pk


def break_partner_balances(w: World) -> object:
    partner = w.partners["paid"]
    # The paid payout's debit moved to another partner: the payout still adds up, the two balances do not.
    LedgerEntry.objects.filter(pk=_debit(w.payouts["paid"]).pk).update(partner=w.partners["failed"])
    return f"{partner.pk}/{w.instant.pk}/USD"


def break_payout_ledger(w: World) -> object:
    payout = w.payouts["reduced"]
    LedgerEntry.objects.filter(pk=_debit(payout).pk).update(amount_cents=F("amount_cents") - 1)
    return payout.pk


def break_ledger_payout_owner(w: World) -> object:
    entry = _debit(w.payouts["paid"])
    LedgerEntry.objects.filter(pk=entry.pk).update(currency="EUR")
    return entry.pk


def break_commission_paid_once(w: World) -> object:
    paid = PayoutCommission.objects.filter(payout=w.payouts["paid"]).first()
    assert paid is not None
    row = PayoutCommission.objects.filter(payout=w.payouts["reduced"]).first()
    assert row is not None
    PayoutCommission.objects.filter(pk=row.pk).update(commission=paid.commission_id, active=False)
    return paid.commission_id


def break_payout_statement_active(w: World) -> object:
    payout = w.payouts["failed"]
    PayoutCommission.objects.filter(payout=payout).update(active=True)
    return payout.pk


def break_paid_payout_commissions(w: World) -> object:
    row = PayoutCommission.objects.filter(payout=w.payouts["paid"], commission__status=CommissionStatus.PAID).first()
    assert row is not None
    Commission.objects.filter(pk=row.commission_id).update(status=CommissionStatus.APPROVED)
    return row.commission_id


def break_payout_status_times(w: World) -> object:
    payout = w.payouts["failed"]
    Payout.objects.filter(pk=payout.pk).update(failed_at=None)
    return payout.pk


def break_payout_created_events(w: World) -> object:
    payout = w.payouts["reduced"]
    WebhookEvent.objects.filter(type=EventType.PAYOUT_CREATED, object_id=payout.pk).update(object_id=None)
    return payout.pk


def break_payout_paid_events(w: World) -> object:
    payout = w.payouts["paid"]
    WebhookEvent.objects.filter(type=EventType.PAYOUT_PAID, object_id=payout.pk).update(object_id=None)
    return payout.pk


def break_payout_failed_events(w: World) -> object:
    payout = w.payouts["failed"]
    WebhookEvent.objects.filter(type=EventType.PAYOUT_FAILED, object_id=payout.pk).update(synthetic=True)
    return payout.pk


BREAKS: dict[str, Callable[[World], object]] = {
    "commission_ledger": break_commission_ledger,
    "clawbacks_within_commission": break_clawbacks,
    "commission_status_credit": break_status_credit,
    "ledger_commission_owner": break_ledger_commission_owner,
    "commission_created_events": break_commission_created,
    "commission_approved_events": break_commission_approved,
    "commission_voided_events": break_commission_voided,
    "refund_events": break_refund_events,
    "sale_settled": break_sale_settled,
    "commission_matches_sale": break_commission_matches_sale,
    "refunds_within_sale": break_refunds_within_sale,
    "sale_created_events": break_sale_created,
    "partner_balances": break_partner_balances,
    "payout_ledger": break_payout_ledger,
    "ledger_payout_owner": break_ledger_payout_owner,
    "commission_paid_once": break_commission_paid_once,
    "payout_statement_active": break_payout_statement_active,
    "paid_payout_commissions": break_paid_payout_commissions,
    "payout_status_times": break_payout_status_times,
    "payout_created_events": break_payout_created_events,
    "payout_paid_events": break_payout_paid_events,
    "payout_failed_events": break_payout_failed_events,
}


def test_every_registered_check_is_broken_by_a_test():
    assert set(integrity_verify().checks) == set(BREAKS)


@pytest.mark.parametrize("check", sorted(BREAKS))
def test_an_invariant_broken_by_hand_fails_naming_the_row(world, check):
    assert verify()[0] == 0
    ref = BREAKS[check](world)

    status, out = verify()

    assert status == 1
    [line] = [line for line in out.splitlines() if line.startswith(f"FAIL {check}:")]
    assert str(ref) in line.split(": ", 2)[2].split(", "), line
    status, out = verify("--json", "--check", check)
    report = json.loads(out)
    assert status == 1
    assert report["passed"] is False
    [failure] = report["failures"]
    assert failure["check"] == check
    assert failure["count"] >= 1
    assert ref in failure["examples"]


def test_events_older_than_retention_are_not_asked_for(world, settings):
    WebhookEvent.objects.all().delete()
    assert verify()[0] == 1
    old = timezone.now() - timedelta(days=settings.WEBHOOK_EVENT_RETENTION_DAYS + 1)
    for model in (SaleEvent, Commission, Payout):
        model.objects.update(created_at=old)
    Commission.objects.filter(approved_at__isnull=False).update(approved_at=old)
    Commission.objects.filter(voided_at__isnull=False).update(voided_at=old)
    Payout.objects.filter(paid_at__isnull=False).update(paid_at=old)
    Payout.objects.filter(failed_at__isnull=False).update(failed_at=old)

    status, out = verify()

    assert status == 0, out


def test_the_daily_task_stores_the_run_and_readiness_shows_it(world):
    assert integrity_readiness(world.instant) is None
    assert integrity_verify_task() is True
    run = IntegrityRun.objects.get()
    assert run.passed and run.checks == 22 and run.failures == []
    [item] = [c for c in readiness_compute(program=world.instant)["checks"] if c["id"] == "integrity"]
    assert item["status"] == "pass"
    assert "every invariant held (22 checks)" in item["detail"]

    BREAKS["payout_ledger"](world)
    assert integrity_verify_task() is False
    latest = IntegrityRun.objects.order_by("-started_at").first()
    assert latest is not None and not latest.passed
    # The debit changed by hand: the payout no longer adds up, nor does its partner's balance.
    assert [failure["check"] for failure in latest.failures] == ["partner_balances", "payout_ledger"]
    verdict = readiness_compute(program=world.instant)
    [item] = [c for c in verdict["checks"] if c["id"] == "integrity"]
    assert item["status"] == "fail"
    assert "payout_ledger (1)" in item["detail"]
    assert verdict["ready"] is False
    # Another program's readiness is not told of this one's rows.
    [other] = [c for c in readiness_compute(program=world.held)["checks"] if c["id"] == "integrity"]
    assert other["status"] == "pass"


def test_a_stale_run_warns(world):
    IntegrityRun.objects.create(started_at=timezone.now() - timedelta(days=3), passed=True, checks=22)
    item = integrity_readiness(world.instant)
    assert item is not None and item["status"] == "warn"


def test_record_stores_a_run_and_unknown_checks_are_refused(world):
    assert verify("--record")[0] == 0
    assert IntegrityRun.objects.filter(passed=True).count() == 1
    with pytest.raises(Exception, match="Unknown integrity check"):
        call_command("verify_integrity", "--check", "nope", stdout=StringIO())


def test_partners_untouched_by_the_world_do_not_matter():
    # An empty database holds every invariant.
    assert not Partner.objects.exists()
    assert verify()[0] == 0


def test_the_admin_lists_runs_read_only(admin_client):
    run = IntegrityRun.objects.create(
        passed=False,
        checks=22,
        failures=[{"check": "payout_ledger", "title": "whose …", "noun": "payout(s)", "count": 1, "examples": [7]}],
    )
    listing = admin_client.get("/admin/core/integrityrun/")
    assert listing.status_code == 200
    assert b"payout_ledger (1)" in listing.content
    detail = admin_client.get(f"/admin/core/integrityrun/{run.pk}/change/")
    assert detail.status_code == 200
    assert b"payout_ledger: 1 payout(s)" in detail.content
    assert admin_client.get("/admin/core/integrityrun/add/").status_code == 403
