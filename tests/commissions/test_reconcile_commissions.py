"""The commission reconciler: an attributed live sale whose request died between storing the sale and settling
its commission is completed later, once, as the request would have completed it."""

import json
import logging
import os
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from commissions.models import Commission, LedgerEntry
from core import messages
from programs.models import PartnerProgram
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bearer, run_together
from tracking.models import SaleEvent
from tracking.reconciler import RECONCILE_GRACE, commissions_reconcile
from tracking.rollups import rollups_update

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SALE_URL = "/api/v1/track/sale"
LATER = RECONCILE_GRACE + timedelta(minutes=1)


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link, customer_key="user_1", customer_status="lead")


def metrics(link) -> tuple[int, int]:
    """The partner's sales and revenue counters after a rollup run: it adds every live sale with a partner,
    whatever its commission, so the reconciler has nothing to count."""
    rollups_update(settle=timedelta(0))
    row = PartnerProgram.objects.get(partner=link.partner, program=link.program)
    return row.sales, row.revenue_cents


def orphan_sale(customer, *, age: timedelta = LATER, **fields) -> SaleEvent:
    """An attributed live sale as a killed request leaves it: stored, no commission, no reason for none."""
    stored_at = timezone.now() - age
    return SaleFactory.create(
        customer=customer, amount_cents=10000, created_at=stored_at, sale_date=stored_at, **fields
    )


def reconcile_command(*args: str) -> str:
    out = StringIO()
    call_command("reconcile_commissions", *args, stdout=out)
    return out.getvalue()


