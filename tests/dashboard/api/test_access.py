"""Who may call the dashboard API: a signed-in session with an active membership whose role allows the
route's action. Program keys never authenticate; POST and PATCH need the CSRF token."""

import pytest
from rest_framework.test import APIClient

from core import messages
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory, UserFactory
from tests.helpers import bad_request, platform_error
from tracking.models import ClickEvent, SaleEvent

pytestmark = pytest.mark.django_db

# (method, path template, action the route needs); {id} is the program id.
PATH_ROUTES = [
    ("get", "/api/tracking/status/{id}", "tracking:list"),
    ("get", "/api/tracking/events/{id}", "tracking:list"),
    ("get", "/api/tracking/performance/{id}", "tracking:list"),
    ("get", "/api/tracking/readiness/{id}", "tracking:list"),
    ("post", "/api/tracking/run-verification/{id}", "tracking:test"),
    ("get", "/api/v1/programs/{id}/settings", "tracking:list"),
    ("patch", "/api/v1/programs/{id}/settings", "program:manage"),
]
BODY_ROUTES = [
    ("post", "/api/tracking/test", {"event_type": "click"}),
    ("post", "/api/tracking/check-test-events", {}),
]
ALL_ROUTES = [(method, path) for method, path, _ in PATH_ROUTES] + [(method, path) for method, path, _ in BODY_ROUTES]


def call(client: APIClient, method: str, path: str, program_id: object, **extra):
    if "{id}" in path:
        # The settings PATCH refuses an empty patch; the access rules are the same for a real one.
        body: dict[str, object] = {"name": "Renamed"} if method == "patch" else {}
        return getattr(client, method)(path.format(id=program_id), body, format="json", **extra)
    body = {"program_id": program_id, "event_type": "click"}
    return getattr(client, method)(path, body, format="json", **extra)


UNAUTHORIZED = platform_error(401, "UnauthorizedError", messages.AUTHENTICATION_REQUIRED)
FORBIDDEN = platform_error(403, "ForbiddenError", messages.PERMISSION_DENIED)
NOT_FOUND = platform_error(404, "NotFoundError", "Program not found")


@pytest.mark.parametrize(("method", "path"), ALL_ROUTES)
class TestEveryRoute:
    def test_it_answers_401_when_signed_out(self, api_client, program, method, path):
        response = call(api_client, method, path, program.pk)
        assert response.status_code == 401
        assert response.json() == UNAUTHORIZED
        assert response["WWW-Authenticate"] == 'Session realm="dashboard"'

    def test_it_never_accepts_a_program_key(self, api_client, program, method, path):
        for key in (program.raw_api_key, program.raw_test_api_key):
            response = call(api_client, method, path, program.pk, HTTP_AUTHORIZATION=f"Bearer {key}")
            assert response.status_code == 401
            assert response.json() == UNAUTHORIZED

    def test_it_answers_403_to_a_user_without_membership(self, api_client, program, method, path):
        api_client.force_login(UserFactory())
        response = call(api_client, method, path, program.pk)
        assert response.status_code == 403
        assert response.json() == FORBIDDEN

    def test_it_answers_403_to_a_member_of_another_workspace(self, api_client, program, method, path):
        other = MembershipFactory(role=Role.OWNER)
        api_client.force_login(other.user)
        assert call(api_client, method, path, program.pk).status_code == 403

    def test_it_answers_403_to_an_inactive_membership(self, sign_in, program, method, path):
        client = sign_in(program, Role.OWNER, active=False)
        response = call(client, method, path, program.pk)
        assert response.status_code == 403
        assert response.json() == FORBIDDEN

    def test_it_answers_404_for_an_unknown_program(self, owner, program, method, path):
        response = call(owner, method, path, program.pk + 1000)
        assert response.status_code == 404
        assert response.json() == NOT_FOUND

    def test_it_answers_404_for_a_huge_program_id(self, owner, method, path):
        response = call(owner, method, path, 10**30)
        assert response.status_code == 404
        assert response.json() == NOT_FOUND

    def test_it_sends_the_request_id_and_no_store(self, owner, program, method, path):
        response = call(owner, method, path, program.pk + 1000, HTTP_X_REQUEST_ID="dash-req-12345")
        assert response["X-Request-ID"] == "dash-req-12345"
        assert response["Cache-Control"] == "private, no-store"


@pytest.mark.parametrize(("method", "path", "action"), PATH_ROUTES)
def test_each_role_gets_exactly_the_routes_its_actions_allow(sign_in, program, method, path, action):
    allowed = {Role.OWNER: True, Role.ADMIN: True, Role.MEMBER: action == "tracking:list"}
    for role, may in allowed.items():
        client = sign_in(program, role)
        status = call(client, method, path, program.pk).status_code
        assert status == (200 if may else 403), (role, status)


