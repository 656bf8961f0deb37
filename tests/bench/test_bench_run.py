"""`make bench` (bench/run.py) without a server: how it reads wrk, which runs it refuses, how it interleaves and
summarises rounds, and which ratios and targets it reports."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bench = load_harness()

WRK_OUTPUT = """Running 5s test @ http://127.0.0.1:4000/api/v1/track/click
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    60.12ms   20.10ms 210.00ms   70.00%
    Req/Sec   266.10     40.00   350.00     70.00%
  Latency Distribution
     50%   55.20ms
     75%   70.00ms
     90%   90.00ms
     99%    1.20s
  2661 requests in 5.01s, 1.00MB read
{errors}Requests/sec:    531.14
Transfer/sec:    204.00KB
"""


def wrk_result(requests: int = 1000, non_2xx: int = 0, timeouts: int = 0) -> dict[str, Any]:
    sockets = {"connect": 0, "read": 0, "write": 0, "timeout": timeouts}
    return {"requests": requests, "requests_per_sec": 200.0, "non_2xx": non_2xx, "socket_errors": sockets}


def click_rows(rows: int = 1000, **overrides: int) -> dict[str, int]:
    return {"rows": rows, "customers": rows, "existing": 0, "new_customers": rows, "not_human": 0, **overrides}


# --- Reading wrk ---------------------------------------------------------------------------------


def test_parse_wrk_reads_throughput_percentiles_and_no_errors():
    parsed = bench.parse_wrk(WRK_OUTPUT.format(errors=""))
    assert (parsed["requests_per_sec"], parsed["requests"]) == (531.14, 2661)
    assert (parsed["p50_ms"], parsed["p99_ms"]) == (55.2, 1200.0)
    assert parsed["non_2xx"] == 0 and sum(parsed["socket_errors"].values()) == 0


def test_parse_wrk_reads_non_2xx_answers_and_socket_errors():
    errors = "  Socket errors: connect 0, read 2, write 0, timeout 3\n  Non-2xx or 3xx responses: 7\n"
    parsed = bench.parse_wrk(WRK_OUTPUT.format(errors=errors))
    assert parsed["non_2xx"] == 7
    assert parsed["socket_errors"] == {"connect": 0, "read": 2, "write": 0, "timeout": 3}


def test_parse_wrk_refuses_output_without_a_latency_distribution():
    with pytest.raises(SystemExit, match="no latency distribution"):
        bench.parse_wrk("Requests/sec: 10\n")


# --- Branch checks -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["click", "bare-click", "click-ua", "bare-click-ua", "click-hot"])
def test_a_new_visitor_run_with_one_new_customer_per_request_passes(name):
    assert bench.branch_problems(name, wrk_result(1000), click_rows(1010), connections=32) == []


def test_any_answer_other_than_2xx_or_socket_error_is_refused():
    problems = bench.branch_problems("click", wrk_result(1000, non_2xx=1, timeouts=2), click_rows(), connections=32)
    assert problems[0] == "1 answers other than 2xx" and problems[1].startswith("2 socket errors")
    assert bench.branch_problems("trivial", wrk_result(non_2xx=3), None, connections=32) == ["3 answers other than 2xx"]


def test_fewer_rows_than_requests_or_more_than_requests_plus_connections_is_refused():
    fewer = bench.branch_problems("click", wrk_result(1000), click_rows(999), connections=32)
    assert fewer == ["999 rows for 1000 requests answered: some answers wrote nothing"]
    more = bench.branch_problems("bare-click", wrk_result(1000), click_rows(1033), connections=32)
    assert more == ["1033 rows for 1000 requests and 32 connections: rows of other requests"]
    assert bench.branch_problems("click", wrk_result(1000), click_rows(1032), connections=32) == []


def test_a_new_visitor_run_that_reused_customers_is_refused():
    """The duplicate path (the same visitor again) reuses nothing but counts nothing either; existing_click_id
    reuses the customer: both are another branch than a new visitor's."""
    reused = bench.branch_problems("click", wrk_result(), click_rows(customers=900), connections=32)
    assert reused == [
        "900 distinct customers (0 of them from before the run) for 1000 clicks: not one new customer per request"
    ]
    old = bench.branch_problems("click-hot", wrk_result(), click_rows(existing=5), connections=32)
    assert len(old) == 1 and "5 of them from before the run" in old[0]
    duplicates = bench.branch_problems("bare-click-ua", wrk_result(), click_rows(not_human=4), connections=32)
    assert duplicates == ["4 of 1000 clicks not counted as human (traffic other than '')"]


