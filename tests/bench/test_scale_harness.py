"""`make bench-scale` (bench/scale.py) at tiny sizes, into a database of its own: it loads the events, runs the
rollups, times every read (each answered 200) and prints the table and the report."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
SIZES = (2_000, 6_000)
READS = (
    "overview",
    "performance (30 days)",
    "partners",
    "commissions",
    "status",
    "readiness",
    "events page 1",
    "partner programs",
    "partner links",
    "partner performance (30 days)",
    "partner commissions page 1",
    "partner commissions deep page",
    "partner balance",
)


def test_the_harness_loads_both_sizes_and_times_every_read(tmp_path):
    url = urlsplit(os.environ["DATABASE_URL"])
    server = f"{url.scheme}://{url.netloc}"
    # Named after this run's database, so parallel runs on other databases never share it.
    database = f"{url.path.lstrip('/')}_bench_scale"
    output = tmp_path / "scale.json"
    env = {
        **os.environ,
        "BENCH_SCALE_SIZES": ",".join(map(str, SIZES)),
        "BENCH_SCALE_DB": database,
        "BENCH_SCALE_SERVER": server,
        "BENCH_SCALE_OUTPUT": str(output),
    }
    try:
        done = subprocess.run(
            [sys.executable, "bench/scale.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        report = json.loads(output.read_text())
        with psycopg.connect(f"{server}/{database}") as conn:
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM tracking_clickevent WHERE NOT is_test AND program_id = %(main)s),"
                " (SELECT count(*) FROM tracking_leadevent WHERE program_id = %(main)s),"
                " (SELECT count(*) FROM tracking_saleevent WHERE NOT is_test AND program_id = %(main)s),"
                " (SELECT count(*) FROM tracking_clickevent WHERE program_id = %(other)s)",
                {"main": report["program_id"], "other": report["other_program_id"]},
            ).fetchone()
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))

    # 85% clicks, 10% leads, 5% sales of the larger size; the other program has events of its own.
    assert counts is not None and counts[:3] == (5_100, 600, 300) and counts[3] > 0
    header = next(line for line in done.stdout.splitlines() if line.startswith("read (median ms)"))
    assert header.split()[3:6] == ["2k", "6k", "growth"]
    for name in READS:
        assert any(line.startswith(name) for line in done.stdout.splitlines()), name
        assert f"{name}: flat" in done.stdout or f"{name}: NOT flat" in done.stdout
    assert [step["events"] for step in report["steps"]] == list(SIZES)
    for step in report["steps"]:
        assert set(step["reads"]) == set(READS)
        assert all(read["status"] == 200 and read["median_ms"] > 0 for read in step["reads"].values())
        assert step["seconds"]["load_s"] > 0
        assert step["performance_totals"]["match"], step["performance_totals"]
    assert set(report["verdicts"]) == set(READS)
