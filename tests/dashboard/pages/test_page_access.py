"""Who may open which dashboard page: signed out -> sign-in, outsider -> 403, unknown program -> 404, members of
the program's workspace (any role, active membership) -> 200."""

import pytest
from django.test import Client

from programs.models import Role
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db

PAGES = [
    "/programs/{id}/",
    "/programs/{id}/events",
    "/programs/{id}/readiness",
    "/programs/{id}/key",
    "/programs/{id}/partners",
    "/programs/{id}/commissions",
    "/programs/{id}/review",
    "/programs/{id}/review/rules",
]


@pytest.mark.parametrize("page", PAGES)
def test_it_sends_a_signed_out_visitor_to_the_sign_in_page(client, program, page):
    url = page.format(id=program.pk)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("who", ["owner_client", "admin_role_client", "member_client"])
def test_it_shows_every_page_to_each_role(request, program, page, who):
    response = request.getfixturevalue(who).get(page.format(id=program.pk))
    assert response.status_code == 200
    assert "Acme Pro" in response.content.decode()


@pytest.mark.parametrize("page", PAGES)
def test_it_refuses_an_outsider_with_403(outsider_client, program, page):
    response = outsider_client.get(page.format(id=program.pk))
    assert response.status_code == 403
    body = response.content.decode()
    assert "No access" in body and "Acme Pro" not in body


@pytest.mark.parametrize("page", PAGES)
def test_it_answers_404_for_an_unknown_program(owner_client, program, page):
    assert owner_client.get(page.format(id=program.pk + 1000)).status_code == 404


def test_an_inactive_membership_gives_no_access(program):
    membership = MembershipFactory(workspace=program.workspace, role=Role.OWNER, is_active=False)
    client = Client()
    client.force_login(membership.user)
    assert client.get(f"/programs/{program.pk}/").status_code == 403
    assert "Acme Pro" not in client.get("/").content.decode()


def test_pages_answer_get_only(owner_client, program):
    assert owner_client.post(f"/programs/{program.pk}/").status_code == 405


def test_the_overview_without_a_trailing_slash_redirects_to_it(owner_client, program):
    response = owner_client.get(f"/programs/{program.pk}")
    assert response.status_code == 301
    assert response["Location"] == f"/programs/{program.pk}/"


def test_the_navigation_links_every_page_and_stripe_for_roles_that_manage(owner_client, member_client, program):
    owner_page = owner_client.get(f"/programs/{program.pk}/events").content.decode()
    for path in ["/", "/events", "/readiness", "/partners", "/commissions", "/key", "/stripe", "/import"]:
        assert f'href="/programs/{program.pk}{path}"' in owner_page
    assert f'href="/programs/{program.pk}/events" aria-current="page"' in owner_page
    # Members cannot open the Stripe or Import page (program:manage), so neither is offered to them.
    member_page = member_client.get(f"/programs/{program.pk}/events").content.decode()
    assert f'href="/programs/{program.pk}/stripe"' not in member_page
    assert f'href="/programs/{program.pk}/import"' not in member_page


def test_the_stripe_page_carries_the_program_navigation(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/stripe").content.decode()
    assert f'href="/programs/{program.pk}/stripe" aria-current="page"' in page
    assert f'href="/programs/{program.pk}/events"' in page
    assert "Stripe connection" in page