@pytest.mark.parametrize(("returning", "refused"), [(50, False), (100, False), (150, False), (49, True), (151, True)])
def test_the_repeat_run_needs_between_5_and_15_percent_returning_visitors(returning, refused):
    rows = click_rows(1000, existing=returning, customers=1000 - returning + 20, new_customers=1000 - returning)
    problems = bench.branch_problems("click-repeat", wrk_result(1000), rows, connections=32)
    assert bool(problems) is refused
    if refused:
        assert problems[0].startswith(f"{returning} of 1000 clicks (")


def test_the_repeat_run_needs_one_new_customer_per_new_visitor():
    rows = click_rows(1000, existing=100, new_customers=880)
    problems = bench.branch_problems("click-repeat", wrk_result(1000), rows, connections=32)
    assert problems == ["880 new customers for 900 clicks of new visitors"]


def test_a_sale_without_its_commission_is_refused():
    assert bench.branch_problems("sale", wrk_result(), {"rows": 1000, "with_commission": 1000}, connections=32) == []
    problems = bench.branch_problems("bare-sale", wrk_result(), {"rows": 1000, "with_commission": 998}, connections=32)
    assert problems == ["2 of 1000 sales without a commission"]


def test_a_lead_run_must_move_one_customer_each_and_announce_it():
    good = {"rows": 1000, "customers": 1000, "at_lead": 1000, "announced": 1000}
    assert bench.branch_problems("lead", wrk_result(), good, connections=32) == []
    shared = bench.branch_problems("bare-lead", wrk_result(), {**good, "customers": 999}, connections=32)
    assert len(shared) == 1 and shared[0].startswith("1000 leads on 999 distinct customers")
    silent = bench.branch_problems("lead", wrk_result(), {**good, "announced": 990}, connections=32)
    assert silent == ["10 of 1000 leads without their lead.created event"]


def test_each_mix_drives_its_path():
    kinds = {name: bench.kind_of(name) for name in bench.MIXES}
    assert kinds == {
        "trivial": "trivial",
        "bare-click": "click",
        "click": "click",
        "bare-click-ua": "click",
        "click-ua": "click",
        "click-repeat": "click",
        "click-hot": "click",
        "bare-sale": "sale",
        "sale": "sale",
        "bare-lead": "lead",
        "lead": "lead",
        "click-light": "click",
        "sale-light": "sale",
    }
    assert set(bench.CLICK_MIXES) == {name for name, kind in kinds.items() if kind == "click"}
    assert bench.CLICK_MIXES["click-repeat"] == ("pool", "spread", 10)
    assert bench.CLICK_MIXES["click-ua"] == bench.CLICK_MIXES["bare-click-ua"] == ("unique", "spread", 0)


def test_returning_visitors_are_sent_with_visitors_luas_user_agents():
    agents = bench.lua_user_agents()
    assert len(agents) == 20 and all(agent.startswith("Mozilla/5.0 (") for agent in agents)
    visitor = bench.Returning(click_id="c1", ip="5.45.0.1", agent=3, link=7)
    assert visitor.lua() == "c1|5.45.0.1|3|7"


# --- Options, rounds and the report --------------------------------------------------------------


def test_only_takes_the_mix_names_and_keeps_the_bench_order():
    options = bench.options_parse(["--only", "lead", "bare-click-ua", "click-ua"])
    assert options.only == ["bare-click-ua", "click-ua", "lead"] and options.rounds == 1
    assert bench.options_parse([]).only == list(bench.MIXES)
    with pytest.raises(SystemExit):
        bench.options_parse(["--only", "bare-lead", "clicks"])


def test_rounds_must_be_positive_and_fit_the_visitor_addresses():
    assert bench.options_parse(["--rounds", "3"]).rounds == 3
    with pytest.raises(SystemExit):
        bench.options_parse(["--rounds", "0"])
    with pytest.raises(SystemExit):
        bench.options_parse(["--rounds", "9"])
    assert bench.options_parse(["--rounds", "9", "--only", "sale", "bare-sale"]).rounds == 9


