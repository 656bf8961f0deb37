"""The home page: the programs of the user's active memberships, with the role in each."""

import pytest

from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory

pytestmark = pytest.mark.django_db


def test_signed_out_home_redirects_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_it_lists_the_programs_of_active_memberships_with_the_role(client, program, owner):
    other = ProgramFactory(name="Beta Shop")
    MembershipFactory(workspace=other.workspace, user=owner, role=Role.MEMBER)
    hidden = ProgramFactory(name="Gamma Hidden")
    MembershipFactory(workspace=hidden.workspace, user=owner, role=Role.OWNER, is_active=False)
    ProgramFactory(name="Delta Stranger")
    client.force_login(owner)

    body = client.get("/").content.decode()

    assert body.index("Acme Pro") < body.index("Beta Shop")  # by name
    assert f'href="/programs/{program.pk}/"' in body and f'href="/programs/{other.pk}/"' in body
    assert "role-owner" in body and "role-member" in body
    assert "Gamma Hidden" not in body and "Delta Stranger" not in body


def test_it_explains_an_empty_list(client, stranger):
    client.force_login(stranger)
    assert "No programs yet." in client.get("/").content.decode()


def test_sign_in_through_the_form_lands_on_the_program_list(client, program, owner):
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and 'name="username"' in page.content.decode()

    response = client.post("/accounts/login/", {"username": owner.username, "password": "pass-word-123"}, follow=True)

    assert response.redirect_chain == [("/", 302)]
    assert "Acme Pro" in response.content.decode()


def test_a_wrong_password_is_refused_with_a_message(client, owner):
    response = client.post("/accounts/login/", {"username": owner.username, "password": "nope"})
    assert response.status_code == 200
    assert "didn't match" in response.content.decode()
