"""`make bench`: throughput and latency of the tracking endpoints on realistic traffic, each against a bare write of
the rows it writes, and against a trivial DRF view.

Creates a fresh PostgreSQL database, migrates it, loads the demo set, adds 1,000 active links on the demo's main
program (spread over its enrolled partners), serves the app with gunicorn (TRUSTED_PROXY_COUNT=1, so each visitor
has the address it sends in X-Forwarded-For) and drives these mixes with wrk:
- bare-click / click: new visitors, each with an address of its own and one of 20 common browser user agents,
  spread over the 1,000 links (bench/visitors.lua, pool/spread/0).
- bare-click-ua / click-ua: new visitors whose user agent nobody sent before (unique/spread/0).
- click-repeat: 10% returning visitors (pool/spread/10): 200 visitors made by real clicks before the run come
  back with their cookie's click id, address, browser and link.
- click-hot: new visitors, all on one link (pool/hot/0).
- bare-sale / sale: commissioned sales (instant program: percent, no hold) on 200 customers that came through
  real clicks (bench/sale.lua).
- bare-lead / lead: server-mode leads, with the program's key, each on a customer of its own that came through a
  real click of this run and a customer_key of its own (bench/lead.lua).
- trivial: GET /bench/trivial.
- click-light / sale-light: the click and sale mixes at 2 connections, one request in flight per wrk thread: the
  latency of the path itself, where the p99 target applies (at 32 connections on 2 workers a request waits for
  the ones queued before it, whatever the path costs: 32 / 500 req/s is 64 ms on average).
The bare endpoints (tracking/bench_views.py, routed only with BENCH_TRIVIAL_ENDPOINT) are plain Django views that
write with the ORM, in one transaction, the rows the path writes, from the same bodies.

Every run comes after an unmeasured warm-up, and is checked after it ends: it is REFUSED (the bench stops with a
message, exit status 1) when any answer was not 2xx or a socket failed, when its rows (clicks and leads by
session_id = the run's prefix, sales by transaction-id prefix) are fewer than the requests wrk counted or more
than those plus the connections (requests in flight at the stop), or when it took another branch than claimed:
a new-visitor click mix (bare or not) must make one new customer per request, every click counted as human
(traffic ''); click-repeat's share of clicks by returning visitors must lie between 5% and 15%; every sale must
have its commission; every lead must move its own customer to `lead` and announce lead.created.

Prints a table (req/s, p50, p99, requests, rows and the load average before each mix, with the offered load),
the ratios and the targets (they live here, never in a timed test), and writes bench/results/latest.json.
Exits 0 whether or not the targets are met; non-zero only when the harness could not run or refused a run.

Options: --only MIX... (the mixes to drive), --rounds N (1): each path and its baseline run interleaved N times
and the median is reported (figures on a 2-core machine vary by about 15% from run to run).
Environment: BENCH_SECONDS (15), BENCH_CONNECTIONS (32), BENCH_WORKERS (2), BENCH_THREADS (unset: sync
workers; N: gthread workers with N threads), BENCH_WARMUP (2 seconds before every measured run; 0: none),
BENCH_DB (svc_bench: the database the run drops and makes again).
"""

import argparse
import datetime
import fcntl
import json
import math
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
# Its own database, dropped and made again on every run; BENCH_DB names another (a second checkout's run).
DB_NAME = os.environ.get("BENCH_DB", "") or "svc_bench"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
WRK_THREADS = 2
LINKS = 1_000
RETURNING_VISITORS = 200
CUSTOMER_POOL = 200

# visitors.lua's arguments for each click mix: user agents, links, repeat share in percent.
CLICK_MIXES: dict[str, tuple[str, str, int]] = {
    "bare-click": ("pool", "spread", 0),
    "click": ("pool", "spread", 0),
    "bare-click-ua": ("unique", "spread", 0),
    "click-ua": ("unique", "spread", 0),
    "click-repeat": ("pool", "spread", 10),
    "click-hot": ("pool", "hot", 0),
    "click-light": ("pool", "spread", 0),
}
# Measured in this order; the mixes of a group run interleaved, round after round, so a path and its baseline
# see the same machine.
GROUPS: tuple[tuple[str, ...], ...] = (
    ("trivial",),
    ("bare-click", "click"),
    ("bare-click-ua", "click-ua"),
    ("click-repeat",),
    ("click-hot",),
    ("bare-sale", "sale"),
    ("bare-lead", "lead"),
    ("click-light", "sale-light"),
)
# Latency mixes: the click and sale mixes at LIGHT_CONNECTIONS (one request in flight per wrk thread, no more than
# the workers), so that latency is the path's own and not the queue of a saturated server. At 32 connections on
# 2 workers a request waits for the 15 before it (Little's law: 32 / 500 req/s = 64 ms on average), whatever the
# path costs; a latency target there would measure the queue.
LIGHT_MIXES = ("click-light", "sale-light")
LIGHT_CONNECTIONS = 2
MIXES: tuple[str, ...] = tuple(name for group in GROUPS for name in group)
REPEAT_SHARE = (0.05, 0.15)

