"""The request log as `svc logs` reads it (issue 25): its own answered polls are not logged, so following the log
does not fill it; a call made with a replaced key shows "replaced key ending …1234", in the JSON the CLI reads and
on the dashboard's logs page."""

import pytest
from django.test import Client

from programs.models import ApiCall, ProgramKey, Role
from programs.services import program_key_regenerate
from tests.factories import MembershipFactory, ProgramFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

LOGS = "/api/v1/cli/logs"
SALE = "/api/v1/track/sale"


def test_answered_polls_are_not_logged_and_refusals_are(api_client):
    program = ProgramFactory()
    api_client.post(SALE, {"transaction_id": "t1", "amount_cents": 100}, format="json", **bearer(program.raw_api_key))
    for _ in range(3):
        assert api_client.get(LOGS, {"limit": 2}, **bearer(program.raw_api_key)).status_code == 200
    rows = api_client.get(LOGS, {"limit": 2}, **bearer(program.raw_api_key)).json()["data"]
    assert [row["route"] for row in rows] == ["track-sale"]

    assert api_client.get(LOGS, {"status": "4x"}, **bearer(program.raw_api_key)).status_code == 400
    refused = api_client.get(LOGS, {"route": "cli-logs"}, **bearer(program.raw_api_key)).json()["data"]
    assert [(row["route"], row["status"]) for row in refused] == [("cli-logs", 400)]
    assert ApiCall.objects.filter(route="cli-logs").count() == 1


def test_a_call_with_a_replaced_key_names_it(api_client):
    program = ProgramFactory()
    old = program.raw_api_key
    current = program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
    sale = {"transaction_id": "t1", "amount_cents": 100, "customer_key": "u1"}
    assert api_client.post(SALE, sale, format="json", **bearer(old)).status_code == 401

    [row] = api_client.get(LOGS, {"route": "track-sale"}, **bearer(current)).json()["data"]

    assert (row["key_masked"], row["key_mode"]) == (f"replaced key ending …{old[-4:]}", "live")
    assert row["excerpt"]["retired_key"] is True
    assert old not in str(row)

    owner = Client()
    owner.force_login(MembershipFactory(workspace=program.workspace, role=Role.OWNER).user)
    page = owner.get(f"/programs/{program.pk}/logs").content.decode()
    assert f"<code>replaced key ending …{old[-4:]}</code>" in page


def test_follow_from_the_start_gets_the_newest_rows_then_only_newer_ones(api_client):
    """What `svc logs --follow --limit 1` reads: the newest row first, then with `after` the newer ones only."""
    program = ProgramFactory()
    for number in (1, 2):
        api_client.post(SALE, {"transaction_id": f"t{number}"}, format="json", **bearer(program.raw_api_key))
    [newest] = api_client.get(LOGS, {"limit": 1}, **bearer(program.raw_api_key)).json()["data"]
    assert newest["excerpt"]["transaction_id"] == "t2"
    assert api_client.get(LOGS, {"after": newest["id"]}, **bearer(program.raw_api_key)).json()["data"] == []
    api_client.post(SALE, {"transaction_id": "t3"}, format="json", **bearer(program.raw_api_key))
    [newer] = api_client.get(LOGS, {"after": newest["id"]}, **bearer(program.raw_api_key)).json()["data"]
    assert newer["excerpt"]["transaction_id"] == "t3"
