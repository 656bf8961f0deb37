"""`make bench-scale`: how the dashboard reads grow with the event tables.

Creates a fresh PostgreSQL database, migrates it and sets up one workspace with its owner, a program with 50
enrolled partners and 200 referral links, and a second, small program (so every read must filter by program).
Then, for each size in turn, grows the same database to that many events for the program with set-based SQL
(85% clicks with one customer per ten clicks, 10% settled leads, 5% live sales, most of them attributed and each
attributed one with its commission, in a mix of statuses, and the ledger entries of the credited ones; a few
test-mode events; times spread over the last 30 UTC days), runs VACUUM ANALYZE and `manage.py rollup update`,
and times the owner's reads in-process with django.test.Client (DEBUG off), and a partner's Performance page in the
portal (a partner of both programs, signed in to the portal): the median of 3 after one warm-up.
Prints a table (one column per size, the growth from the first size to the last, and a verdict: flat when under
50 ms at the last size and grown at most 1.5x) and writes bench/results/scale-latest.json. Exits 0 whether or
not the reads are flat; non-zero only when the harness itself fails (a read not answering 200 included).

Environment: BENCH_SCALE_SIZES (events per program, ascending; default 1000000,10000000), BENCH_SCALE_DB
(database name, default svc_bench_scale; dropped and recreated), BENCH_SCALE_SERVER (the PostgreSQL server, default
postgres://postgres@127.0.0.1:5432), BENCH_SCALE_OUTPUT (the JSON report's path).
"""

import datetime
import fcntl
import functools
import io
import json
import math
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DEFAULT_DB = "svc_bench_scale"
DEFAULT_SIZES = (1_000_000, 10_000_000)
LOCAL_SERVER = "postgres://postgres@127.0.0.1:5432"
# Events written per transaction: big statements, but a bounded transaction.
CHUNK = 1_000_000
PARTNERS = 50
LINKS = 200
# The second program: a few partners (also in the first program), a few links, 1% of the events.
OTHER_PARTNERS = 5
OTHER_LINKS = 10
OTHER_SHARE = 0.01
CLICKS_PER_CUSTOMER = 10
RATE_PERCENT = 20
HOLD_DAYS = 7
WINDOW_DAYS = 30
RUNS = 3
TARGET_MS = 50.0
MAX_GROWTH = 1.5

sys.path.insert(0, str(ROOT))


def fail(message: str) -> NoReturn:
    raise SystemExit(f"bench-scale: {message}")


def say(message: str) -> None:
    print(f"bench-scale: {message}", flush=True)


def sizes_from_env() -> list[int]:
    raw = os.environ.get("BENCH_SCALE_SIZES", "")
    if not raw.strip():
        return list(DEFAULT_SIZES)
    parts = [part.strip().replace("_", "") for part in raw.split(",")]
    if not all(part.isascii() and part.isdigit() and int(part) >= 100 for part in parts):
        fail(f"BENCH_SCALE_SIZES must be whole numbers of at least 100, separated by commas, got {raw!r}")
    sizes = [int(part) for part in parts]
    if sizes != sorted(set(sizes)):
        fail(f"BENCH_SCALE_SIZES must grow from one size to the next (the database only grows), got {raw!r}")
    return sizes


