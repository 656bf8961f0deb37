"""A signed-in owner stays signed in whichever worker answers: every worker signs sessions with one key."""

import httpx
import pytest

from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory, UserFactory

from .conftest import send_concurrently, sign_in

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_one_sign_in_then_twenty_dashboard_calls_all_answer_200(served):
    user = UserFactory(username="owner")
    program = ProgramFactory(workspace=MembershipFactory(user=user, role=Role.OWNER).workspace)
    paths = [f"/api/tracking/{view}/{program.pk}" for view in ("status", "events", "performance", "readiness")] * 5

    with httpx.Client(base_url=served.url, timeout=15) as browser:
        sign_in(browser, "owner")
        responses = send_concurrently(lambda n: browser.get(paths[n]), len(paths), threads=4)

    assert [response.status_code for response in responses] == [200] * 20
    assert len(served.pids_that_answered("/api/tracking/")) >= 2
