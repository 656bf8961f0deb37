"""The large import: 2,000 partners (one link each), 100,000 referrals and 20,000 commissions, read by the engine
as a platform's reader would hand them over (an imports.records.Source built in memory), timed as a dry run, the
real run, and a rerun of the same source (which must create nothing).

Runs against the PostgreSQL database DATABASE_URL names (created when missing, migrated first; a program of its own is
made in a new workspace each time, so the database is never dropped and earlier data stays):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/svc_bench_imports .venv/bin/python bench/imports_bench.py

Options: --partners N (2000), --referrals N (100000), --commissions N (20000), --batch-size N (1000).
Prints the seconds of each step and the rows per second; exits 1 when a count is not what the source says."""

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if TYPE_CHECKING:
    from imports.records import Source


def database_create_missing(url: str) -> None:
    """Creates the database DATABASE_URL names when the server has none of that name (never drops one)."""
    import psycopg
    from psycopg import sql

    server, _, name = url.split("?")[0].rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def django_setup() -> None:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (postgres://...): the import is timed on PostgreSQL.")
    database_create_missing(url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-imports-secret")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # In-process tasks and a local cache: nothing but the database is timed.
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("RATELIMIT_SHARED", None)
    import django

    django.setup()


def build_source(*, partners: int, referrals: int, commissions: int, tag: str) -> "Source":
    from imports.records import CommissionRow, LinkRow, PartnerRow, ReferralRow, Source

    start = datetime(2024, 1, 1, tzinfo=UTC)
    partner_rows = [
        PartnerRow(
            where=f"partners.csv line {n + 2}",
            source_id=f"aff_{n}",
            email=f"partner{n}.{tag}@example.com",
            name=f"Partner {n}",
            payout_email=f"pay{n}.{tag}@example.com",
            payout_rail="paypal",
            created_at=start,
        )
        for n in range(partners)
    ]
    link_rows = [
        LinkRow(where=f"links.csv line {n + 2}", source_id=f"lnk_{n}", partner_source_id=f"aff_{n}", code=f"{tag}-{n}")
        for n in range(partners)
    ]
    referral_rows = [
        ReferralRow(
            where=f"referrals.csv line {n + 2}",
            source_id=f"ref_{n}",
            partner_source_id=f"aff_{n % partners}",
            email=f"customer{n}.{tag}@example.com",
            processor_customer_id=f"cus_{tag}_{n}" if n % 5 == 0 else "",
            status="customer" if n % 5 == 0 else "lead",
            link_code=f"{tag}-{n % partners}",
            created_at=start + timedelta(minutes=n),
        )
        for n in range(referrals)
    ]
    statuses = ("pending", "approved", "paid", "approved", "void")
    commission_rows = [
        CommissionRow(
            where=f"commissions.csv line {n + 2}",
            source_id=f"com_{n}",
            partner_source_id=f"aff_{(n * 5) % partners}",
            referral_source_id=f"ref_{(n * 5) % referrals}",
            sale_source_id=f"sale_{n}",
            sale_amount_minor=10_000 + n % 700,
            commission_amount_minor=2_000 + n % 140,
            currency="EUR" if n % 10 == 0 else "USD",
            status=statuses[n % len(statuses)],
            created_at=start + timedelta(minutes=5 * n),
        )
        for n in range(commissions)
    ]
    return Source(
        platform="bench",
        partners=partner_rows,
        links=link_rows,
        referrals=referral_rows,
        commissions=commission_rows,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partners", type=int, default=2000)
    parser.add_argument("--referrals", type=int, default=100_000)
    parser.add_argument("--commissions", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args()
    django_setup()

    from django.core.management import call_command
    from django.db.models import Sum

    from commissions.models import Commission, LedgerEntry
    from imports.engine import import_source
    from programs.models import Workspace
    from programs.services import program_create

    call_command("migrate", verbosity=0)
    tag = f"b{int(time.time())}"
    workspace = Workspace.objects.create(name=f"Import bench {tag}")
    program = program_create(
        workspace=workspace,
        name="Import bench",
        domain=f"{tag}.example.com",
        commission_type="percent",
        commission_rate=Decimal("20"),
    ).program

    began = time.perf_counter()
    source = build_source(partners=args.partners, referrals=args.referrals, commissions=args.commissions, tag=tag)
    built = time.perf_counter() - began
    rows = len(source.partners) + len(source.links) + len(source.referrals) + len(source.commissions)
    print(
        f"source: {args.partners} partners, {args.partners} links, {args.referrals} referrals, "
        f"{args.commissions} commissions ({rows} rows) built in {built:.1f} s"
    )

    timings: list[tuple[str, float]] = []
    for step, dry in (("dry run", True), ("real run", False), ("rerun (nothing new)", False)):
        began = time.perf_counter()
        report = import_source(program, source, dry_run=dry, batch_size=args.batch_size)
        seconds = time.perf_counter() - began
        timings.append((step, seconds))
        counts = report.counts_dict()
        summary = ", ".join(
            f"{kind} {c['created']}+{c['matched']}m/{c['skipped']}s/{c['refused']}r" for kind, c in counts.items()
        )
        print(f"{step:>20}: {seconds:7.1f} s  ({rows / seconds:,.0f} rows/s)  {summary}")
        if report.refusals:
            print(f"  refused: {report.refusals[:3]}")
            return 1

    expected = sum(1 for row in source.commissions if row.status != "void")
    made = Commission.objects.filter(program=program).count()
    owed = sum(row.commission_amount_minor for row in source.commissions if row.status == "approved")
    balance = LedgerEntry.objects.filter(program=program).aggregate(total=Sum("amount_cents"))["total"] or 0
    print(f"commissions: {made} (expected {expected}); ledger total {balance} (approved unpaid in the source {owed})")
    return 0 if made == expected and balance == owed else 1


if __name__ == "__main__":
    sys.exit(main())
