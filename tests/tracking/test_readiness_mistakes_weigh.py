"""Mistakes weigh in readiness (issue 25): the verdict and the checklist count them, worst first, in every surface
(GET /api/v1/programs/me/readiness, the dashboard's readiness route, `svc status`); each mistake links to its section
of docs/readiness.md, served at /docs/readiness; readiness says how many clicks were set aside and why."""

import re
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from typer.testing import CliRunner

from programs.models import Role
from svc_cli.client import Api
from svc_cli.main import app
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer
from tests.tracking.sales import post_sale
from tests.tracking.test_readiness import ready_program

pytestmark = pytest.mark.django_db

READINESS = "/api/v1/programs/me/readiness"
DIAGNOSIS = Path(__file__).resolve().parents[2] / "insight" / "diagnosis"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "readiness.md"
GOOGLEBOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


@pytest.fixture
def program():
    return ProgramFactory(domain="shop.example.com")


def readiness(client, program) -> dict[str, Any]:
    response = client.get(READINESS, **bearer(program.raw_api_key))
    assert response.status_code == 200, response.content
    return response.json()


def check(verdict: dict[str, Any], check_id: str) -> dict[str, Any] | None:
    return next((item for item in verdict["checks"] if item["id"] == check_id), None)


def duplicate_sale_twice(client, program) -> None:
    for status in (200, 409):
        sent = post_sale(client, program, transaction_id="order_1", amount_cents=1000, customer_key="u1")
        assert sent.status_code == status


def unsupported_currency_sale(client, program) -> None:
    sent = post_sale(client, program, transaction_id="order_x", amount_cents=1000, customer_key="u1", currency="XYZ")
    assert sent.status_code == 422


class TestTheVerdict:
    def test_a_working_program_with_a_recorded_mistake_warns_in_its_checklist(self, api_client, program):
        ready_program(program)
        assert readiness(api_client, program)["status"] == "ready"
        duplicate_sale_twice(api_client, program)

        verdict = readiness(api_client, program)

        mistakes = check(verdict, "integration_mistakes")
        assert mistakes is not None and mistakes["status"] == "warn"
        assert mistakes["title"] == "Integration mistakes"
        assert mistakes["detail"].startswith("1 mistake(s) in the last 7 days of calls, worst first: Sales refused")
        assert (verdict["ready"], verdict["status"], verdict["mistakes_count"]) == (True, "ready_with_warnings", 1)
        assert {item["status"] for item in verdict["checks"]} == {"pass", "warn"}
        assert verdict["mistakes"][0]["severity"] == "warn"

    def test_a_mistake_that_lost_calls_fails_the_checklist_and_the_verdict(self, api_client, program):
        ready_program(program)
        unsupported_currency_sale(api_client, program)

        verdict = readiness(api_client, program)

        assert check(verdict, "integration_mistakes")["status"] == "fail"
        assert (verdict["ready"], verdict["status"]) == (False, "incomplete")
        assert verdict["mistakes"][0]["severity"] == "fail"
        assert verdict["next_step"] == verdict["mistakes"][0]["fix"]

    def test_mistakes_come_worst_first_in_the_list_the_check_and_the_next_step(self, api_client, program):
        ready_program(program)
        unsupported_currency_sale(api_client, program)  # lost a sale: worst, though older
        duplicate_sale_twice(api_client, program)  # recorded once: a warning, more recent

        verdict = readiness(api_client, program)

        assert [m["code"] for m in verdict["mistakes"]] == ["unsupported_currency", "duplicate_transaction"]
        detail = check(verdict, "integration_mistakes")["detail"]
        assert detail.startswith(
            "2 mistake(s) in the last 7 days of calls, worst first: Sales refused for an unsupported"
        )
        assert detail.index("unsupported currency") < detail.index("as duplicates")
        assert check(verdict, "integration_mistakes")["next_step"] == verdict["mistakes"][0]["fix"]
        assert verdict["next_step"].startswith("Send currency as one of")

    def test_without_mistakes_there_is_no_mistakes_check(self, api_client, program):
        ready_program(program)
        verdict = readiness(api_client, program)
        assert check(verdict, "integration_mistakes") is None
        assert (verdict["mistakes"], verdict["mistakes_count"]) == ([], 0)

    def test_the_dashboard_route_gives_the_same_checklist(self, api_client, program):
        ready_program(program)
        unsupported_currency_sale(api_client, program)
        owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
        api_client.force_login(owner)
        data = api_client.get(f"/api/tracking/readiness/{program.pk}").json()["data"]
        assert check(data, "integration_mistakes")["status"] == "fail"
        assert data["status"] == "incomplete" and data["mistakes_count"] == 1

    def test_svc_status_lists_the_mistakes_check_and_the_verdict(self, api_client, program, tmp_path):
        ready_program(program)
        unsupported_currency_sale(api_client, program)
        duplicate_sale_twice(api_client, program)
        body = api_client.get("/api/v1/cli/status", **bearer(program.raw_api_key)).json()
        environment = {"SVC_CONFIG_DIR": str(tmp_path), "SVC_API_KEY": program.raw_api_key, "COLUMNS": "250"}
        with mock.patch.object(Api, "call", return_value=body):
            result = CliRunner().invoke(app, ["status"], env=environment, catch_exceptions=False)
        assert result.exit_code == 0
        assert "Integration mistakes" in result.stdout and "2 mistake(s)" in result.stdout
        assert "incomplete" in result.stdout
        lines = [line for line in result.stdout.splitlines() if line.startswith("Mistake ")]
        assert [line.split(":")[0] for line in lines] == [
            "Mistake unsupported_currency",
            "Mistake duplicate_transaction",
        ]


