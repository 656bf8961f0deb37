"""The API routes the bad-input tests send hostile requests to, each with a client that gets past its
authentication (so the refusal under test is the one answered), and the checks every refusal shares:
a 4xx in the route's envelope, with the route's error code where its errors always carry one, and no row
written anywhere."""

from dataclasses import dataclass
from typing import Any, cast

from django.apps import apps
from rest_framework.test import APIClient

from cli_api.services import cli_token_create
from programs.models import Role
from tests.factories import CustomerFactory, MembershipFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer

# The apps whose tables a refused request must leave alone (Django's own include sessions and users).
PROJECT_APPS = ("tracking", "programs", "commissions", "cli_api", "dashboard", "core", "auth", "sessions")


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # "{program}" is replaced by the program's id
    auth: str  # "none", "key" (program key), "login" (CLI login token) or "session" (dashboard owner)
    coded: bool = False  # sale and refund: every error carries error.code
    typed: bool = False  # typed envelope: {"error": {"code", "message"}}

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path}"


# Every route that reads a JSON body.
JSON_ROUTES = [
    Route("post", "/api/v1/track/click", "none"),
    Route("post", "/api/v1/track/lead", "key"),
    Route("post", "/api/v1/track/sale", "key", coded=True),
    Route("post", "/api/v1/track/refund", "key", coded=True),
    Route("post", "/api/v1/track/visit", "none"),
    Route("post", "/api/v1/cli/auth/callback", "none"),
    Route("post", "/api/v1/cli/init", "login"),
    Route("post", "/api/tracking/test", "session"),
    Route("post", "/api/tracking/check-test-events", "session"),
    Route("patch", "/api/v1/programs/{program}/settings", "session"),
]
# Every other API route, by the method it answers.
OTHER_ROUTES = [
    Route("get", "/api/v1/track/config?program_id={program}", "none"),
    Route("get", "/api/v1/track/discount?program_id={program}&click_id=x", "none"),
    Route("post", "/api/v1/cli/auth/start", "none"),
    Route("get", "/api/v1/cli/auth/poll?state=abc", "none"),
    Route("post", "/api/v1/cli/auth/logout", "login"),
    Route("get", "/api/v1/cli/programs", "login"),
    Route("get", "/api/v1/cli/status", "key"),
    Route("post", "/api/v1/cli/test-event", "key"),
    Route("get", "/api/tracking/status/{program}", "session"),
    Route("get", "/api/tracking/events/{program}", "session"),
    Route("get", "/api/tracking/performance/{program}", "session"),
    Route("get", "/api/tracking/readiness/{program}", "session"),
    Route("post", "/api/tracking/run-verification/{program}", "session"),
    Route("get", "/api/v1/programs/me/readiness", "key", typed=True),
    Route("get", "/api/v1/programs/me/analytics/sources", "key"),
    Route("post", "/api/programs/{program}/regenerate-key", "session"),
]
ALL_ROUTES = JSON_ROUTES + OTHER_ROUTES


def route_id(route: Route) -> str:
    return str(route)


@dataclass
class Caller:
    """A program with a link and a customer, and one client per kind of credential."""

    program: Any  # a ProgramFactory program: it also carries its raw keys

    def client(self, route: Route) -> APIClient:
        client = APIClient()
        if route.auth == "key":
            client.credentials(**bearer(self.program.raw_api_key))
        elif route.auth == "login":
            owner = MembershipFactory.create(workspace=self.program.workspace, role=Role.OWNER).user
            client.credentials(**bearer(cli_token_create(user=owner)[1]))
        elif route.auth == "session":
            client.force_login(MembershipFactory.create(workspace=self.program.workspace, role=Role.OWNER).user)
        return client

    def path(self, route: Route) -> str:
        return route.path.format(program=self.program.pk)

    def send(self, route: Route, body: bytes | str = "", content_type: str = "application/json", **extra):
        client = self.client(route)
        before = stored_rows()
        # DRF's test client sends bytes as they are; its stubs only admit str.
        data = cast(str, body or "")
        response = client.generic(route.method.upper(), self.path(route), data, content_type, **extra)
        self.rows_before = before
        return response

    def assert_refused(self, route: Route, response, status: int, message: str | None = None) -> None:
        assert_refused(route, response, status, message)
        assert stored_rows() == self.rows_before, "a refused request stored something"


def make_caller() -> Caller:
    program = ProgramFactory(commission_type="percent")
    link = ReferralLinkFactory(program=program)
    CustomerFactory(link=link, customer_key="user_1", customer_status="lead")
    return Caller(program=program)


# The request log records every call, refused ones included: that is its job, not a stored effect.
REQUEST_LOG = "programs.ApiCall"


def stored_rows() -> dict[str, int]:
    """Row counts of every table a request could write to, the request log aside."""
    return {
        model._meta.label: model._default_manager.count()
        for app in PROJECT_APPS
        for model in apps.get_app_config(app).get_models()
        if model._meta.label != REQUEST_LOG
    }


def assert_refused(route: Route, response, status: int, message: str | None = None) -> None:
    """The status, and the route's envelope: typed routes carry error.code and error.message; platform routes
    carry data: null and error.status/name/message/details, with error.code on sale and refund."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    error = body["error"]
    if route.typed:
        assert "data" not in body and isinstance(error["code"], str) and error["code"]
    else:
        assert body["data"] is None
        assert error["status"] == status and isinstance(error["name"], str) and isinstance(error["details"], dict)
        assert ("code" in error) == route.coded
    if message is not None:
        assert error["message"] == message
