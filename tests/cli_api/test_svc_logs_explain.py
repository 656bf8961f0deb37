"""`svc logs` and `svc explain` end to end against a live test server (Typer's CliRunner in-process), with the
program key from --api-key or SVC_API_KEY."""

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from commissions.services import commission_hold
from svc_cli import client as svc_client
from svc_cli import main as svc_main
from svc_cli.main import app
from tests.factories import CommissionFactory, CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(live_server, settings) -> str:
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


@pytest.fixture
def svc(server, tmp_path: Path):
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None):
        environment = {
            "SVC_CONFIG_DIR": str(tmp_path / "svc-config"),
            "SVC_BASE_URL": server,
            "SVC_API_KEY": None,
            "COLUMNS": "250",
            **(env or {}),
        }
        return runner.invoke(app, list(args), env=environment, catch_exceptions=False)

    return invoke


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def refused_sale(server: str, program, transaction_id: str) -> httpx.Response:
    """A sale whose customer_key never came with a lead: refused, and logged."""
    response = httpx.post(
        f"{server}/api/v1/track/sale",
        json={"transaction_id": transaction_id, "amount_cents": 4900, "currency": "USD", "customer_key": "ghost"},
        headers={"Authorization": f"Bearer {program.raw_api_key}"},
    )
    assert response.status_code >= 400
    return response


def test_logs_shows_the_refused_call_and_filters_by_status(svc, server, program):
    sent = refused_sale(server, program, "txn_log_1")
    result = svc("logs", "--api-key", program.raw_api_key)
    assert result.exit_code == 0, result.output
    assert "POST track-sale" in result.stdout and sent.json()["error"]["message"] in result.stdout
    assert program.api_token_masked in result.stdout and program.raw_api_key not in result.stdout

    result = svc("logs", "--status", "2xx", "--route", "track-sale", env={"SVC_API_KEY": program.raw_api_key})
    assert result.exit_code == 0 and "No calls logged with these filters." in result.stdout

    body = json.loads(svc("logs", "--json", "--status", "4xx", "--limit", "5", "--api-key", program.raw_api_key).stdout)
    assert [row["route"] for row in body["data"]] == ["track-sale"]
    assert body["data"][0]["excerpt"]["transaction_id"] == "txn_log_1"


def test_logs_follow_prints_new_calls_until_interrupted(svc, server, program, monkeypatch):
    refused_sale(server, program, "txn_before")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 1:
            refused_sale(server, program, "txn_during")  # arrives while following
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr(svc_main, "_pause", pause)
    result = svc("logs", "--follow", "--json", "--route", "track-sale", "--api-key", program.raw_api_key)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["excerpt"]["transaction_id"] for row in rows] == ["txn_before", "txn_during"]
    assert pauses == [svc_main.FOLLOW_INTERVAL_SECONDS, svc_main.FOLLOW_INTERVAL_SECONDS]


def test_logs_follow_does_not_echo_its_own_polls(svc, server, program, monkeypatch):
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(svc_main, "_pause", pause)
    result = svc("logs", "--follow", "--json", "--api-key", program.raw_api_key)
    assert result.exit_code == 0 and result.stdout == ""


def test_explain_a_sale_in_words_and_in_json(svc, program):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
    sale = SaleFactory(customer=customer, processor_event_id="txn_1", attributed_by="customer_key")
    commission = CommissionFactory(sale=sale)

    result = svc("explain", "txn_1", "--api-key", program.raw_api_key)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Sale txn_1: commission" in out and "matched customer_key" in out
    assert f"Click {customer.click_id}" in out and "the window is" in out
    assert "arithmetic:" in out and f"Commission #{commission.pk}" in out

    body = json.loads(svc("explain", "txn_1", "--json", env={"SVC_API_KEY": program.raw_api_key}).stdout)
    assert body["data"]["kind"] == "sale" and body["data"]["commission"]["id"] == commission.pk

    result = svc("explain", "--customer-key", "user_1", "--api-key", program.raw_api_key)
    assert result.exit_code == 0 and f"Customer {customer.click_id}, customer_key user_1" in result.stdout
    assert "sale txn_1" in result.stdout


def test_explain_an_unknown_sale_exits_1_with_the_reason(svc, program):
    result = svc("explain", "nope", "--api-key", program.raw_api_key)
    assert result.exit_code == svc_client.API_ERROR == 1
    assert "Sale not found for transaction_id" in result.stderr and "HTTP 404" in result.stderr


def test_explain_needs_exactly_one_selector_and_a_key(svc, program):
    for args in ((), ("txn_1", "--click-id", "c")):
        result = svc("explain", *args, "--api-key", program.raw_api_key)
        assert result.exit_code == svc_client.USAGE == 2
        assert "Give exactly one of a transaction id, --click-id or --customer-key." in result.stderr
    for command in (("logs",), ("explain", "txn_1")):
        result = svc(*command)
        assert result.exit_code == 2
        assert "Missing program API key: pass --api-key or set SVC_API_KEY." in result.stderr


def test_logs_follow_in_words_prints_the_header_once(svc, server, program, monkeypatch):
    refused_sale(server, program, "txn_a")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 1:
            refused_sale(server, program, "txn_b")
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr(svc_main, "_pause", pause)
    result = svc("logs", "-f", "--route", "track-sale", "--api-key", program.raw_api_key)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Time (UTC)") == 1 and result.stdout.count("POST track-sale") == 2


def test_explain_names_the_fraud_rules(svc, program):
    link = ReferralLinkFactory(program=program)
    ClickEvent.objects.create(program=program, link=link, partner=link.partner, click_id="cust_bot", traffic="bot")
    sale = SaleFactory(customer=CustomerFactory(link=link), processor_event_id="txn_1", attributed_by="click_id")
    commission = CommissionFactory(sale=sale)
    commission_hold(commission_id=commission.pk, reason="checking the buyer", actor="user:alice")

    result = svc("explain", "--click-id", "cust_bot", "--api-key", program.raw_api_key)
    assert result.exit_code == 0, result.output
    assert "Click cust_bot: bot" in result.stdout and "cannot attribute" in result.stdout
    assert " ! bot: a crawler's user agent; recorded, never counted, never attributed (never_attributed)" in (
        result.stdout
    )

    result = svc("explain", "txn_1", "--api-key", program.raw_api_key)
    assert "Fraud rules: On hold by the owner: checking the buyer." in result.stdout
    assert "held by user:alice" in result.stdout
