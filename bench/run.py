"""`make bench`: throughput and latency of the tracking endpoints against a trivial DRF baseline and against a
bare write of the same rows.

Creates a fresh PostgreSQL database, migrates it, loads the demo set, serves the app with gunicorn and drives
GET /bench/trivial, POST /bench/bare-click, POST /api/v1/track/click, POST /bench/bare-sale and
POST /api/v1/track/sale with wrk. The two bare endpoints (tracking/bench_views.py) are plain Django views that
write with the ORM, in one transaction, the rows a click and a commissioned sale write (its webhook events
included), from the same bodies.
Every measured sale is a non-renewal sale of an attributed customer on a percent program with no hold, so each
one creates a commission and its ledger credit; the run counts them afterwards and reports any sale without
one. Prints a table and the targets, and writes bench/results/latest.json. Exits 0 whether or not the targets
are met; non-zero only when the harness itself could not run.

Environment: BENCH_SECONDS (15), BENCH_CONNECTIONS (32), BENCH_WORKERS (2), BENCH_THREADS (unset: sync
workers; N: gthread workers with N threads), BENCH_WARMUP (2 seconds per endpoint, not measured; 0: none).
"""

import argparse
import datetime
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
DB_NAME = "svc_bench"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
ENDPOINTS = ("trivial", "bare-click", "click", "bare-sale", "sale")
WRK_THREADS = 2
CUSTOMER_POOL = 200
CHROME_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
MIN_RATIO = {"click": 0.14, "sale": 0.12}
# Each tracking endpoint against the bare write of its rows (issue 13: click at least as fast, sale within 80%).
MIN_BARE_RATIO = {"click": 1.0, "sale": 0.8}
MAX_P99_MS = 60.0
BUSY_LOAD = 0.5


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

    def apt_get(*args: str) -> subprocess.CompletedProcess:
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
def gunicorn(env: dict[str, str], *, workers: int, threads: int | None):
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


def wait_healthy(proc: subprocess.Popen, base: str, log_path: Path, timeout: float = 30.0) -> None:
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


# --- Requests from Python: pre-flight checks and the customer pool ------------------------------


def call(url: str, body: dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def expect_200(name: str, url: str, body: dict | None = None, headers: dict[str, str] | None = None) -> dict:
    """wrk counts only 4xx/5xx as errors, so one checked request first makes sure the endpoint answers
    exactly 200 before we measure it."""
    status, payload = call(url, body, headers)
    if status != 200:
        fail(f"{name}: expected HTTP 200 from {url}, got {status}: {payload[:1000].decode(errors='replace')}")
    return json.loads(payload)


def click_body(link_code: str) -> dict:
    return {
        "affiliate_url": f"https://shop.example.com/?aff={link_code}",
        "page_url": "https://shop.example.com/pricing",
        "referrer_url": "https://news.example.org/post",
        "user_agent": CHROME_UA,
        "session_id": "s1",
    }


def customer_pool(base: str, link_code: str) -> list[str]:
    url = f"{base}/api/v1/track/click"
    return [expect_200("customer pool", url, click_body(link_code))["click_id"] for _ in range(CUSTOMER_POOL)]


# --- wrk ----------------------------------------------------------------------------------------

TIME_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def parse_wrk(output: str) -> dict:
    def number(pattern: str) -> re.Match:
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
) -> dict:
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


def endpoint_plans(base: str, demo: dict, wanted: list[str]) -> dict[str, dict]:
    """What wrk sends for each endpoint, after a checked request proves the endpoint answers 200."""
    plans: dict[str, dict] = {}
    if "trivial" in wanted:
        url = f"{base}/bench/trivial"
        expect_200("trivial", url)
        plans["trivial"] = {"url": url}
    body = click_body(demo["links"]["main"])
    for name, url in (("bare-click", f"{base}/bench/bare-click"), ("click", f"{base}/api/v1/track/click")):
        if name in wanted:
            expect_200(name, url, body)
            plans[name] = {"url": url, "script": "click.lua", "script_args": lambda: [json.dumps(body)]}
    if "sale" in wanted or "bare-sale" in wanted:
        click_ids = customer_pool(base, demo["links"]["instant"])
    if "bare-sale" in wanted:
        plans["bare-sale"] = sale_plan(f"{base}/bench/bare-sale", click_ids, {})
        bare_sale = {"transaction_id": f"check-{secrets.token_hex(8)}", "amount_cents": 4900, "click_id": click_ids[0]}
        if expect_200("bare-sale", plans["bare-sale"]["url"], bare_sale).get("commission_id") is None:
            fail("bare-sale: the checked sale created no commission")
    if "sale" in wanted:
        url = f"{base}/api/v1/track/sale"
        auth = {"Authorization": f"Bearer {demo['programs']['instant']['api_key']}"}
        first_sale = {
            "transaction_id": f"check-{secrets.token_hex(8)}",
            "amount_cents": 4900,
            "click_id": click_ids[0],
        }
        if expect_200("sale", url, first_sale, auth).get("commission_id") is None:
            fail("sale: the checked sale created no commission, so the benchmark would not measure commissions")
        plans["sale"] = sale_plan(url, click_ids, auth)
    return plans


