"""`svc` shows money and times the way the dashboard does: minor units in major units with the currency's own
decimals ("9.80 USD", "5,000 VND"; svc_cli.money keeps its own copy of core.currency's exponents), times as
"2026-01-31 14:05:09 UTC"; `svc explain` says what a commission still pays; `svc logs --follow --limit N` starts
with the newest N calls even when polls of `svc logs` are the newest rows. Against a live test server."""

import json
import re
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.utils import timezone
from typer.testing import CliRunner

from commissions.services import refund_apply
from core.currency import MINOR_UNIT_EXPONENTS, Currency
from programs.models import ApiCall, ProgramKey
from programs.services import program_key_regenerate
from svc_cli import main as svc_main
from svc_cli import money as cli_money
from svc_cli.main import app
from tests.factories import CommissionFactory, CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory

UTC_TIME = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC"


def test_the_clis_exponents_are_core_currencys():
    assert cli_money.MINOR_UNIT_EXPONENTS == {str(code): places for code, places in MINOR_UNIT_EXPONENTS.items()}
    assert set(Currency.values) <= set(cli_money.MINOR_UNIT_EXPONENTS)


@pytest.mark.parametrize(
    ("minor", "currency", "shown"),
    [
        (980, "USD", "9.80 USD"),
        (5000, "VND", "5,000 VND"),
        (980, "JPY", "980 JPY"),
        (-980, "USD", "-9.80 USD"),
        (123456789012345678, "EUR", "1,234,567,890,123,456.78 EUR"),
        (12345, None, "123.45"),
        ("n/a", "USD", "n/a USD"),  # not an integer: as it came
    ],
)
def test_cli_money(minor, currency, shown):
    assert cli_money.money(minor, currency) == shown


@pytest.fixture
def server(live_server, settings) -> str:
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


@pytest.fixture
def svc(server, tmp_path: Path):
    runner = CliRunner()

    def invoke(*args: str):
        environment = {"SVC_CONFIG_DIR": str(tmp_path / "svc-config"), "SVC_BASE_URL": server, "COLUMNS": "250"}
        return runner.invoke(app, list(args), env=environment, catch_exceptions=False)

    return invoke


@pytest.mark.django_db(transaction=True)
class TestExplain:
    def test_a_pending_commission_partly_refunded_still_pays_nothing(self, svc):
        program = ProgramFactory()
        customer = CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
        sale = SaleFactory(
            customer=customer, processor_event_id="txn_1", attributed_by="customer_key", amount_cents=9800
        )
        commission = CommissionFactory(sale=sale)
        refund_apply(sale=sale, amount=4900, refund_id="re_1", reason="")

        result = svc("explain", "txn_1", "--api-key", program.raw_api_key)

        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "Amount 98.00 USD, payment, on " in out and re.search(f"Amount 98.00 USD, payment, on {UTC_TIME}", out)
        assert "arithmetic: 20% of 98.00 USD = 19.60 USD" in out
        assert (
            f"Commission #{commission.pk}: 19.60 USD, refunded; still pays 0.00 USD: a refund cancels a pending "
            "commission whole"
        ) in out
        assert "Refunds: 49.00 USD of 98.00 USD refunded" in out
        assert re.search(rf"Click {re.escape(customer.click_id)} on \S+ at {UTC_TIME}", out)

    def test_a_credited_commissions_ledger_in_money(self, svc, server):
        program = ProgramFactory(hold_days=0)
        customer = CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
        response = httpx.post(
            f"{server}/api/v1/track/sale",
            json={"transaction_id": "txn_v", "amount_cents": 250000, "currency": "VND", "customer_key": "user_1"},
            headers={"Authorization": f"Bearer {program.raw_api_key}"},
        )
        assert response.status_code == 200, response.text

        result = svc("explain", "txn_v", "--api-key", program.raw_api_key)

        assert result.exit_code == 0, result.output
        assert "still pays 50,000 VND: credited" in result.stdout
        assert re.search(r"credit\s+│\s+50,000 VND\s+│\s+50,000 VND", result.stdout), result.stdout

        result = svc("explain", "--customer-key", "user_1", "--api-key", program.raw_api_key)
        assert f"Customer {customer.click_id}" in result.stdout
        assert "sale txn_v 250,000 VND, attributed by customer_key, commission #" in result.stdout
        assert "50,000 VND approved" in result.stdout