def test_rounds_interleave_each_path_with_its_baseline():
    order = bench.rounds_order(["trivial", "bare-click", "click", "click-hot", "sale"], 2)
    assert order == ["trivial", "trivial", "bare-click", "click", "click", "bare-click", "click-hot", "click-hot"] + [
        "sale",
        "sale",
    ]


def test_the_median_of_the_rounds_is_reported():
    runs = [
        {"requests_per_sec": rate, "p50_ms": p50, "p99_ms": p99, "requests": n, "load_before": 1.0, "rows": {"rows": n}}
        for rate, p50, p99, n in ((500.0, 50.0, 90.0, 2500), (400.0, 60.0, 99.0, 2000), (450.0, 55.0, 80.0, 2250))
    ]
    summary = bench.median_result(runs)
    assert (summary["requests_per_sec"], summary["p50_ms"], summary["p99_ms"]) == (450.0, 55.0, 90.0)
    assert (summary["requests"], summary["rows"], summary["rounds"]) == (2250, 2250, [500.0, 400.0, 450.0])
    assert bench.median_result([{**runs[0], "rows": None}])["rows"] is None


def summary(rate: float, p99: float = 20.0) -> dict[str, Any]:
    return {"requests_per_sec": rate, "p99_ms": p99}


def test_evaluate_reports_the_bare_ratios_and_their_targets():
    results = {
        "trivial": summary(3000.0),
        "bare-click": summary(500.0),
        "click": summary(510.0),
        "bare-click-ua": summary(500.0),
        "click-ua": summary(440.0),
        "click-repeat": summary(400.0),
        "click-hot": summary(450.0),
        "bare-sale": summary(300.0),
        "sale": summary(250.0, p99=70.0),
        "bare-lead": summary(400.0),
        "lead": summary(300.0),
        "click-light": summary(200.0, p99=12.0),
        "sale-light": summary(150.0, p99=61.0),
    }
    ratios, targets = bench.evaluate(results)
    assert ratios == {
        "click/bare-click": 1.02,
        "click-ua/bare-click-ua": 0.88,
        "sale/bare-sale": 0.8333,
        "sale/bare-click": 0.5,
        "click/trivial": 0.17,
        "sale/trivial": 0.0833,
        "click-repeat/bare-click": 0.8,
        "click-hot/bare-click": 0.9,
        "lead/bare-lead": 0.75,
    }
    verdicts = {t["target"]: t["passed"] for t in targets}
    assert verdicts == {
        "click/bare-click >= 1.0": True,
        "click-ua/bare-click-ua >= 0.9": False,
        "sale/bare-sale >= 0.8": True,
        "sale/bare-click >= 0.7": False,
        "click/trivial >= 0.14": True,
        "sale/trivial >= 0.12": False,
        "click-light p99 < 60 ms": True,
        "sale-light p99 < 60 ms": False,
    }


def test_evaluate_names_only_the_targets_whose_mixes_ran():
    ratios, targets = bench.evaluate({"bare-sale": summary(300.0), "sale": summary(270.0)})
    assert ratios == {"sale/bare-sale": 0.9}
    assert [t["target"] for t in targets] == ["sale/bare-sale >= 0.8"]
    _, targets = bench.evaluate({"sale-light": summary(100.0, p99=30.0)})
    assert targets == [{"target": "sale-light p99 < 60 ms", "value": 30.0, "passed": True}]


def test_the_latency_mixes_send_one_request_per_wrk_thread():
    assert bench.LIGHT_CONNECTIONS == bench.WRK_THREADS
    assert [bench.Bench.light(name) for name in ("click-light", "sale-light", "click", "sale")] == [2, 2, None, None]


def test_the_request_log_target_is_a_share_of_a_clicks_worker_time():
    targets = bench.request_log_targets({"click": summary(500.0)}, 100.0, {"workers": 2})
    assert targets[0]["passed"] and targets[0]["value"] == "2.5% (100 of 4000 µs)"
    assert bench.request_log_targets({}, 100.0, {"workers": 2}) == []