def kill_mid_sale(*, kill_at: str, key: str, body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    database = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}",
        "KILL_AT": kill_at,
        "SALE_KEY": key,
        "SALE_BODY": json.dumps(body),
    }
    return subprocess.run(
        [sys.executable, "-m", "tests.commissions.killed_sale"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kill_at", ["before_commission", "inside_commission"])
def test_a_sale_whose_process_was_killed_gets_its_commission_once(program, link, customer, kill_at):
    body = {"transaction_id": "txn_killed", "amount_cents": 10000, "currency": "USD", "customer_key": "user_1"}
    died = kill_mid_sale(kill_at=kill_at, key=program.raw_api_key, body=body)
    assert died.returncode == -9, died.stdout + died.stderr

    sale = SaleEvent.objects.get(processor_event_id="txn_killed")
    assert sale.attributed and sale.partner_id == link.partner_id and sale.no_commission_reason == ""
    assert not Commission.objects.exists()
    customer.refresh_from_db()
    assert customer.first_sale_at is None and customer.customer_status == "lead"
    assert metrics(link) == (1, 10000)  # stored, so counted: the rollup run needs no commission

    resend = APIClient().post(SALE_URL, body, format="json", **bearer(program.raw_api_key))
    assert resend.status_code == 409
    assert resend.json()["error"]["message"] == messages.SALE_DUPLICATE

    assert commissions_reconcile() == 0, "a sale younger than the grace period may still be in flight"
    assert not Commission.objects.exists()

    assert commissions_reconcile(now=timezone.now() + LATER) == 1
    commission = Commission.objects.get()
    assert (commission.sale_id, commission.partner_id) == (sale.pk, link.partner_id)
    assert commission.customer_id == customer.pk
    assert (commission.amount_cents, commission.currency, commission.status) == (2000, "USD", "pending")
    assert commission.hold_until == sale.created_at + timedelta(days=30)
    customer.refresh_from_db()
    assert customer.first_sale_at == sale.sale_date and customer.customer_status == "converted"
    assert metrics(link) == (1, 10000)

    assert commissions_reconcile(now=timezone.now() + LATER) == 0
    assert Commission.objects.count() == 1 and metrics(link) == (1, 10000)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_reconcilers_create_one_commission(customer, link):
    sale = orphan_sale(customer)
    runs = 6
    settled = run_together(runs, lambda n: commissions_reconcile())
    assert sorted(settled) == [0] * (runs - 1) + [1]
    assert Commission.objects.get().sale_id == sale.pk
    assert metrics(link) == (1, 10000)


def test_the_command_settles_missing_commissions_and_reports_how_many(customer, link):
    orphan_sale(customer)
    assert reconcile_command() == "Settled 1 sale(s) missing a commission.\n"
    assert reconcile_command() == "Settled 0 sale(s) missing a commission.\n"
    assert Commission.objects.get().amount_cents == 2000


def test_the_command_grace_can_be_shortened(customer):
    orphan_sale(customer, age=timedelta(seconds=30))
    assert "Settled 0" in reconcile_command()
    assert "Settled 1" in reconcile_command("--grace-seconds", "10")


def test_a_commission_that_failed_with_a_500_is_completed(api_client, program, customer, link, monkeypatch):
    def database_down(**kwargs):
        raise RuntimeError("commission insert failed")

    with monkeypatch.context() as patched:
        patched.setattr("tracking.services.sale.commission_create_for_sale", database_down)
        body = {"transaction_id": "txn_500", "amount_cents": 10000, "customer_key": "user_1"}
        response = api_client.post(SALE_URL, body, format="json", **bearer(program.raw_api_key))
    assert response.status_code == 500
    assert commissions_reconcile(now=timezone.now() + LATER) == 1
    assert Commission.objects.get(sale__processor_event_id="txn_500").amount_cents == 2000
    assert metrics(link) == (1, 10000)


def test_a_renewal_on_a_percent_program_records_why_it_pays_nothing(customer, link):
    sale = orphan_sale(customer, is_recurring=True)
    assert commissions_reconcile() == 1
    sale.refresh_from_db()
    assert sale.no_commission_reason == "renewal_not_recurring"
    assert not Commission.objects.exists()
    assert metrics(link) == (1, 10000), "a renewal paying nothing is still a sale"
    assert commissions_reconcile() == 0 and metrics(link) == (1, 10000)


def test_a_program_without_hold_credits_the_partner_at_once(link):
    program = ProgramFactory(hold_days=0)
    sale = orphan_sale(CustomerFactory(link=ReferralLinkFactory(program=program, partner=link.partner)))
    assert commissions_reconcile() == 1
    commission = Commission.objects.get()
    assert commission.status == "approved" and commission.credited
    assert commission.approved_at == sale.created_at
    assert LedgerEntry.objects.get(commission=commission, kind="credit").amount_cents == 2000


def test_sales_that_are_settled_or_not_the_reconcilers_are_left_alone(customer, link):
    settled = orphan_sale(customer)
    Commission.objects.create(
        program=settled.program,
        partner_id=settled.partner_id,
        sale=settled,
        customer=customer,
        amount_cents=2000,
        hold_until=timezone.now(),
    )
    orphan_sale(customer, is_recurring=True, no_commission_reason="renewal_not_recurring")
    orphan_sale(customer, is_test=True)
    orphan_sale(customer, attributed=False, partner=None)
    orphan_sale(customer, age=timedelta(seconds=10))  # its request may still be running
    assert commissions_reconcile() == 0
    # The live sales with a partner (not the test one, nor the one without a partner) are counted by the rollup
    # run, each once, whatever the reconciler did with them.
    assert Commission.objects.count() == 1 and metrics(link) == (3, 30000)


def test_one_failing_sale_does_not_stop_the_others(customer, link, monkeypatch, caplog):
    first, second = orphan_sale(customer), orphan_sale(customer)
    from tracking import reconciler

    real = reconciler.commission_create_for_sale

    def fail_for_first(*, sale, **kwargs):
        if sale.pk == first.pk:
            raise RuntimeError("broken sale")
        return real(sale=sale, **kwargs)

    monkeypatch.setattr(reconciler, "commission_create_for_sale", fail_for_first)
    with caplog.at_level(logging.ERROR, logger="svc.commissions"):
        assert commissions_reconcile() == 1
    assert "commission.reconcile_failed" in caplog.messages
    assert list(Commission.objects.values_list("sale_id", flat=True)) == [second.pk]
    monkeypatch.undo()
    assert commissions_reconcile() == 1 and Commission.objects.count() == 2