def sale_plan(url: str, click_ids: list[str], headers: dict[str, str]) -> dict:
    plan: dict = {"url": url, "script": "sale.lua", "headers": [f"{k}: {v}" for k, v in headers.items()]}

    def sale_args() -> list[str]:
        # A fresh prefix per wrk run keeps transaction ids unique across warm-up and measured runs; the
        # last one names the measured run's sales for the commission count.
        plan["transaction_prefix"] = secrets.token_hex(6)
        return [plan["transaction_prefix"], str(WRK_THREADS), *click_ids]

    plan["script_args"] = sale_args
    return plan


def sale_commissions(env: dict[str, str], transaction_prefix: str, settle_seconds: float = 5.0) -> dict[str, int]:
    """How many of the measured run's sales were stored, and how many of them created a commission. wrk stops
    with requests still in flight, whose sale may be stored before its commission: the count is read again
    until it stops changing."""
    query = (
        "SELECT count(s.id), count(c.id) FROM tracking_saleevent s "
        "LEFT JOIN commissions_commission c ON c.sale_id = s.id WHERE s.processor_event_id LIKE %s"
    )
    deadline = time.monotonic() + settle_seconds
    previous = None
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        while True:
            counted = conn.execute(query, [f"{transaction_prefix}-%"]).fetchone()
            if counted == previous or time.monotonic() > deadline:
                break
            previous = counted
            time.sleep(0.5)
    assert counted is not None  # an aggregate without GROUP BY always returns one row
    sales, with_commission = counted
    return {"sales": sales, "with_commission": with_commission}


def measure(wrk: str, plan: dict, config: dict) -> dict:
    """One unmeasured warm-up run (imports, connections, caches), then the measured one."""

    def once(duration: int) -> dict:
        args = plan["script_args"]() if "script_args" in plan else None
        return run_wrk(
            wrk,
            plan["url"],
            seconds=duration,
            connections=config["connections"],
            script=plan.get("script"),
            script_args=args,
            headers=plan.get("headers"),
        )

    if config["warmup"]:
        once(config["warmup"])
    return once(config["seconds"])


# --- Report -------------------------------------------------------------------------------------


def has_errors(result: dict) -> bool:
    return result["non_2xx"] > 0 or sum(result["socket_errors"].values()) > 0


def ratio_target(results: dict[str, dict], name: str, baseline: str, minimum: float) -> dict | None:
    """`name`'s requests/s over `baseline`'s in the same run, as a target; None when either was not driven."""
    if name not in results or baseline not in results:
        return None
    ratio = results[name]["requests_per_sec"] / results[baseline]["requests_per_sec"]
    clean = not has_errors(results[name]) and not has_errors(results[baseline])
    return {
        "target": f"{name}/{baseline} >= {minimum}",
        "value": round(ratio, 4),
        "passed": clean and ratio >= minimum,
        "note": "" if clean else "run had errors",
    }


def evaluate(results: dict[str, dict]) -> tuple[dict[str, float], list[dict]]:
    ratios: dict[str, float] = {}
    targets: list[dict] = []
    pairs = [(name, "trivial", minimum) for name, minimum in MIN_RATIO.items()]
    pairs += [(name, f"bare-{name}", minimum) for name, minimum in MIN_BARE_RATIO.items()]
    for name, baseline, minimum in pairs:
        target = ratio_target(results, name, baseline, minimum)
        if target is not None:
            ratios[f"{name}/{baseline}"] = target["value"]
            targets.append(target)
    if "sale" in results and "commissions" in results["sale"]:
        counted = results["sale"]["commissions"]
        targets.append(
            {
                "target": "every sale created a commission",
                "value": f"{counted['with_commission']}/{counted['sales']}",
                "passed": counted["sales"] > 0 and counted["with_commission"] == counted["sales"],
                "note": "",
            }
        )
    for name in MIN_RATIO:
        if name not in results:
            continue
        p99 = results[name]["p99_ms"]
        clean = not has_errors(results[name])
        targets.append(
            {
                "target": f"{name} p99 < {MAX_P99_MS:g} ms",
                "value": p99,
                "passed": clean and p99 < MAX_P99_MS,
                "note": "" if clean else "run had errors",
            }
        )
    return ratios, targets


