"""GET /api/agent/v1/programs/:id/performance: the dashboard's performance summary, for the programs a key may see."""

from datetime import UTC, date, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from agent_api import messages
from tests.agent_api.conftest import agent_for
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    PartnerFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
    WorkspaceFactory,
)
from tests.helpers import platform_error
from tracking.models import ClickEvent, LeadEvent
from tracking.selectors.performance import tracking_performance_get

pytestmark = pytest.mark.django_db

DAY = datetime(2025, 5, 18, 9, 0, tzinfo=UTC)


def performance_path(program_id: object) -> str:
    return f"/api/agent/v1/programs/{program_id}/performance"


@pytest.fixture
def activity(program):
    """Clicks, leads and sales of two partners over two days, one test sale and one sale outside the range."""
    for amount in (10_000, 4_000):
        link = ReferralLinkFactory.create(program=program, partner=PartnerFactory.create(workspace=program.workspace))
        for when in (DAY, DAY + timedelta(days=1)):
            customer = CustomerFactory.create(link=link)
            ClickEvent.objects.create(
                program=program, partner=link.partner, link=link, customer=customer, click_timestamp=when
            )
            LeadEvent.objects.create(
                program=program,
                customer=customer,
                partner=link.partner,
                click_id=customer.click_id,
                lead_timestamp=when,
            )
            CommissionFactory.create(sale=SaleFactory.create(customer=customer, sale_date=when, amount_cents=amount))
        SaleFactory.create(customer=CustomerFactory.create(link=link), sale_date=DAY, is_test=True, amount_cents=1)
        SaleFactory.create(customer=CustomerFactory.create(link=link), sale_date=DAY - timedelta(days=30))


RANGE = {"dateFrom": "2025-05-17", "dateTo": "2025-05-20"}


class TestScopes:
    def test_a_key_without_programs_read_gets_403_naming_the_scope(self, workspace, program):
        response = agent_for(workspace, scopes=("events:read",)).get(performance_path(program.pk))
        assert response.status_code == 403
        assert response.json() == platform_error(
            403,
            "ForbiddenError",
            messages.SCOPE_MISSING.format(scope="programs:read"),
            "missing_scope",
            {"scope": "programs:read"},
        )


class TestWhatAKeySees:
    def test_a_program_of_another_workspace_is_not_found(self, workspace, program):
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        response = agent_for(workspace).get(performance_path(foreign.pk))
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")

    def test_a_limited_key_gets_404_for_a_program_it_is_not_limited_to(self, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        agent = agent_for(workspace, programs=(program,))
        assert agent.get(performance_path(program.pk)).status_code == 200
        response = agent.get(performance_path(other.pk))
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"

    @pytest.mark.parametrize("program_id", ["abc", "0", "-1", "²", "99999999999999999999"])
    def test_a_malformed_or_unknown_id_is_404(self, agent, program_id):
        assert agent.get(performance_path(program_id)).status_code == 404

    def test_an_unknown_program_is_404_before_a_bad_range_is_looked_at(self, agent):
        response = agent.get(performance_path(999_999_999), {"dateFrom": "nope"})
        assert response.status_code == 404


@pytest.mark.usefixtures("activity")
class TestTheSummary:
    def test_it_is_the_dashboards_summary_for_the_range(self, workspace, program):
        data = agent_for(workspace).get(performance_path(program.pk), RANGE).json()["data"]
        assert data == tracking_performance_get(program=program, date_from=date(2025, 5, 17), date_to=date(2025, 5, 20))
        assert data["totals"] == {
            "clicks": 4,
            "leads": 4,
            "sales": 4,
            "revenue_cents": 28_000,
            "commission_cents": 5_600,
        }
        assert [row["sales"] for row in data["by_day"]] == [0, 2, 2, 0]

    def test_it_answers_what_the_dashboard_route_answers(self, workspace, program):
        member = MembershipFactory.create(workspace=workspace)
        browser = APIClient()
        browser.force_login(member.user)
        dashboard = browser.get(f"/api/tracking/performance/{program.pk}", RANGE)
        assert dashboard.status_code == 200
        agent = agent_for(workspace).get(performance_path(program.pk), RANGE)
        assert agent.json() == dashboard.json()

    def test_the_range_defaults_to_the_last_30_days(self, agent, program):
        data = agent.get(performance_path(program.pk)).json()["data"]
        today = datetime.now(UTC).date()
        assert data["range"] == {"from": (today - timedelta(days=29)).isoformat(), "to": today.isoformat()}
        assert len(data["by_day"]) == 30

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"dateFrom": "2025-5-1"}, "dateFrom must be a date (YYYY-MM-DD)"),
            ({"dateTo": "tomorrow"}, "dateTo must be a date (YYYY-MM-DD)"),
            ({"dateFrom": "2025-05-20", "dateTo": "2025-05-19"}, "dateFrom must not be after dateTo"),
            ({"dateFrom": "2024-01-01", "dateTo": "2025-05-19"}, "The date range must be at most 366 days"),
        ],
    )
    def test_a_bad_range_is_400_as_on_the_dashboard(self, agent, program, params, message):
        response = agent.get(performance_path(program.pk), params)
        assert response.status_code == 400
        assert response.json()["error"]["message"] == message
        assert response.json()["error"]["code"] == "invalid_request"