@pytest.mark.parametrize(("method", "path", "body"), BODY_ROUTES)
class TestBodyRoutes:
    def test_a_member_without_tracking_test_is_refused_and_nothing_is_recorded(
        self, sign_in, program, method, path, body
    ):
        ReferralLinkFactory(program=program)
        client = sign_in(program, Role.MEMBER)
        response = getattr(client, method)(path, {"program_id": program.pk, **body}, format="json")
        assert response.status_code == 403
        assert response.json() == FORBIDDEN
        assert not ClickEvent.objects.exists()

    def test_an_admin_may_call_it(self, sign_in, program, method, path, body):
        ReferralLinkFactory(program=program)
        client = sign_in(program, Role.ADMIN)
        response = getattr(client, method)(path, {"program_id": program.pk, **body}, format="json")
        assert response.status_code == 200

    def test_it_needs_program_id(self, owner, method, path, body):
        response = getattr(owner, method)(path, body, format="json")
        assert response.status_code == 400
        assert response.json() == bad_request(messages.PROGRAM_ID_REQUIRED)

    @pytest.mark.parametrize("bad", [True, 1.5, "12a", "-3", "²", [1], {"id": 1}])
    def test_it_refuses_a_program_id_that_is_not_an_integer(self, owner, method, path, body, bad):
        response = getattr(owner, method)(path, {**body, "program_id": bad}, format="json")
        assert response.status_code == 400
        assert response.json() == bad_request("program_id must be an integer")

    def test_it_takes_a_numeric_string(self, sign_in, program, method, path, body):
        ReferralLinkFactory(program=program)
        client = sign_in(program, Role.OWNER)
        response = getattr(client, method)(path, {**body, "program_id": f" {program.pk} "}, format="json")
        assert response.status_code == 200

    def test_a_body_that_is_not_an_object_is_400(self, owner, method, path, body):
        response = getattr(owner, method)(path, [1, 2], format="json")
        assert response.status_code == 400
        assert response.json() == bad_request("Request body must be a JSON object")

    def test_malformed_json_is_400(self, owner, method, path, body):
        response = owner.generic(method.upper(), path, "{nope", content_type="application/json")
        assert response.status_code == 400
        assert response.json() == bad_request(messages.MALFORMED_JSON)

    def test_signed_out_is_401_before_the_body_is_read(self, api_client, method, path, body):
        response = api_client.generic(method.upper(), path, "{nope", content_type="application/json")
        assert response.status_code == 401


class TestCsrf:
    @pytest.fixture
    def csrf_client(self, program) -> APIClient:
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user)
        return client

    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("post", "/api/tracking/run-verification/{id}"),
            ("post", "/api/tracking/test"),
            ("post", "/api/tracking/check-test-events"),
            ("patch", "/api/v1/programs/{id}/settings"),
        ],
    )
    def test_writes_without_the_csrf_token_are_refused_and_change_nothing(self, csrf_client, program, method, path):
        ReferralLinkFactory(program=program)
        body = {"program_id": program.pk, "event_type": "sale", "name": "Renamed"}
        response = getattr(csrf_client, method)(path.format(id=program.pk), body, format="json")
        assert response.status_code == 403
        error = response.json()["error"]
        assert (error["status"], error["name"]) == (403, "ForbiddenError")
        assert error["message"].startswith("CSRF Failed")
        assert not SaleEvent.objects.exists() and not ClickEvent.objects.exists()
        program.refresh_from_db()
        assert program.name != "Renamed"

    def test_a_write_with_the_token_goes_through(self, csrf_client, program):
        token = "t" * 32
        csrf_client.cookies["csrftoken"] = token
        response = csrf_client.patch(
            f"/api/v1/programs/{program.pk}/settings", {"name": "Renamed"}, format="json", HTTP_X_CSRFTOKEN=token
        )
        assert response.status_code == 200
        program.refresh_from_db()
        assert program.name == "Renamed"

    def test_reads_need_no_token(self, csrf_client, program):
        assert csrf_client.get(f"/api/tracking/status/{program.pk}").status_code == 200


def test_a_malformed_path_id_is_a_json_404(owner):
    response = owner.get("/api/tracking/status/abc")
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_another_program_of_the_same_workspace_is_allowed(owner, program):
    sibling = ProgramFactory(workspace=program.workspace)
    assert owner.get(f"/api/tracking/status/{sibling.pk}").status_code == 200


def test_unsupported_methods_are_405(owner, program):
    response = owner.delete(f"/api/tracking/status/{program.pk}")
    assert response.status_code == 405
    assert response.json()["error"]["name"] == "MethodNotAllowedError"
    assert owner.options(f"/api/tracking/status/{program.pk}").status_code == 405