# Targets (issue 24): the new visitor's click at least as fast as its bare write, the new user agent within 90%,
# the commissioned sale within 80% of its own bare write and 70% of the bare click's.
BARE_TARGETS: tuple[tuple[str, str, float], ...] = (
    ("click", "bare-click", 1.0),
    ("click-ua", "bare-click-ua", 0.9),
    ("sale", "bare-sale", 0.8),
    ("sale", "bare-click", 0.7),
)
# Reported without a target.
INFO_RATIOS: tuple[tuple[str, str], ...] = (
    ("click-repeat", "bare-click"),
    ("click-hot", "bare-click"),
    ("lead", "bare-lead"),
)
MIN_RATIO = {"click": 0.14, "sale": 0.12}  # over trivial
MAX_P99_MS = 60.0  # the latency mixes' p99
BUSY_LOAD = 0.5
# visitors.lua makes a visitor's address from the run number (second octet: run * 4 + wrk thread, mod 256), so
# at most this many visitor runs get addresses no other run of theirs used.
MAX_VISITOR_RUNS = 256 // 4 - 1
# The lead pool holds this much more than the fastest rate seen so far would use.
LEAD_POOL_MARGIN = 1.3


def fail(message: str) -> NoReturn:
    raise SystemExit(f"bench: {message}")


def env_int(name: str, default: int, *, minimum: int = 1) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < minimum:
        fail(f"{name} must be a whole number of at least {minimum}, got {raw!r}")
    return int(raw)


# --- Setup -------------------------------------------------------------------------------------


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if not shutil.which("apt-get"):
        fail("wrk is not installed and there is no apt-get to install it; install wrk and run again")
    print("bench: wrk not found, installing the Debian package", flush=True)

    def apt_get(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        return subprocess.run(["apt-get", "-q", *args], env=env, capture_output=True, text=True)

    done = apt_get("install", "-y", "wrk")
    if done.returncode != 0:
        # Package lists are often missing on a fresh machine; refresh them only when needed.
        apt_get("update")
        done = apt_get("install", "-y", "wrk")
    found = shutil.which("wrk")
    if done.returncode != 0 or not found:
        fail(f"could not install wrk with apt-get (root needed):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return found


def recreate_database() -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        # FORCE ends sessions a previous, interrupted run may have left open.
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB_NAME)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))


