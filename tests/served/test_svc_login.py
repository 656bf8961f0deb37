"""`svc login` against the served server: the terminal starts the login and polls, a person signs in to the
dashboard and authorizes it on /cli/login, each request answered by whichever worker takes it."""

import json
import threading
from unittest import mock

import httpx
import pytest
from typer.testing import CliRunner

from cli_api.models import CliToken
from programs.models import Role
from svc_cli.main import app
from tests.factories import MembershipFactory, ProgramFactory, UserFactory

from .conftest import sign_in

LOGIN_SECONDS = 20

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class Person:
    """Opens the login link the way `svc login` would in a browser: signs in, then authorizes."""

    def __init__(self, served_url: str, username: str) -> None:
        self.served_url, self.username = served_url, username
        self.pages: list[httpx.Response] = []
        self.errors: list[BaseException] = []
        self.thread: threading.Thread | None = None
        self.opened = threading.Event()

    def open(self, url: str, *args, **kwargs) -> bool:
        self.thread = threading.Thread(target=self._authorize, args=(url,))
        self.thread.start()
        self.opened.set()
        return True

    def _authorize(self, url: str) -> None:
        try:
            with httpx.Client(base_url=self.served_url, timeout=15) as browser:
                login_page = url.removeprefix(self.served_url)
                confirm = sign_in(browser, self.username, next_path=login_page)
                self.pages.append(confirm)
                done = browser.post(
                    login_page,
                    data={"action": "approve", "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
                    headers={"Referer": f"{self.served_url}{login_page}"},
                )
                self.pages.append(done)
        except BaseException as error:
            self.errors.append(error)

    def join(self) -> None:
        assert self.opened.wait(LOGIN_SECONDS) and self.thread is not None, "svc login never opened the browser"
        self.thread.join(timeout=LOGIN_SECONDS)
        assert self.errors == []


def test_svc_login_completes_and_its_token_works(served, tmp_path):
    user = UserFactory(username="ada")
    program = ProgramFactory(workspace=MembershipFactory(user=user, role=Role.OWNER).workspace, name="Served")
    env = {"SVC_CONFIG_DIR": str(tmp_path), "SVC_BASE_URL": served.url, "SVC_POLL_INTERVAL": "0.1", "SVC_API_KEY": None}
    person = Person(served.url, "ada")

    results = []
    with mock.patch("svc_cli.main.webbrowser.open", side_effect=person.open):
        # In a thread: a login the browser never completes would keep the terminal polling for minutes.
        terminal = threading.Thread(
            target=lambda: results.append(CliRunner().invoke(app, ["login"], env=env)), daemon=True
        )
        terminal.start()
        person.join()
        terminal.join(timeout=LOGIN_SECONDS)
    assert results, f"svc login still waits {LOGIN_SECONDS} s after the browser step: {person.pages}"
    result = results[0]

    confirm, done = person.pages
    assert confirm.url.path == "/cli/login", "the sign-in did not reach the confirmation page"
    assert 'id="cli-login" data-mode="done"' in done.text, done.text
    assert result.exit_code == 0, result.output
    assert "Logged in as ada" in result.stdout
    assert CliToken.objects.get().user == user
    listed = CliRunner().invoke(app, ["programs", "--json"], env=env, catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    assert [item["name"] for item in json.loads(listed.stdout)["data"]] == [program.name]
