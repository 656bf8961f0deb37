"""`svc login`'s browser step in real headless Chromium: a login started through the API, its link opened, the
dashboard's sign-in form filled in, the login confirmed; then the terminal's poll gets the token, once, and the
token lists the account's programs through `svc programs`."""

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli_api.models import CliToken
from programs.models import Role
from svc_cli.main import app
from tests.factories import MembershipFactory, ProgramFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_a_person_signs_in_and_confirms_then_the_terminal_gets_its_token(request, tab, live_server, settings, tmp_path):
    settings.PUBLIC_BASE_URL = live_server.url
    user = UserFactory(username="grace", email="grace@example.com")
    workspace = MembershipFactory(user=user, role=Role.OWNER).workspace
    program = ProgramFactory(workspace=workspace, name="Browser program")
    # Closed at the end: a kept-alive connection would keep a server thread, and its database session, open.
    api = httpx.Client(base_url=live_server.url, timeout=10)
    request.addfinalizer(api.close)

    started = api.post("/api/v1/cli/auth/start")
    assert started.status_code == 201
    start = started.json()["data"]
    assert api.get("/api/v1/cli/auth/poll", params={"state": start["state"]}).json()["data"]["status"] == "pending"

    page = tab.page
    page.goto(start["login_url"])
    assert page.url.startswith(f"{live_server.url}/accounts/login/?next=")
    page.fill("#id_username", "grace")
    page.fill("#id_password", "pass-word-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/cli/login?state=*")
    assert page.text_content("#user-code").strip() == start["user_code"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "cli-login-confirm.png"), full_page=True)
    page.click("#approve")
    page.wait_for_selector("#cli-login[data-mode=done]")
    assert "signed in as grace" in page.text_content("#result")

    polled = api.get("/api/v1/cli/auth/poll", params={"state": start["state"]})
    assert polled.status_code == 200
    data = polled.json()["data"]
    assert data["status"] == "complete" and data["user"]["username"] == "grace"
    token = data["token"]
    assert CliToken.objects.get().user == user
    again = api.get("/api/v1/cli/auth/poll", params={"state": start["state"]})
    assert (again.status_code, again.json()["error"]["message"]) == (400, "Session already consumed")

    config = tmp_path / "svc"
    config.mkdir()
    (config / "credentials.json").write_text(json.dumps({"base_url": live_server.url, "token": token}))
    result = CliRunner().invoke(
        app, ["programs", "--json"], env={"SVC_CONFIG_DIR": str(config), "SVC_BASE_URL": live_server.url}
    )
    assert result.exit_code == 0, result.output
    assert [item["name"] for item in json.loads(result.stdout)["data"]] == [program.name]
    assert tab.blocked == []