def server_env() -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        "DEBUG": "false",
        "SECRET_KEY": "bench-secret",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "RATELIMIT_SCALE": "100000",
        "BENCH_TRIVIAL_ENDPOINT": "true",
        "LOG_LEVEL": "WARNING",
        # Each visitor's address is the one it sends in X-Forwarded-For, as behind one proxy.
        "TRUSTED_PROXY_COUNT": "1",
    }


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"manage.py {args[0]} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gunicorn(env: dict[str, str], *, workers: int, threads: int | None) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # The same settings file as `make run`: one instance id, so the workers share their rate-limit counts.
    cmd = [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"]
    cmd += ["--workers", str(workers), "--log-level", "warning"]
    if threads:
        cmd += ["--worker-class", "gthread", "--threads", str(threads)]
    log_path = RESULTS / "gunicorn.log"
    with open(log_path, "w") as log:
        # Its own session: a Ctrl-C reaches only this script, which then stops the server in order.
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**env, "ACCESS_LOG": ""}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_healthy(proc, base, log_path)
        yield base
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_healthy(proc: subprocess.Popen[bytes], base: str, log_path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"gunicorn exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # not listening yet, or a worker still booting on a busy machine
        time.sleep(0.2)
    fail(f"GET /healthz did not answer 200 within {timeout:.0f} s:\n{log_path.read_text()[-3000:]}")


# --- Requests from Python: pre-flight checks, returning visitors and customer pools --------------


def call(url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def expect_200(
    name: str, url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """One checked request before a mix is measured: its endpoint answers exactly 200."""
    status, payload = call(url, body, headers)
    if status != 200:
        fail(f"{name}: expected HTTP 200 from {url}, got {status}: {payload[:1000].decode(errors='replace')}")
    return json.loads(payload)


def lua_user_agents() -> list[str]:
    """visitors.lua's 20 common user agents, in its order (a returning visitor is sent by its index)."""
    text = (BENCH / "visitors.lua").read_text()
    table = re.search(r"^local USER_AGENTS = \{\n(.*?)^\}", text, re.MULTILINE | re.DOTALL)
    if table is None:
        fail("bench/visitors.lua has no USER_AGENTS table")
    return re.findall(r'^\s*"([^"]+)",\s*$', table.group(1), re.MULTILINE)


def visitor_body(link_code: str, user_agent: str, session_id: str) -> dict[str, Any]:
    return {
        "affiliate_url": f"https://shop.example.com/?aff={link_code}",
        "page_url": "https://shop.example.com/pricing",
        "referrer_url": "https://news.example.org/post",
        "user_agent": user_agent,
        "session_id": session_id,
    }


def setup_address(block: int, index: int) -> str:
    """A public address of the harness's own clicks: first octet 5, which visitors.lua never uses."""
    return f"5.{block}.{index // 250}.{index % 250 + 1}"


@dataclass(frozen=True)
class Returning:
    """A visitor who clicked before: what visitors.lua sends for them."""

    click_id: str
    ip: str
    agent: int  # 1-based index into visitors.lua's USER_AGENTS
    link: int  # 1-based index into the link codes

    def lua(self) -> str:
        return f"{self.click_id}|{self.ip}|{self.agent}|{self.link}"


def returning_visitors(base: str, codes: Sequence[str], agents: Sequence[str], count: int) -> list[Returning]:
    """`count` new visitors by real clicks, spread over the links and user agents."""
    visitors = []
    for i in range(count):
        visitor = Returning(
            click_id="", ip=setup_address(45, i), agent=i % len(agents) + 1, link=(i * 7) % len(codes) + 1
        )
        answer = expect_200(
            "returning visitors",
            f"{base}/api/v1/track/click",
            visitor_body(codes[visitor.link - 1], agents[visitor.agent - 1], "bench-returning"),
            {"X-Forwarded-For": visitor.ip},
        )
        visitors.append(Returning(answer["click_id"], visitor.ip, visitor.agent, visitor.link))
    return visitors


def customer_pool(base: str, link_code: str, user_agent: str) -> list[str]:
    """The sale mix's buyers: customers of real clicks, one visitor (address) each."""
    url = f"{base}/api/v1/track/click"
    return [
        expect_200(
            "customer pool",
            url,
            visitor_body(link_code, user_agent, "bench-buyers"),
            {"X-Forwarded-For": setup_address(46, i)},
        )["click_id"]
        for i in range(CUSTOMER_POOL)
    ]


def links_create(database_url: str, program_id: int, count: int) -> list[str]:
    """`count` active links on the program, spread over its enrolled partners (the demo makes only a few)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        partner_ids = [
            row[0]
            for row in conn.execute(
                "SELECT partner_id FROM programs_partnerprogram WHERE program_id = %s ORDER BY partner_id", [program_id]
            )
        ]
        if not partner_ids:
            fail(f"the demo's main program {program_id} has no enrolled partner to give links to")
        codes = [f"bench{i:04d}" for i in range(count)]
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO programs_referrallink (short_link, partner_id, program_id, is_active, is_synthetic, "
                "clicks, created_at) VALUES (%s, %s, %s, true, false, 0, now())",
                [(code, partner_ids[i % len(partner_ids)], program_id) for i, code in enumerate(codes)],
            )
    return codes


# --- wrk ----------------------------------------------------------------------------------------

TIME_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def parse_wrk(output: str) -> dict[str, Any]:
    def number(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if not match:
            fail(f"could not read {pattern!r} from wrk's output:\n{output}")
        return match

    percentiles = {
        f"p{pct}_ms": round(float(value) * TIME_UNITS_MS[unit], 3)
        for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m|h)\s*$", output, re.MULTILINE)
    }
    if "p99_ms" not in percentiles:
        fail(f"wrk printed no latency distribution:\n{output}")
    # wrk prints these two lines only when their counts are not zero.
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    socket_counts = [int(n) for n in sockets.groups()] if sockets else [0, 0, 0, 0]
    return {
        "requests_per_sec": float(number(r"^Requests/sec:\s+([\d.]+)").group(1)),
        "requests": int(number(r"(\d+) requests in ").group(1)),
        **percentiles,
        "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": dict(zip(("connect", "read", "write", "timeout"), socket_counts, strict=True)),
    }


def run_wrk(
    wrk: str,
    url: str,
    *,
    seconds: int,
    connections: int,
    script: str | None = None,
    script_args: list[str] | None = None,
    headers: list[str] | None = None,
) -> dict[str, Any]:
    cmd = [wrk, f"-t{WRK_THREADS}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for header in headers or []:
        cmd += ["-H", header]
    if script:
        cmd += ["-s", str(BENCH / script)]
    cmd.append(url)
    if script_args:
        cmd += ["--", *script_args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"wrk exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return {**parse_wrk(done.stdout), "wrk_output": done.stdout}


# --- Branch checks ------------------------------------------------------------------------------


def kind_of(name: str) -> str:
    """The path a mix drives: trivial, click, sale or lead."""
    return name.removeprefix("bare-").split("-")[0]


def branch_problems(name: str, result: dict[str, Any], rows: dict[str, int] | None, *, connections: int) -> list[str]:
    """Why a measured run cannot be reported: answers other than 2xx, socket errors, rows that do not match the
    requests wrk counted, or another branch than the mix claims. Empty when the run is sound. `rows` are the
    run's rows as row_counts reads them (None for trivial, which writes none)."""
    problems = []
    if result["non_2xx"]:
        problems.append(f"{result['non_2xx']} answers other than 2xx")
    sockets = sum(result["socket_errors"].values())
    if sockets:
        problems.append(f"{sockets} socket errors ({result['socket_errors']})")
    if rows is None:
        return problems
    requests, count = result["requests"], rows["rows"]
    if count < requests:
        problems.append(f"{count} rows for {requests} requests answered: some answers wrote nothing")
    elif count > requests + connections:
        problems.append(f"{count} rows for {requests} requests and {connections} connections: rows of other requests")
    if not count:
        return problems
    kind = kind_of(name)
    if kind == "click" and name != "click-repeat":
        if rows["customers"] != count or rows["existing"]:
            problems.append(
                f"{rows['customers']} distinct customers ({rows['existing']} of them from before the run) for "
                f"{count} clicks: not one new customer per request"
            )
        if rows["not_human"]:
            problems.append(f"{rows['not_human']} of {count} clicks not counted as human (traffic other than '')")
    elif name == "click-repeat":
        share = rows["existing"] / count
        low, high = REPEAT_SHARE
        if not low <= share <= high:
            problems.append(
                f"{rows['existing']} of {count} clicks ({share:.1%}) by returning visitors, not {low:.0%} to {high:.0%}"
            )
        if rows["new_customers"] != count - rows["existing"]:
            problems.append(
                f"{rows['new_customers']} new customers for {count - rows['existing']} clicks of new visitors"
            )
    elif kind == "sale":
        if rows["with_commission"] != count:
            problems.append(f"{count - rows['with_commission']} of {count} sales without a commission")
    elif kind == "lead":
        if rows["customers"] != count or rows["at_lead"] != count:
            problems.append(
                f"{count} leads on {rows['customers']} distinct customers, {rows['at_lead']} of them now at lead: "
                "not one customer moved to lead per request"
            )
        if rows["announced"] != count:
            problems.append(f"{count - rows['announced']} of {count} leads without their lead.created event")
    return problems


CLICK_ROWS_SQL = """
    SELECT count(*), count(DISTINCT customer_id), count(*) FILTER (WHERE customer_id <= %(before)s),
        count(DISTINCT customer_id) FILTER (WHERE customer_id > %(before)s), count(*) FILTER (WHERE traffic <> '')
    FROM tracking_clickevent WHERE session_id = %(prefix)s"""
SALE_ROWS_SQL = """
    SELECT count(s.id), count(c.id) FROM tracking_saleevent s
    LEFT JOIN commissions_commission c ON c.sale_id = s.id WHERE s.processor_event_id LIKE %(prefix)s || '-%%'"""
LEAD_ROWS_SQL = """
    SELECT count(l.id), count(DISTINCT l.customer_id), count(*) FILTER (WHERE c.customer_status = 'lead'),
        count(w.id)
    FROM tracking_leadevent l JOIN tracking_customer c ON c.id = l.customer_id
    LEFT JOIN webhooks_webhookevent w ON w.type = 'lead.created' AND w.object_id = l.id
    WHERE l.session_id = %(prefix)s"""
ROWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "click": (CLICK_ROWS_SQL, ("rows", "customers", "existing", "new_customers", "not_human")),
    "sale": (SALE_ROWS_SQL, ("rows", "with_commission")),
    "lead": (LEAD_ROWS_SQL, ("rows", "customers", "at_lead", "announced")),
}


def row_counts(
    database_url: str, kind: str, *, prefix: str, customers_before: int, settle_seconds: float = 5.0
) -> dict[str, int]:
    """The run's rows. wrk stops with requests still in flight, whose rows land after it exits: the counts are
    read again until they stop changing."""
    query, names = ROWS[kind]
    deadline = time.monotonic() + settle_seconds
    previous = None
    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            counted = conn.execute(query, {"prefix": prefix, "before": customers_before}).fetchone()
            if counted == previous or time.monotonic() > deadline:
                break
            previous = counted
            time.sleep(0.5)
    assert counted is not None  # an aggregate without GROUP BY always returns one row
    return dict(zip(names, counted, strict=True))


# --- Mixes --------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What wrk sends for one mix; `args` makes a run's script arguments from its prefix."""

    url: str
    script: str | None = None
    headers: list[str] = field(default_factory=list)
    args: Callable[[str], list[str]] | None = None
    connections: int | None = None  # the bench's (BENCH_CONNECTIONS) unless the mix sets its own


class Bench:
    """The server under test, its data and what the mixes send."""

    def __init__(
        self,
        *,
        wrk: str,
        env: dict[str, str],
        config: dict[str, Any],
        base: str,
        demo: dict[str, Any],
        codes: list[str],
    ):
        self.wrk, self.env, self.config, self.base, self.demo, self.codes = wrk, env, config, base, demo, codes
        self.agents = lua_user_agents()
        self.returning: list[Returning] = []
        self.buyers: list[str] = []
        self.visitor_runs = 0
        # The session ids of real click runs: their customers are the lead mix's.
        self.click_prefixes: list[str] = []
        self.fastest = 0.0  # req/s of the fastest writing run so far, to size the lead pool
        self.lead_pool_path = RESULTS / "lead-pool.txt"
        self.checks = 0

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    def wrk_run(self, plan: Plan, seconds: int) -> tuple[str, dict[str, Any]]:
        prefix = secrets.token_hex(6)
        result = run_wrk(
            self.wrk,
            plan.url,
            seconds=seconds,
            connections=plan.connections or self.config["connections"],
            script=plan.script,
            script_args=plan.args(prefix) if plan.args else None,
            headers=plan.headers,
        )
        return prefix, result

    def visitors_args(self, name: str) -> Callable[[str], list[str]]:
        agents, links, share = CLICK_MIXES[name]

        def args(prefix: str) -> list[str]:
            self.visitor_runs += 1
            if self.visitor_runs > MAX_VISITOR_RUNS:
                fail(f"more than {MAX_VISITOR_RUNS} visitor runs: their addresses would repeat (fewer --rounds)")
            if not name.startswith("bare-"):
                self.click_prefixes.append(prefix)
            returning = [visitor.lua() for visitor in self.returning] if share else []
            return [
                prefix,
                str(self.visitor_runs),
                agents,
                links,
                str(share),
                str(len(self.codes)),
                *self.codes,
                *returning,
            ]

        return args

    @staticmethod
    def light(name: str) -> int | None:
        return LIGHT_CONNECTIONS if name in LIGHT_MIXES else None

    def plan(self, name: str) -> Plan:
        """The mix's plan, after a checked request proves its endpoint answers 200."""
        base, kind = self.base, kind_of(name)
        path = f"/bench/{name.split('-')[0]}-{kind}" if name.startswith("bare-") else f"/api/v1/track/{kind}"
        if kind == "trivial":
            expect_200(name, f"{base}/bench/trivial")
            return Plan(url=f"{base}/bench/trivial")
        if kind == "click":
            if name == "click-repeat" and not self.returning:
                self.returning = returning_visitors(base, self.codes, self.agents, RETURNING_VISITORS)
            body = visitor_body(self.codes[0], self.agents[0], "bench-check")
            self.checks += 1
            expect_200(name, base + path, body, {"X-Forwarded-For": setup_address(47, self.checks)})
            return Plan(
                url=base + path, script="visitors.lua", args=self.visitors_args(name), connections=self.light(name)
            )
        if kind == "sale":
            program = self.demo["programs"]["instant"]
            if not self.buyers:
                self.buyers = customer_pool(base, self.demo["links"]["instant"], self.agents[0])
            auth = {"Authorization": f"Bearer {program['api_key']}"} if not name.startswith("bare-") else {}
            check = {
                "transaction_id": f"check-{secrets.token_hex(8)}",
                "amount_cents": 4900,
                "click_id": self.buyers[0],
            }
            if expect_200(name, base + path, check, auth).get("commission_id") is None:
                fail(f"{name}: the checked sale created no commission, so the mix would not measure commissions")
            return Plan(
                url=base + path,
                script="sale.lua",
                headers=[f"{k}: {v}" for k, v in auth.items()],
                args=lambda prefix: [prefix, str(WRK_THREADS), *self.buyers],
                connections=self.light(name),
            )
        assert kind == "lead"
        auth = {"Authorization": f"Bearer {self.demo['programs']['main']['api_key']}"} if name == "lead" else {}
        self.lead_pool_ensure(WRK_THREADS + 1)
        check = {"click_id": self.lead_pool()[0], "customer_key": f"check-{secrets.token_hex(6)}"}
        expect_200(name, base + path, check, auth)
        return Plan(
            url=base + path,
            script="lead.lua",
            headers=[f"{k}: {v}" for k, v in auth.items()],
            args=self.lead_args,
        )

    # The lead mix's customers: those of this bench's real clicks still at `click`.

    def lead_pool(self) -> list[str]:
        with psycopg.connect(self.database_url) as conn:
            rows = conn.execute(
                "SELECT c.click_id FROM tracking_customer c WHERE c.customer_status = 'click' AND NOT c.is_test "
                "AND c.program_id = %s "
                "AND c.id IN (SELECT customer_id FROM tracking_clickevent WHERE session_id = ANY(%s)) ORDER BY c.id",
                [self.demo["programs"]["main"]["id"], self.click_prefixes],
            ).fetchall()
        return [row[0] for row in rows]

    def lead_pool_ensure(self, need: int) -> None:
        """Real clicks of new visitors until the pool holds `need` customers."""
        feed = Plan(url=f"{self.base}/api/v1/track/click", script="visitors.lua", args=self.visitors_args("click"))
        while (have := len(self.lead_pool())) < need:
            rate = self.fastest or 300.0
            seconds = min(120, max(3, math.ceil((need - have) / rate * LEAD_POOL_MARGIN)))
            print(f"bench: lead pool {have} of {need} customers, {seconds} s of new visitors' clicks", flush=True)
            _, result = self.wrk_run(feed, seconds)
            if has_errors(result):
                fail(f"the lead pool's clicks failed: {result['wrk_output']}")
            self.fastest = max(self.fastest, result["requests_per_sec"])

    def lead_args(self, prefix: str) -> list[str]:
        pool = self.lead_pool()
        self.lead_pool_path.write_text("\n".join(pool) + "\n")
        return [prefix, str(WRK_THREADS), str(self.lead_pool_path)]

    def lead_runs_prepare(self) -> None:
        """Enough customers for a warm-up and a measured lead run at the fastest rate seen (each lead uses one)."""
        seconds = self.config["warmup"] + self.config["seconds"]
        rate = self.fastest or 300.0
        self.lead_pool_ensure(math.ceil(rate * seconds * LEAD_POOL_MARGIN) + 2 * self.config["connections"])

    def measure(self, name: str, plan: Plan) -> dict[str, Any]:
        """An unmeasured warm-up run (imports, connections, caches), then the measured one, checked."""
        kind = kind_of(name)
        if kind == "lead":
            self.lead_runs_prepare()
        if self.config["warmup"]:
            self.wrk_run(plan, self.config["warmup"])
            if kind == "lead":
                # Leads still in flight when wrk stopped would take customers the next pool hands out.
                self.leads_settle()
        load_before = round(os.getloadavg()[0], 2)
        customers_before = self.customers_max()
        prefix, result = self.wrk_run(plan, self.config["seconds"])
        rows = None
        if kind != "trivial":
            rows = row_counts(self.database_url, kind, prefix=prefix, customers_before=customers_before)
            self.fastest = max(self.fastest, result["requests_per_sec"])
        problems = branch_problems(name, result, rows, connections=plan.connections or self.config["connections"])
        if problems:
            RESULTS.joinpath("refused.txt").write_text(f"{name}\n{json.dumps(rows)}\n{result['wrk_output']}")
            fail(f"REFUSED {name}: " + "; ".join(problems) + " (wrk output in bench/results/refused.txt)")
        return {**result, "rows": rows, "load_before": load_before, "prefix": prefix}

    def leads_settle(self, settle_seconds: float = 10.0) -> None:
        deadline = time.monotonic() + settle_seconds
        previous = None
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                counted = conn.execute("SELECT count(*) FROM tracking_leadevent").fetchone()
                if counted == previous:
                    return
                previous = counted
                time.sleep(0.5)

    def customers_max(self) -> int:
        with psycopg.connect(self.database_url) as conn:
            row = conn.execute("SELECT coalesce(max(id), 0) FROM tracking_customer").fetchone()
        assert row is not None
        return int(row[0])


def rounds_order(wanted: Sequence[str], rounds: int) -> list[str]:
    """The measured runs in order: group by group, the group's wanted mixes interleaved `rounds` times, every other
    round in reverse (bare, path, path, bare, ...): the tables grow with every run, so a path always measured after
    its baseline would always meet the larger ones."""
    order = []
    for group in GROUPS:
        chosen = [name for name in group if name in wanted]
        for round_index in range(rounds):
            order += chosen if round_index % 2 == 0 else chosen[::-1]
    return order


def median_result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One mix's figures over its rounds: the median of each (a single round is itself)."""
    figures = ("requests_per_sec", "p50_ms", "p99_ms", "requests", "load_before")
    summary: dict[str, Any] = {key: round(statistics.median(run[key] for run in runs), 3) for key in figures}
    rows = [run["rows"]["rows"] for run in runs if run.get("rows")]
    summary["rows"] = statistics.median(rows) if rows else None
    summary["rounds"] = [round(run["requests_per_sec"], 1) for run in runs]
    summary["runs"] = runs
    return summary


# --- Report -------------------------------------------------------------------------------------


def has_errors(result: dict[str, Any]) -> bool:
    return result.get("non_2xx", 0) > 0 or sum(result.get("socket_errors", {}).values()) > 0


def ratio_of(results: dict[str, dict[str, Any]], name: str, baseline: str) -> float | None:
    if name not in results or baseline not in results or not results[baseline]["requests_per_sec"]:
        return None
    return round(results[name]["requests_per_sec"] / results[baseline]["requests_per_sec"], 4)


def evaluate(results: dict[str, dict[str, Any]]) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The ratios between the mixes driven, and the targets on them (only those whose two mixes ran)."""
    ratios: dict[str, float] = {}
    targets: list[dict[str, Any]] = []
    pairs = [(name, baseline, minimum) for name, baseline, minimum in BARE_TARGETS]
    pairs += [(name, "trivial", minimum) for name, minimum in MIN_RATIO.items()]
    for name, baseline, minimum in pairs:
        value = ratio_of(results, name, baseline)
        if value is not None:
            ratios[f"{name}/{baseline}"] = value
            targets.append({"target": f"{name}/{baseline} >= {minimum}", "value": value, "passed": value >= minimum})
    for name, baseline in INFO_RATIOS:
        value = ratio_of(results, name, baseline)
        if value is not None:
            ratios[f"{name}/{baseline}"] = value
    for name in LIGHT_MIXES:
        if name in results:
            p99 = results[name]["p99_ms"]
            targets.append({"target": f"{name} p99 < {MAX_P99_MS:g} ms", "value": p99, "passed": p99 < MAX_P99_MS})
    return ratios, targets


# The request log may take at most this share of a click's time in a worker (issue: click throughput within 5%).
MAX_REQUEST_LOG_SHARE = 0.05


def request_log_targets(
    results: dict[str, dict[str, Any]], log_cost_us: float, config: dict[str, Any]
) -> list[dict[str, Any]]:
    """The log's cost per call as a share of the time a worker spends on one click (workers / click req/s)."""
    click = results.get("click")
    if not click or not click["requests_per_sec"]:
        return []
    click_us = config["workers"] / click["requests_per_sec"] * 1e6
    share = log_cost_us / click_us
    return [
        {
            "target": f"request log <= {MAX_REQUEST_LOG_SHARE:.0%} of a click",
            "value": f"{share:.1%} ({log_cost_us:.0f} of {click_us:.0f} µs)",
            "passed": share <= MAX_REQUEST_LOG_SHARE,
        }
    ]


def print_report(
    results: dict[str, dict[str, Any]], ratios: dict[str, float], targets: list[dict[str, Any]], config: dict[str, Any]
) -> None:
    print()
    server = f"{config['workers']} workers" + (f" x {config['threads']} threads" if config["threads"] else " (sync)")
    print(
        f"offered load: {config['connections']} connections from {config['wrk_threads']} wrk threads, "
        f"{config['seconds']} s per run after {config['warmup']} s of warm-up, {config['rounds']} round(s), "
        f"gunicorn {server}; load average before the bench {config['load_before']}; "
        f"{', '.join(LIGHT_MIXES)} at {LIGHT_CONNECTIONS} connections"
    )
    columns = ("req/s", "p50 ms", "p99 ms", "requests", "rows", "load")
    print(f"{'mix':<15}" + "".join(f"{c:>10}" for c in columns) + ("   req/s by round" if config["rounds"] > 1 else ""))
    for name, r in results.items():
        rows = "-" if r["rows"] is None else f"{r['rows']:.0f}"
        by_round = "   " + " ".join(f"{v:.1f}" for v in r["rounds"]) if config["rounds"] > 1 else ""
        print(
            f"{name:<15}{r['requests_per_sec']:>10.1f}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}"
            f"{r['requests']:>10.0f}{rows:>10}{r['load_before']:>10.2f}{by_round}"
        )
    if ratios:
        print()
    for ratio_name, value in ratios.items():
        print(f"{ratio_name:<26}{value:.3f}")
    for t in targets:
        print(f"{'PASS' if t['passed'] else 'FAIL'}  {t['target']:<32} measured {t['value']}")


def git_revision() -> dict[str, Any]:
    def git(*args: str) -> str:
        # Optional locks off: a status check must not take the index lock from someone committing.
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, env=env)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(dirty)}


