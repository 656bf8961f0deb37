import pytest

from programs.keys import key_digest
from programs.models import ProgramKey, Role
from tests.factories import MembershipFactory, ProgramFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory()


def url(program) -> str:
    return f"/api/programs/{program.pk}/regenerate-key"


def test_the_owner_gets_the_new_key_once_and_the_old_one_stops(api_client, program):
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    api_client.force_authenticate(None)
    api_client.force_login(owner)
    response = api_client.post(url(program), {}, format="json")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["api_key"].startswith("aff_")
    assert data["api_token_masked"].endswith(data["api_key"][-4:])
    assert response["Cache-Control"] == "no-store"
    assert ProgramKey.objects.get(program=program, mode="live").digest == key_digest(data["api_key"])
    assert not ProgramKey.objects.filter(digest=key_digest(program.raw_api_key)).exists()


def test_the_test_key_can_be_regenerated(api_client, program):
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    api_client.force_login(owner)
    response = api_client.post(url(program), {"mode": "test"}, format="json")
    assert response.json()["data"]["api_key"].startswith("aff_test_")


def test_a_member_is_refused(api_client, program):
    member = MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user
    api_client.force_login(member)
    response = api_client.post(url(program), {}, format="json")
    assert response.status_code == 403
    assert ProgramKey.objects.filter(digest=key_digest(program.raw_api_key)).exists()


def test_an_outsider_is_refused(api_client, program):
    api_client.force_login(UserFactory())
    assert api_client.post(url(program), {}, format="json").status_code == 403


def test_signed_out_is_401(api_client, program):
    response = api_client.post(url(program), {}, format="json")
    assert response.status_code == 401


def test_a_program_key_never_authenticates_it(api_client, program):
    response = api_client.post(url(program), {}, format="json", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
    assert response.status_code == 401
    assert ProgramKey.objects.filter(digest=key_digest(program.raw_api_key)).exists()


def test_an_unknown_program_is_404(api_client, program):
    api_client.force_login(MembershipFactory(workspace=program.workspace).user)
    assert api_client.post("/api/programs/999999/regenerate-key", {}, format="json").status_code == 404