# The request log may take at most this share of a click's time in a worker (issue: click throughput within 5%).
MAX_REQUEST_LOG_SHARE = 0.05


def request_log_targets(results: dict[str, dict], log_cost_us: float, config: dict) -> list[dict]:
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
            "note": "",
        }
    ]


def print_report(results: dict[str, dict], ratios: dict[str, float], targets: list[dict], config: dict) -> None:
    print()
    server = f"{config['workers']} workers" + (f" x {config['threads']} threads" if config["threads"] else " (sync)")
    print(
        f"{config['connections']} connections, {config['seconds']} s each, gunicorn {server}, "
        f"load average before {config['load_before']}"
    )
    columns = ("req/s", "p50 ms", "p99 ms", "requests", "non-2xx", "sock err")
    print(f"{'endpoint':<12}" + "".join(f"{c:>10}" for c in columns))
    for name, r in results.items():
        flag = "  <-- ERRORS" if has_errors(r) else ""
        print(
            f"{name:<12}{r['requests_per_sec']:>10.1f}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}"
            f"{r['requests']:>10}{r['non_2xx']:>10}{sum(r['socket_errors'].values()):>10}{flag}"
        )
    if ratios:
        print()
    for ratio_name, value in ratios.items():
        print(f"{ratio_name:<18}{value:.3f}")
    for t in targets:
        note = f"  ({t['note']})" if t["note"] else ""
        print(f"{'PASS' if t['passed'] else 'FAIL'}  {t['target']:<32} measured {t['value']}{note}")
    errored = [name for name, r in results.items() if has_errors(r)]
    if errored:
        print(
            f"\nWARNING: responses other than 2xx/3xx or socket errors in: {', '.join(errored)} "
            f"(wrk output in bench/results/latest.json)"
        )


def git_revision() -> dict:
    def git(*args: str) -> str:
        # Optional locks off: a status check must not take the index lock from someone committing.
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, env=env)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(dirty)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=ENDPOINTS, default=ENDPOINTS, help="endpoints to drive")
    options = parser.parse_args()
    wanted = [name for name in ENDPOINTS if name in options.only]
    config: dict[str, Any] = {
        "seconds": env_int("BENCH_SECONDS", 15),
        "warmup": env_int("BENCH_WARMUP", 2, minimum=0),
        "connections": env_int("BENCH_CONNECTIONS", 32),
        "workers": env_int("BENCH_WORKERS", 2),
        "threads": env_int("BENCH_THREADS", 0) or None,
        "wrk_threads": WRK_THREADS,
    }
    if config["connections"] < WRK_THREADS:
        fail(f"BENCH_CONNECTIONS must be at least {WRK_THREADS}")
    # Turn SIGTERM and SIGHUP into SystemExit so the finally blocks stop gunicorn.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))

    with exclusive_run():
        bench(config, wanted)


@contextmanager
def exclusive_run():
    """A second run at once would drop the first one's database under its server and share its cores."""
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "bench.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fail(f"another bench run is in progress (it owns the {DB_NAME} database); wait for it to end")
        yield


def bench(config: dict, wanted: list[str]) -> None:
    # wrk and gunicorn share the machine's cores: anything else running skews every figure.
    config["load_before"] = round(os.getloadavg()[0], 2)
    if config["load_before"] > BUSY_LOAD:
        print(f"bench: warning: load average {config['load_before']}; other work will skew the figures")
    wrk = ensure_wrk()
    env = server_env()
    print(f"bench: fresh database {DB_NAME}, migrate, demo data", flush=True)
    recreate_database()
    manage(env, "migrate", "--noinput")
    demo = json.loads(manage(env, "demo", "--json"))

    results: dict[str, dict] = {}
    with gunicorn(env, workers=config["workers"], threads=config["threads"]) as base:
        plans = endpoint_plans(base, demo, wanted)
        for name, plan in plans.items():
            print(f"bench: {name} ({config['seconds']} s)", flush=True)
            results[name] = measure(wrk, plan, config)
            if "transaction_prefix" in plan:
                results[name]["commissions"] = sale_commissions(env, plan["transaction_prefix"])

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