# Visitor runs kept for the lead pool's clicks, on top of the click mixes' warm-up and measured runs.
FEEDER_RUNS = 6


def options_parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=MIXES, default=list(MIXES), metavar="MIX", help="mixes to drive")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds per mix; the median is reported")
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    options.only = [name for name in MIXES if name in options.only]
    click_runs = sum(name in CLICK_MIXES for name in options.only) * options.rounds * 2
    if click_runs + FEEDER_RUNS > MAX_VISITOR_RUNS:
        parser.error(
            f"{options.rounds} rounds of {click_runs // options.rounds // 2} click mixes need more visitor "
            f"addresses than visitors.lua gives ({MAX_VISITOR_RUNS} runs): fewer rounds or mixes"
        )
    return options


def main() -> None:
    options = options_parse()
    config: dict[str, Any] = {
        "seconds": env_int("BENCH_SECONDS", 15),
        "warmup": env_int("BENCH_WARMUP", 2, minimum=0),
        "connections": env_int("BENCH_CONNECTIONS", 32),
        "workers": env_int("BENCH_WORKERS", 2),
        "threads": env_int("BENCH_THREADS", 0) or None,
        "wrk_threads": WRK_THREADS,
        "rounds": options.rounds,
    }
    if config["connections"] < WRK_THREADS:
        fail(f"BENCH_CONNECTIONS must be at least {WRK_THREADS}")
    # Turn SIGTERM and SIGHUP into SystemExit so the finally blocks stop gunicorn.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))

    with exclusive_run():
        bench(config, options.only)