def size_label(size: int) -> str:
    for unit, name in ((1_000_000, "M"), (1_000, "k")):
        if size >= unit and size % (unit // 10) == 0:
            return f"{size / unit:g}{name}"
    return str(size)


# --- Database -----------------------------------------------------------------------------------------------


def pg_server() -> str:
    """The PostgreSQL server the bench database is made on: BENCH_SCALE_SERVER, else the local one."""
    return (os.environ.get("BENCH_SCALE_SERVER") or LOCAL_SERVER).rstrip("/")


def recreate_database(name: str) -> None:
    with psycopg.connect(f"{pg_server()}/postgres", autocommit=True) as conn:
        # FORCE ends sessions an interrupted run may have left open.
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def django_setup(db_name: str) -> None:
    """Points Django at the bench database with production-like settings, in this process."""
    os.environ.update(
        {
            "DATABASE_URL": f"{pg_server()}/{db_name}",
            "DEBUG": "false",
            "SECRET_KEY": "bench-scale-secret",
            "ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
            "RATELIMIT_SCALE": "100000",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    # Local memory cache and in-process tasks: the reads are timed in this process alone.
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("RATELIMIT_SHARED", None)
    # The reads serve no static files.
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
    import django

    django.setup()


@dataclass
class Setup:
    program_id: int
    other_program_id: int
    owner_id: int
    # Per program: (link id, partner id) of each referral link, in creation order.
    links: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


def create_setup() -> Setup:
    """The workspace, its owner and the two programs, through the project's own services."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model

    from programs.models import Membership, Role, Workspace
    from programs.services import partner_create, partner_enroll, program_create, referral_link_create

    workspace = Workspace.objects.create(name="Scale Shop")
    owner = get_user_model().objects.create_user(username="scale-owner", password="scale-owner-password")
    Membership.objects.create(workspace=workspace, user=owner, role=Role.OWNER)
    program = program_create(
        workspace=workspace,
        name="Scale",
        domain="shop.example.com",
        commission_type="percent",
        commission_rate=Decimal(RATE_PERCENT),
        hold_days=HOLD_DAYS,
    ).program
    other = program_create(
        workspace=workspace,
        name="Scale (other)",
        domain="other.example.com",
        commission_type="percent",
        commission_rate=Decimal(RATE_PERCENT),
        hold_days=HOLD_DAYS,
    ).program
    partners = [
        partner_create(workspace=workspace, name=f"Partner {n}", email=f"partner{n}@example.com")
        for n in range(PARTNERS)
    ]
    setup = Setup(program_id=program.pk, other_program_id=other.pk, owner_id=owner.pk)
    for prog, enrolled, link_count in ((program, partners, LINKS), (other, partners[:OTHER_PARTNERS], OTHER_LINKS)):
        for partner in enrolled:
            partner_enroll(partner=partner, program=prog)
        setup.links[prog.pk] = []
        for n in range(link_count):
            partner = enrolled[n % len(enrolled)]
            link = referral_link_create(program=prog, partner=partner, short_link=f"p{prog.pk}-l{n}")
            setup.links[prog.pk].append((link.pk, partner.pk))
    return setup


# --- Loading ------------------------------------------------------------------------------------------------


def table_names() -> dict[str, str]:
    from commissions.models import Commission, LedgerEntry
    from programs.models import PartnerProgram
    from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent

    models = {
        "customer": Customer,
        "click": ClickEvent,
        "lead": LeadEvent,
        "sale": SaleEvent,
        "commission": Commission,
        "ledger": LedgerEntry,
        "partner_program": PartnerProgram,
    }
    return {name: model._meta.db_table for name, model in models.items()}


# The columns each INSERT below fills. Django's defaults live in Python, not in the database, so a NOT NULL
# column the loader does not name would fail the load; check_columns says which one instead.
COLUMNS = {
    "customer": (
        "id program_id click_id customer_key customer_status first_partner_id first_link_id email "
        "processor_customer_id is_test first_clicked_at last_clicked_at first_sale_at created_at visitor_hash "
        "click_flags"
    ),
    "click": (
        "program_id partner_id link_id customer_id click_id session_id page_url page_title referrer_url user_agent "
        "screen_resolution viewport_size language timezone geo_country geo_region geo_city device_type device_os "
        "browser_name is_test click_timestamp created_at traffic flags visitor_hash"
    ),
    "lead": (
        "program_id customer_id partner_id click_id customer_key email session_id page_url provisional settled_at "
        "server_mode is_test lead_timestamp created_at"
    ),
    "sale": (
        "id program_id customer_id partner_id click_id processor_event_id amount_cents tax_cents currency sale_type "
        "payment_status is_recurring provider provider_payment_id subscription_id subscription_interval product_id "
        "occurred_at line_items attributed no_commission_reason attributed_by is_test sale_date created_at"
    ),
    "commission": (
        "id program_id partner_id sale_id customer_id amount_cents currency status credited sale_refunded_cents "
        "deducted_cents refund_reason applied_refund_ids applied_anonymous_amounts refund_count hold_until held_at "
        "hold_reason approved_at voided_at void_reason created_at updated_at hold_rule flags kind commission_type "
        "commission_rate"
    ),
    "ledger": "partner_id program_id commission_id kind amount_cents currency memo created_at",
}


def check_columns(conn: psycopg.Connection, tables: dict[str, str]) -> None:
    for name, columns in COLUMNS.items():
        required = conn.execute(
            """SELECT column_name FROM information_schema.columns
               WHERE table_schema = 'public' AND table_name = %s AND is_nullable = 'NO'
                 AND column_default IS NULL AND is_identity = 'NO'""",
            [tables[name]],
        ).fetchall()
        missing = sorted({row[0] for row in required} - set(columns.split()))
        if missing:
            fail(f"{tables[name]} has NOT NULL columns the loader does not fill: {', '.join(missing)} (bench/scale.py)")


def insert_sql(tables: dict[str, str], name: str, select: str) -> sql.Composed:
    columns = sql.SQL(", ").join(sql.Identifier(column) for column in COLUMNS[name].split())
    return sql.SQL("INSERT INTO {} ({}) ").format(sql.Identifier(tables[name]), columns) + sql.SQL(select)


# Small pools of realistic values, picked by position.
PAGES = ["https://shop.example.com/", "https://shop.example.com/pricing", "https://shop.example.com/blog/launch"]
REFERRERS = ["https://news.example.org/post", "https://www.google.com/", "", "https://t.co/abc"]
USER_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605",
]
DEVICES = [("desktop", "Windows", "Chrome"), ("mobile", "iOS", "Mobile Safari"), ("desktop", "Mac OS X", "Safari")]
COUNTRIES = ["US", "DE", "FR", "GB", "BR", "IN", ""]


def pick(values: list[str], index: str) -> str:
    """SQL picking one of `values` (literals) by the integer SQL expression `index`."""
    array = "ARRAY[" + ", ".join("'" + value.replace("'", "''") + "'" for value in values) + "]::text[]"
    return f"({array})[1 + mod({index}, {len(values)})]"


@dataclass
class Loaded:
    """What one program holds so far; numbering continues from here when the database grows."""

    events: int = 0
    customers: int = 0
    sales: int = 0
    test_events: int = 0


@dataclass
class Chunk:
    program_id: int
    links: list[tuple[int, int]]
    clicks: int
    leads: int
    sales: int
    tests: int
    window_start: datetime.datetime
    window_seconds: float

    @property
    def customers(self) -> int:
        return math.ceil(self.clicks / CLICKS_PER_CUSTOMER)


def split(events: int) -> tuple[int, int, int]:
    """85% clicks, 10% leads, 5% sales (at least one of each)."""
    clicks = max(1, round(events * 0.85))
    leads = max(1, round(events * 0.10))
    return clicks, leads, max(1, events - clicks - leads)


def next_id(conn: psycopg.Connection, table: str) -> int:
    query = sql.SQL("SELECT coalesce(max(id), 0) + 1 FROM {}").format(sql.Identifier(table))
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def sync_sequence(conn: psycopg.Connection, table: str) -> None:
    """Rows written with explicit ids: the identity sequence continues after them."""
    conn.execute(
        sql.SQL("SELECT setval(pg_get_serial_sequence({}, 'id'), (SELECT coalesce(max(id), 1) FROM {}))").format(
            sql.Literal(table), sql.Identifier(table)
        )
    )


def load_chunk(conn: psycopg.Connection, tables: dict[str, str], chunk: Chunk, loaded: Loaded) -> None:
    """One transaction of set-based INSERT ... SELECT FROM generate_series. Customers and sales get explicit ids
    (the loader is the only writer), so clicks, leads and commissions compute their references instead of
    joining to find them."""
    customer_base = next_id(conn, tables["customer"]) - 1
    sale_base = next_id(conn, tables["sale"]) - 1
    commission_base = next_id(conn, tables["commission"]) - 1
    params: dict[str, Any] = {
        "program": chunk.program_id,
        "link_ids": [link for link, _ in chunk.links],
        "link_partners": [partner for _, partner in chunk.links],
        "n_links": len(chunk.links),
        "n_customers": chunk.customers,
        "customer_base": customer_base,
        # Numbering in names and keys runs across chunks, so codes stay unique as the database grows.
        "customer_seq": loaded.customers,
        "sale_seq": loaded.sales,
        "test_seq": loaded.test_events,
        "sale_base": sale_base,
        "commission_base": commission_base,
        "start": chunk.window_start,
        "span": chunk.window_seconds,
        "rate": RATE_PERCENT,
        "hold": datetime.timedelta(days=HOLD_DAYS),
    }
    random_time = "(%(start)s::timestamptz + random() * %(span)s * interval '1 second')"
    # The referral link (and so partner) of customer k of this chunk, and its click id.
    link_of = "(%(link_ids)s::bigint[])[1 + mod(%(customer_seq)s + {k}, %(n_links)s)]"
    partner_of = "(%(link_partners)s::bigint[])[1 + mod(%(customer_seq)s + {k}, %(n_links)s)]"
    click_id_of = "'cust_' || %(program)s || '_' || (%(customer_seq)s + {k})"
    key_of = "'user-' || %(program)s || '-' || (%(customer_seq)s + {k})"
    converted = min(chunk.customers, chunk.sales)

    # Customers: every one has a lead; the first `converted` of the chunk also bought.
    conn.execute(
        insert_sql(
            tables,
            "customer",
            f"""SELECT %(customer_base)s + k, %(program)s, {click_id_of.format(k="k")}, {key_of.format(k="k")},
                       CASE WHEN k <= %(converted)s THEN 'converted' ELSE 'lead' END,
                       {partner_of.format(k="k")}, {link_of.format(k="k")}, '', '', false, t, t,
                       CASE WHEN k <= %(converted)s THEN t END, t,
                       left(md5({click_id_of.format(k="k")}), 32), '[]'::jsonb
                FROM (SELECT k, {random_time} AS t FROM generate_series(1, %(n_customers)s) AS k) AS g""",
        ),
        {**params, "converted": converted},
    )
    # Clicks and leads go in in time order: ids follow time as they do live, and the time indexes are written
    # in order within a chunk rather than at random (a third faster).
    k_of_click = f"(1 + (i - 1) / {CLICKS_PER_CUSTOMER})"
    conn.execute(
        insert_sql(
            tables,
            "click",
            f"""SELECT %(program)s, {partner_of.format(k="k")}, {link_of.format(k="k")}, %(customer_base)s + k,
                       {click_id_of.format(k="k")}, 's' || k, {pick(PAGES, "i")}, 'Shop', {pick(REFERRERS, "i")},
                       {pick(USER_AGENTS, "k")}, '1920x1080', '1280x720', 'en-US', 'UTC', {pick(COUNTRIES, "k")},
                       '', '', {pick([d[0] for d in DEVICES], "k")}, {pick([d[1] for d in DEVICES], "k")},
                       {pick([d[2] for d in DEVICES], "k")}, false, t, t, '', '[]'::jsonb,
                       left(md5({click_id_of.format(k="k")}), 32)
                FROM (SELECT i, {k_of_click} AS k, {random_time} AS t
                      FROM generate_series(1, %(n)s) AS i) AS g ORDER BY t""",
        ),
        {**params, "n": chunk.clicks},
    )
    # Leads: settled server-mode leads, one in ten without a customer_key.
    k_of_lead = "(1 + mod(i - 1, %(n_customers)s))"
    conn.execute(
        insert_sql(
            tables,
            "lead",
            f"""SELECT %(program)s, %(customer_base)s + k, {partner_of.format(k="k")}, {click_id_of.format(k="k")},
                       CASE WHEN mod(i, 10) = 0 THEN '' ELSE {key_of.format(k="k")} END, '', 's' || k,
                       'https://shop.example.com/signup', false, t, true, false, t, t
                FROM (SELECT i, {k_of_lead} AS k, {random_time} AS t
                      FROM generate_series(1, %(n)s) AS i) AS g ORDER BY t""",
        ),
        {**params, "n": chunk.leads},
    )
    # Sales: nine in ten attributed to one of the chunk's first customers, most by customer_key, some by click_id.
    k_of_sale = "(1 + mod(i - 1, %(n_customers)s))"
    conn.execute(
        insert_sql(
            tables,
            "sale",
            f"""SELECT %(sale_base)s + i, %(program)s,
                       CASE WHEN attributed THEN %(customer_base)s + k END,
                       CASE WHEN attributed THEN {partner_of.format(k="k")} END,
                       CASE WHEN attributed THEN {click_id_of.format(k="k")} ELSE '' END,
                       'txn-' || %(program)s || '-' || (%(sale_seq)s + i), 1000 + mod(i::bigint * 7919, 49000),
                       NULL, 'USD', 'payment', 'paid', false, '', '', '', '', '', t, NULL, attributed, '',
                       CASE WHEN NOT attributed THEN '' WHEN mod(i, 5) = 0 THEN 'click_id' ELSE 'customer_key' END,
                       false, t, t
                FROM (SELECT i, {k_of_sale} AS k, mod(i, 10) <> 0 AS attributed, {random_time} AS t
                      FROM generate_series(1, %(n)s) AS i) AS g""",
        ),
        {**params, "n": chunk.sales},
    )
    # Commissions of the attributed sales, by sale position: 40% pending, 30% approved, 15% paid, 10% partly
    # refunded (half of them after being credited, half cancelled while pending), 5% reversed.
    conn.execute(
        insert_sql(
            tables,
            "commission",
            """SELECT %(commission_base)s + (s.id - %(sale_base)s), s.program_id, s.partner_id, s.id, s.customer_id,
                      c.amount, 'USD', c.status, c.credited,
                      CASE c.status WHEN 'refunded' THEN s.amount_cents / 2
                                    WHEN 'reversed' THEN s.amount_cents ELSE 0 END,
                      CASE c.status WHEN 'refunded' THEN (c.amount + 1) / 2
                                    WHEN 'reversed' THEN c.amount ELSE 0 END,
                      CASE WHEN c.status IN ('refunded', 'reversed') THEN 'requested_by_customer' ELSE '' END,
                      CASE WHEN c.status IN ('refunded', 'reversed')
                           THEN jsonb_build_array('re-' || s.id) ELSE '[]'::jsonb END,
                      '[]'::jsonb, CASE WHEN c.status IN ('refunded', 'reversed') THEN 1 ELSE 0 END,
                      s.sale_date + %(hold)s, NULL, '', CASE WHEN c.credited THEN s.sale_date END, NULL, '',
                      s.sale_date, s.sale_date, '', '[]'::jsonb, 'sale', 'percent', %(rate)s
               FROM (SELECT id, program_id, partner_id, customer_id, amount_cents, sale_date,
                            mod(id - %(sale_base)s, 20) AS bucket
                     FROM {sale} WHERE id > %(sale_base)s AND attributed) AS s
               CROSS JOIN LATERAL (
                   SELECT (s.amount_cents * %(rate)s + 50) / 100 AS amount,
                          CASE WHEN s.bucket < 8 THEN 'pending' WHEN s.bucket < 14 THEN 'approved'
                               WHEN s.bucket < 17 THEN 'paid' WHEN s.bucket < 19 THEN 'refunded'
                               ELSE 'reversed' END AS status,
                          s.bucket BETWEEN 8 AND 17 OR s.bucket = 19 AS credited
               ) AS c""".replace("{sale}", sql.Identifier(tables["sale"]).as_string(conn)),
        ),
        params,
    )
    # The ledger: a credit for every credited commission, and the clawback of the refunded ones.
    conn.execute(
        insert_sql(
            tables,
            "ledger",
            """SELECT partner_id, program_id, id, 'credit', amount_cents, currency, 'commission #' || id,
                      approved_at
               FROM {commission} WHERE id > %(commission_base)s AND credited
               UNION ALL
               SELECT partner_id, program_id, id, 'deduction', -deducted_cents, currency, 'refund of commission #'
                      || id, updated_at
               FROM {commission} WHERE id > %(commission_base)s AND credited AND deducted_cents > 0""".replace(
                "{commission}", sql.Identifier(tables["commission"]).as_string(conn)
            ),
        ),
        params,
    )
    # A few test-mode events: clicks without a customer and unattributed test sales.
    if chunk.tests:
        conn.execute(
            insert_sql(
                tables,
                "click",
                f"""SELECT %(program)s, {partner_of.format(k="i")}, {link_of.format(k="i")}, NULL,
                           'test_' || %(program)s || '_' || (%(test_seq)s + i), '', 'https://shop.example.com/', '',
                           '', '', '', '', '', '', '', '', '', '', '', '', true, t, t, '', '[]'::jsonb, ''
                    FROM (SELECT i, {random_time} AS t FROM generate_series(1, %(n)s) AS i) AS g""",
            ),
            {**params, "n": chunk.tests},
        )
        conn.execute(
            insert_sql(
                tables,
                "sale",
                f"""SELECT %(sale_base)s + %(sales)s + i, %(program)s, NULL, NULL, '',
                           'test-txn-' || %(program)s || '-' || (%(test_seq)s + i), 4900, NULL, 'USD', 'payment',
                           'paid', false, '', '', '', '', '', t, NULL, false, '', '', true, t, t
                    FROM (SELECT i, {random_time} AS t FROM generate_series(1, %(n)s) AS i) AS g""",
            ),
            {**params, "n": chunk.tests, "sales": chunk.sales},
        )
    for name in ("customer", "sale", "commission"):
        sync_sequence(conn, tables[name])
    loaded.customers += chunk.customers
    loaded.sales += chunk.sales
    loaded.test_events += chunk.tests


def update_counters(conn: psycopg.Connection, tables: dict[str, str], program_ids: list[int]) -> None:
    """The partner-program counter the lead path keeps (live leads). Click, sale and revenue counters are the rollup
    task's to add as it folds clicks and sales in."""
    names = {key: sql.Identifier(value) for key, value in tables.items()}
    conn.execute(
        sql.SQL(
            """UPDATE {partner_program} AS pp
               SET leads = coalesce(l.n, 0)
               FROM {partner_program} AS p
               LEFT JOIN (SELECT program_id, partner_id, count(*) AS n FROM {lead}
                          WHERE NOT is_test AND program_id = ANY(%(programs)s) GROUP BY 1, 2) AS l
                 ON l.program_id = p.program_id AND l.partner_id = p.partner_id
               WHERE pp.id = p.id AND p.program_id = ANY(%(programs)s)"""
        ).format(**names),
        {"programs": program_ids},
    )


def grow(db_url: str, setup: Setup, loaded: dict[int, Loaded], target: int) -> dict[str, float]:
    """Grows the program to `target` events (and the other program to its share), then VACUUM ANALYZE.
    Returns the seconds each step took."""
    from django.utils import timezone

    tables = table_names()
    now = timezone.now()
    window_start = datetime.datetime.combine(
        now.date() - datetime.timedelta(days=WINDOW_DAYS - 1), datetime.time(), tzinfo=datetime.UTC
    )
    # A minute's margin: every event lies in the past and inside the 30-day reports.
    window_seconds = max(1.0, (now - window_start).total_seconds() - 60)
    timings: dict[str, float] = {}
    started = time.monotonic()
    with psycopg.connect(db_url) as conn:
        conn.execute("SET synchronous_commit = off")
        check_columns(conn, tables)
        targets = {setup.program_id: target, setup.other_program_id: max(100, round(target * OTHER_SHARE))}
        for program_id, wanted in targets.items():
            state = loaded[program_id]
            while state.events < wanted:
                events = min(CHUNK, wanted - state.events)
                clicks, leads, sales = split(events)
                chunk = Chunk(
                    program_id=program_id,
                    links=setup.links[program_id],
                    clicks=clicks,
                    leads=leads,
                    sales=sales,
                    tests=max(5, events // 10_000),
                    window_start=window_start,
                    window_seconds=window_seconds,
                )
                load_chunk(conn, tables, chunk, state)
                conn.commit()
                state.events += events
                if program_id == setup.program_id:
                    say(f"  {state.events:,} events loaded ({time.monotonic() - started:.0f} s)")
        timings["load_s"] = time.monotonic() - started
        step = time.monotonic()
        update_counters(conn, tables, list(targets))
        conn.commit()
        timings["counters_s"] = time.monotonic() - step
    step = time.monotonic()
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    timings["vacuum_analyze_s"] = time.monotonic() - step
    return timings


# --- Rollups and reads --------------------------------------------------------------------------------------


def rollup_update() -> float:
    """`manage.py rollup update`, which folds the new events into the rollups the reads use (what beat does every
    minute in production). Returns its seconds."""
    from django.core.management import call_command

    started = time.monotonic()
    try:
        call_command("rollup", "update", stdout=io.StringIO())
    except Exception as exc:
        fail(f"manage.py rollup update failed: {type(exc).__name__}: {exc}")
    return time.monotonic() - started


def reads(setup: Setup) -> dict[str, str]:
    from django.utils import timezone

    today = timezone.now().date()
    start = today - datetime.timedelta(days=WINDOW_DAYS - 1)
    days = f"dateFrom={start}&dateTo={today}"
    program = setup.program_id
    return {
        "overview": f"/programs/{program}/",
        "performance (30 days)": f"/api/tracking/performance/{program}?{days}",
        "partners": f"/programs/{program}/partners",
        "commissions": f"/programs/{program}/commissions",
        "status": f"/api/tracking/status/{program}",
        "readiness": f"/api/tracking/readiness/{program}",
        "events page 1": f"/api/tracking/events/{program}",
        # Read as the first link's partner, in the portal (each page's own read model).
        "partner programs": "/portal/",
        "partner links": "/portal/links",
        "partner performance (30 days)": f"/portal/performance?from={start}&to={today}",
        "partner commissions page 1": "/portal/commissions",
        "partner commissions deep page": f"/portal/commissions?before={deep_cursor(setup)}",
        "partner balance": "/portal/balance",
    }


def deep_cursor(setup: Setup) -> str:
    """The Older link's cursor twenty pages into the partner's commissions (or as deep as leaves a full page, when
    it has fewer): a keyset page there must cost what page 1 costs."""
    from commissions.models import Commission
    from core.pagination import cursor_of

    newest_first = Commission.objects.filter(partner_id=setup.links[setup.program_id][0][1]).order_by(
        "-created_at", "-pk"
    )
    depth = max(0, min(1000, newest_first.count() - 51))
    row = newest_first[depth : depth + 1].first()
    return cursor_of(row) if row is not None else ""


def partner_client(setup: Setup) -> Any:
    """A browser signed in to the portal as the program's first link's partner (enrolled in both programs)."""
    from django.http import HttpResponse
    from django.test import Client

    from portal.session import COOKIE, sign_in
    from programs.models import Partner, PartnerAccount

    partner = Partner.objects.get(pk=setup.links[setup.program_id][0][1])
    if partner.account is None:
        partner.account = PartnerAccount.objects.create(email=partner.email.lower())
        partner.save(update_fields=["account"])
    response = HttpResponse()
    sign_in(response, partner.account)
    client = Client()
    client.cookies[COOKIE] = response.cookies[COOKIE].value
    return client


def totals_check(db_url: str, setup: Setup) -> dict[str, Any]:
    """The performance API's 30-day totals against a recount of the raw events: every loaded event lies in the
    window, so they must match (a difference means the rollups or the loader are wrong)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(pk=setup.owner_id))
    url = reads(setup)["performance (30 days)"]
    response = client.get(url)
    if response.status_code != 200:
        fail(f"GET {url} answered {response.status_code}, not 200")
    reported = {name: response.json()["data"]["totals"][name] for name in TOTALS}
    with psycopg.connect(db_url) as conn:
        row = conn.execute(RECOUNT, {"program": setup.program_id}).fetchone()
    assert row is not None
    recounted = dict(zip(TOTALS, (int(value or 0) for value in row), strict=True))
    match = reported == recounted
    if not match:
        say(f"  WARNING: performance totals {reported} differ from a recount of the events {recounted}")
    return {"match": match, "reported": reported, "recounted": recounted}


TOTALS = ("clicks", "leads", "sales", "revenue_cents", "commission_cents")
# Live counted clicks (a customer's clicks share its visitor: those within an hour on one link are duplicates, which
# the rollup run marks), settled live leads, attributed live sales, their amounts, and what their commissions still pay
# (commissions.selectors.payable_cents).
RECOUNT = """
SELECT (SELECT count(*) FROM tracking_clickevent WHERE program_id = %(program)s AND NOT is_test AND traffic = ''),
       (SELECT count(*) FROM tracking_leadevent WHERE program_id = %(program)s AND NOT is_test AND NOT provisional),
       (SELECT count(*) FROM tracking_saleevent WHERE program_id = %(program)s AND NOT is_test AND attributed),
       (SELECT sum(amount_cents) FROM tracking_saleevent WHERE program_id = %(program)s AND NOT is_test AND attributed),
       (SELECT sum(CASE WHEN c.status = 'reversed' OR (c.status = 'refunded' AND NOT c.credited) THEN 0
                        ELSE c.amount_cents - c.deducted_cents END)
        FROM commissions_commission AS c JOIN tracking_saleevent AS s ON s.id = c.sale_id
        WHERE s.program_id = %(program)s AND NOT s.is_test AND s.attributed)
"""


def time_reads(setup: Setup) -> dict[str, dict[str, Any]]:
    """Each read as the signed-in owner: one warm-up (its statements counted), then the median of RUNS."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(pk=setup.owner_id))
    partner = partner_client(setup)
    measured: dict[str, dict[str, Any]] = {}
    for name, url in reads(setup).items():
        read = functools.partial(get_ok, partner if url.startswith("/portal/") else client, name, url)
        statements = statements_of(read)
        samples = [elapsed_ms(read) for _ in range(RUNS)]
        measured[name] = {
            "url": url,
            "status": 200,
            "median_ms": round(statistics.median(samples), 2),
            "samples_ms": [round(sample, 2) for sample in samples],
            "queries": statements,
        }
    return measured


def get_ok(client: Any, name: str, url: str) -> None:
    response = client.get(url)
    if response.status_code != 200:
        body = response.content[:1000].decode(errors="replace")
        fail(f"{name}: GET {url} answered {response.status_code}, not 200: {body}")


def statements_of(call: Callable[[], None]) -> int:
    """How many SQL statements the call ran (Django's own query log is reset when a request starts)."""
    from django.db import connection

    statements = 0

    def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        call()
    return statements


def elapsed_ms(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


# --- Report -------------------------------------------------------------------------------------------------


def verdicts(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    first, last = steps[0]["reads"], steps[-1]["reads"]
    out = {}
    for name in last:
        growth = last[name]["median_ms"] / first[name]["median_ms"] if first[name]["median_ms"] else math.inf
        flat = last[name]["median_ms"] < TARGET_MS and growth <= MAX_GROWTH
        out[name] = {"growth": round(growth, 2), "flat": flat}
    return out


def print_table(steps: list[dict[str, Any]], verdict: dict[str, dict[str, Any]]) -> None:
    labels = [size_label(step["events"]) for step in steps]
    header = f"{'read (median ms)':<32}" + "".join(f"{label:>10}" for label in labels) + f"{'growth':>9}  queries"
    print("\n" + header)
    print("-" * len(header))
    for name in steps[-1]["reads"]:
        cells = "".join(f"{step['reads'][name]['median_ms']:>10.1f}" for step in steps)
        queries = "/".join(str(step["reads"][name]["queries"]) for step in steps)
        print(f"{name:<32}{cells}{verdict[name]['growth']:>8.2f}x  {queries}")
    print()
    last = labels[-1]
    for name, result in verdict.items():
        ms = steps[-1]["reads"][name]["median_ms"]
        if result["flat"]:
            word = "flat"
        else:
            reasons = []
            if ms >= TARGET_MS:
                reasons.append(f"{ms:.1f} ms at {last}, target < {TARGET_MS:.0f} ms")
            if result["growth"] > MAX_GROWTH:
                reasons.append(f"grew {result['growth']:.2f}x from {labels[0]} to {last}, target <= {MAX_GROWTH}x")
            word = "NOT flat: " + "; ".join(reasons)
        print(f"{name}: {word}")


def git_revision() -> dict[str, Any]:
    def git(*args: str) -> str:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, env=env).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


@contextmanager
def exclusive(db_name: str) -> Iterator[None]:
    """A second run on the same database would drop it under the first one."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / f"{db_name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fail(f"another bench-scale run is using the {db_name} database; wait for it to end")
        yield


def main() -> None:
    sizes = sizes_from_env()
    db_name = os.environ.get("BENCH_SCALE_DB") or DEFAULT_DB
    output = Path(os.environ.get("BENCH_SCALE_OUTPUT") or RESULTS / "scale-latest.json")
    db_url = f"{pg_server()}/{db_name}"
    load_before = round(os.getloadavg()[0], 2)
    if load_before > 0.5:
        say(f"warning: load average {load_before}; other work will skew the figures")
    with exclusive(db_name):
        say(f"fresh database {db_name}, migrate, set-up")
        recreate_database(db_name)
        django_setup(db_name)
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)
        setup = create_setup()
        loaded = {setup.program_id: Loaded(), setup.other_program_id: Loaded()}
        steps: list[dict[str, Any]] = []
        for size in sizes:
            say(f"growing to {size:,} events for program {setup.program_id}")
            timings = grow(db_url, setup, loaded, size)
            say(
                f"  loaded in {timings['load_s']:.1f} s, counters {timings['counters_s']:.1f} s, "
                f"VACUUM ANALYZE {timings['vacuum_analyze_s']:.1f} s"
            )
            rollup_s = rollup_update()
            say(f"  rollup update {rollup_s:.1f} s")
            say(f"  timing the reads at {size_label(size)} (median of {RUNS} after one warm-up)")
            seconds = {name: round(value, 1) for name, value in timings.items()}
            seconds["rollup_update_s"] = round(rollup_s, 1)
            steps.append({"events": size, "seconds": seconds, "reads": time_reads(setup)})
            steps[-1]["performance_totals"] = totals_check(db_url, setup)
    verdict = verdicts(steps)
    print_table(steps, verdict)
    report = {
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": git_revision(),
        "database": db_name,
        "program_id": setup.program_id,
        "other_program_id": setup.other_program_id,
        "load_before": load_before,
        "sizes": sizes,
        "steps": steps,
        "verdicts": verdict,
        "targets": {"max_ms": TARGET_MS, "max_growth": MAX_GROWTH},
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    say(f"wrote {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("bench-scale: interrupted")