class TestDocs:
    def codes(self) -> set[str]:
        return {code for path in DIAGNOSIS.glob("*.py") for code in re.findall(r'code="([a-z_]+)"', path.read_text())}

    def test_every_mistake_code_has_its_section_in_docs_readiness(self):
        codes = self.codes()
        assert len(codes) >= 10
        text = DOCS.read_text()
        for code in codes:
            assert f"### `{code}`" in text, code

    def test_the_service_serves_the_docs_with_an_anchor_per_code(self, client):
        response = client.get("/docs/readiness")
        assert response.status_code == 200
        page = response.content.decode()
        for code in self.codes():
            assert f'id="{code}"' in page, code
        assert 'id="the-verdict"' in page

    def test_every_mistake_named_links_to_its_section(self, api_client, program):
        ready_program(program)
        unsupported_currency_sale(api_client, program)
        duplicate_sale_twice(api_client, program)
        for mistake in readiness(api_client, program)["mistakes"]:
            assert mistake["docs"] == f"/docs/readiness#{mistake['code']}"


class TestClicksSetAside:
    def click(self, client, program, link, **fields):
        body = {"affiliate_url": f"https://shop.example.com/?aff={link.short_link}", "program_id": program.pk}
        return client.post("/api/v1/track/click", {**body, **fields}, format="json")

    def test_eight_clicks_from_one_machine_say_seven_were_set_aside_as_duplicates(self, api_client, program):
        link = ReferralLinkFactory(program=program)
        for _ in range(8):
            assert self.click(api_client, program, link).status_code == 200

        verdict = readiness(api_client, program)

        assert verdict["counts"]["clicks"] == 1
        assert verdict["counts"]["clicks_set_aside"] == 7
        assert verdict["clicks_set_aside"] == {
            "days": 7,
            "total": 7,
            "by_reason": {"duplicate": 7, "bot": 0, "prefetch": 0},
        }
        set_aside = check(verdict, "clicks_set_aside")
        assert set_aside["status"] == "pass"
        assert set_aside["detail"] == (
            "7 live click(s) of the last 7 days set aside, not counted as clicks: 7 duplicate (the same visitor "
            "clicked the same link again within the duplicate_click window: each visitor counts once, and its click "
            "id still attributes)"
        )
        assert "another browser or device" in set_aside["next_step"]

    def test_each_reason_is_counted_apart(self, api_client, program):
        link = ReferralLinkFactory(program=program)
        for _ in range(2):
            self.click(api_client, program, link)
        self.click(api_client, program, link, user_agent=GOOGLEBOT_UA)
        verdict = readiness(api_client, program)
        assert verdict["clicks_set_aside"]["by_reason"] == {"duplicate": 1, "bot": 1, "prefetch": 0}
        assert "1 duplicate (" in check(verdict, "clicks_set_aside")["detail"]
        assert "1 bot (a crawler's" in check(verdict, "clicks_set_aside")["detail"]

    def test_nothing_set_aside_says_nothing(self, api_client, program):
        link = ReferralLinkFactory(program=program)
        self.click(api_client, program, link)
        verdict = readiness(api_client, program)
        assert check(verdict, "clicks_set_aside") is None
        assert verdict["clicks_set_aside"]["total"] == 0 and verdict["counts"]["clicks_set_aside"] == 0