@contextmanager
def exclusive_run() -> Iterator[None]:
    """A second run at once would drop the first one's database under its server and share its cores."""
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "bench.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fail(f"another bench run is in progress (it owns the {DB_NAME} database); wait for it to end")
        yield


def bench(config: dict[str, Any], wanted: list[str]) -> None:
    # wrk and gunicorn share the machine's cores: anything else running skews every figure.
    config["load_before"] = round(os.getloadavg()[0], 2)
    if config["load_before"] > BUSY_LOAD:
        print(f"bench: warning: load average {config['load_before']}; other work will skew the figures")
    wrk = ensure_wrk()
    env = server_env()
    print(f"bench: fresh database {DB_NAME}, migrate, demo data, {LINKS} links", flush=True)
    recreate_database()
    manage(env, "migrate", "--noinput")
    demo = json.loads(manage(env, "demo", "--json"))
    codes = links_create(env["DATABASE_URL"], demo["programs"]["main"]["id"], LINKS)

    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in wanted}
    with gunicorn(env, workers=config["workers"], threads=config["threads"]) as base:
        harness = Bench(wrk=wrk, env=env, config=config, base=base, demo=demo, codes=codes)
        plans: dict[str, Plan] = {}
        for name in rounds_order(wanted, config["rounds"]):
            if name not in plans:
                plans[name] = harness.plan(name)
            round_number = len(runs[name]) + 1
            print(f"bench: {name} (round {round_number} of {config['rounds']}, {config['seconds']} s)", flush=True)
            runs[name].append(harness.measure(name, plans[name]))

    results = {name: median_result(runs[name]) for name in wanted}
    # What the request log adds to each call, timed by itself (end-to-end runs vary more than its share).
    log_cost = json.loads(manage(env, "request_log_cost", "--json"))["microseconds_per_call"]
    ratios, targets = evaluate(results)
    targets.extend(request_log_targets(results, log_cost, config))
    print_report(results, ratios, targets, config)
    report = {
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": git_revision(),
        "config": config,
        "results": results,
        "ratios": ratios,
        "request_log_microseconds_per_call": log_cost,
        "targets": targets,
    }
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\nbench: wrote bench/results/latest.json")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("bench: interrupted")