@pytest.mark.django_db(transaction=True)
class TestStatusTimes:
    def test_a_mistakes_last_time_reads_like_the_dashboards(self, svc, server):
        program = ProgramFactory()
        old = program.raw_api_key
        current = program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
        refused = httpx.post(
            f"{server}/api/v1/track/sale",
            json={"transaction_id": "t1", "amount_cents": 1000, "customer_key": "u1"},
            headers={"Authorization": f"Bearer {old}"},
        )
        assert refused.status_code == 401

        result = svc("status", "--api-key", current)

        assert result.exit_code == 0, result.output
        assert re.search(rf"Mistake retired_key_used: .* \(1x, last {UTC_TIME}\)", result.stdout), result.stdout


@pytest.mark.django_db(transaction=True)
class TestLogsFollow:
    def test_limit_1_starts_with_the_latest_call_past_the_polls_of_svc_logs(self, svc, monkeypatch):
        program = ProgramFactory()
        now = timezone.now()
        sale = ApiCall.objects.create(
            program=program, created_at=now - timedelta(minutes=5), method="POST", route="track-sale", status=401
        )
        for minutes in (3, 2, 1):  # an earlier `svc logs --follow` polled three times since
            ApiCall.objects.create(
                program=program, created_at=now - timedelta(minutes=minutes), method="GET", route="cli-logs", status=200
            )

        def pause(seconds: float) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(svc_main, "_pause", pause)
        result = svc("logs", "--follow", "--limit", "1", "--json", "--api-key", program.raw_api_key)

        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert [(row["id"], row["route"]) for row in rows] == [(sale.pk, "track-sale")]

        result = svc("logs", "--follow", "--limit", "1", "--api-key", program.raw_api_key)
        assert result.stdout.count("POST track-sale") == 1 and "cli-logs" not in result.stdout
        assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\s+│\s+POST track-sale", result.stdout), result.stdout


@pytest.mark.django_db(transaction=True)
class TestLogsKeys:
    def test_a_call_with_a_replaced_key_says_so(self, svc, server):
        program = ProgramFactory()
        old = program.raw_api_key
        current = program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
        sale = {"transaction_id": "t1", "amount_cents": 1000, "customer_key": "u1"}
        refused = httpx.post(f"{server}/api/v1/track/sale", json=sale, headers={"Authorization": f"Bearer {old}"})
        assert refused.status_code == 401

        result = svc("logs", "--route", "track-sale", "--api-key", current)

        assert result.exit_code == 0, result.output
        assert key_cells(result.stdout)["POST track-sale"].startswith("replaced key")

    def test_the_services_name_for_it_or_the_excerpts_note(self, svc):
        program = ProgramFactory()
        at = timezone.now() - timedelta(minutes=1)
        for route, fields in (
            ("track-lead", {"key_masked": "replaced key ending …1234", "key_mode": "live"}),
            ("track-sale", {"excerpt": {"retired_key": True, "replaced_on": "2026-11-20"}}),
            ("track-click", {}),
        ):
            ApiCall.objects.create(program=program, created_at=at, method="POST", route=route, status=401, **fields)

        result = svc("logs", "--api-key", program.raw_api_key)

        assert result.exit_code == 0, result.output
        assert key_cells(result.stdout) == {
            "POST track-lead": "replaced key ending …1234 live",
            "POST track-sale": "replaced key (replaced on 2026-11-20)",
            "POST track-click": "–",
        }


def key_cells(table: str) -> dict[str, str]:
    """The Key cell of each row of `svc logs`' table (Time, Call, Status, Error, Key, ms, Request id), by its Call."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table.splitlines() if "│" in line]
    return {cells[1]: cells[4] for cells in rows if len(cells) == 7 and cells[1].startswith(("GET", "POST"))}
