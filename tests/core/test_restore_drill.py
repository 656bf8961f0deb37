"""The restore drill (docs/deploy.md, Backups): a `pg_dump -Fc` taken while threads write sales, refunds and payouts
through the real services restores into a new database that `manage.py verify_integrity` passes. pg_dump reads one
snapshot, so what it saved is a consistent state however busy the service was. The restored database is dropped at
the end."""

import glob
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from commissions.services import refund_apply
from payouts.ledger import payout_mark_paid
from payouts.services import run_confirm, run_preview
from programs.models import ProgramKey
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.payouts.money import payable_partner
from tracking.models import SaleEvent
from tracking.services.sale import sale_record

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROOT = Path(settings.BASE_DIR)
PARTNERS = 4
CUSTOMERS_PER_PARTNER = 3


def pg_binary(name: str, server_major: int) -> str:
    """The client of the server's major version when installed (pg_dump refuses a newer server), else PATH's."""
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        if f"/postgresql/{server_major}/" in candidate:
            return candidate
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), "")
    if not found:
        pytest.fail(f"{name} is not installed (it comes with PostgreSQL's client)")
    return found


def server_url(database: str) -> str:
    db = settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{database}"


class Traffic:
    """Writer threads through the services: two selling, one refunding, one paying out, until stopped."""

    def __init__(self, key: ProgramKey, customer_keys: list[str]) -> None:
        self.key, self.customer_keys = key, customer_keys
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._run, args=(work,), daemon=True)
            for work in (self._sell, self._sell, self._refund, self._pay)
        ]

    def _run(self, work) -> None:
        try:
            while not self.stop.is_set():
                work()
        except BaseException as error:  # surfaced by the test
            self.errors.append(error)
        finally:
            connection.close()

    def _sell(self) -> None:
        data = {
            "transaction_id": f"drill_{uuid.uuid4().hex}",
            "amount_cents": random.randint(1_000, 50_000),
            "customer_key": random.choice(self.customer_keys),
        }
        sale_record(data=data, key=self.key)  # type: ignore[arg-type]

    def _refund(self) -> None:
        sale = SaleEvent.objects.filter(program_id=self.key.program_id, is_test=False).order_by("?").first()
        if sale is None:
            time.sleep(0.01)
            return
        whole = random.random() < 0.2
        refund_apply(
            sale=sale,
            amount=None if whole else random.randint(100, sale.amount_cents),
            refund_id=None if whole else f"re_{uuid.uuid4().hex}",
            reason="",
        )

    def _pay(self) -> None:
        run = run_preview(program=self.key.program, currency="USD", actor="user:drill")
        for payout in run_confirm(run_id=run.pk, actor="user:drill"):
            if random.random() < 0.5:
                payout_mark_paid(payout_id=payout.pk, actor="user:drill", reference="drill")
        time.sleep(0.05)

    def __enter__(self) -> "Traffic":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in self.threads)
        if self.errors:
            raise self.errors[0]


def live_sales() -> int:
    return SaleEvent.objects.filter(is_test=False).count()


def wait_for(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the traffic wrote nothing"
        time.sleep(0.05)


def test_a_backup_taken_mid_traffic_restores_to_a_database_that_holds_every_invariant(tmp_path):
    program = ProgramFactory(hold_days=0)
    key = ProgramKey.objects.select_related("program").get(program=program, mode=ProgramKey.Mode.LIVE)
    customer_keys = []
    for n in range(PARTNERS):
        partner = payable_partner(program, name=f"drill{n}")
        link = ReferralLinkFactory(program=program, partner=partner)
        for m in range(CUSTOMERS_PER_PARTNER):
            customer = CustomerFactory(link=link, customer_key=f"drill_{n}_{m}", customer_status="lead")
            customer_keys.append(customer.customer_key)

    source = settings.DATABASES["default"]["NAME"]
    restored = f"{source}_restored"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        server_major = int(cursor.fetchone()[0]) // 10000
    backup = tmp_path / "svc.dump"
    env = {**os.environ, "PGPASSWORD": settings.DATABASES["default"].get("PASSWORD") or ""}
    admin_url = server_url("postgres")

    with Traffic(key, customer_keys) as traffic:
        # A writer's error ends the wait at once; leaving the block raises it.
        wait_for(lambda: bool(traffic.errors) or live_sales() >= 30)
        before = live_sales()
        subprocess.run(
            [pg_binary("pg_dump", server_major), "-Fc", "--no-owner", "-f", str(backup), "-d", server_url(source)],
            check=True,
            env=env,
            timeout=300,
        )
        during = live_sales()
        wait_for(lambda: bool(traffic.errors) or live_sales() > during + 10)
    after = live_sales()
    # The dump ran while sales were being written: they did not wait for it, nor it for them.
    assert before < during < after

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{restored}"')
        admin.execute(f'CREATE DATABASE "{restored}"')
    try:
        subprocess.run(
            [pg_binary("pg_restore", server_major), "--no-owner", "--exit-on-error", "-d", server_url(restored)]
            + [str(backup)],
            check=True,
            env=env,
            timeout=300,
        )
        verified = subprocess.run(
            [sys.executable, "manage.py", "verify_integrity", "--json"],
            cwd=ROOT,
            env={**env, "DATABASE_URL": server_url(restored)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        with psycopg.connect(server_url(restored)) as copy:
            [(restored_sales,)] = copy.execute(
                f'SELECT COUNT(*) FROM "{SaleEvent._meta.db_table}" WHERE NOT is_test'
            ).fetchall()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)')

    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["passed"] is True and len(report["checks"]) == 22
    # The snapshot is of a moment inside the dump: at least what was there when it began, at most what came later.
    assert before <= restored_sales <= during
    # And the live database, after the traffic, holds every invariant too.
    run = subprocess.run(
        [sys.executable, "manage.py", "verify_integrity"],
        cwd=ROOT,
        env={**env, "DATABASE_URL": server_url(source)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
