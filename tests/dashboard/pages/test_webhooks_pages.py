"""The webhooks pages: the endpoint list (the program's and the workspace-wide ones), creating, editing, rotating
and deleting endpoints (program:manage), the secret shown once, and the refusals of webhooks.services shown on the
form with nothing changed."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from dashboard import messages as texts
from dashboard.webhook_views import SHOWN_ONCE_KEY
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory, WebhookEndpointFactory
from webhooks import messages
from webhooks.models import WebhookEndpoint
from webhooks.signing import secret_decrypt

pytestmark = pytest.mark.django_db

HOOK_URL = "https://hooks.example.com/svc"


def page(response) -> str:
    return response.content.decode()


def create(client, program, **fields):
    data = {"scope": "program", "url": HOOK_URL, "event_types": ["sale.created"], **fields}
    return client.post(f"/programs/{program.pk}/webhooks/new", data)


# --- the list -----------------------------------------------------------------------------------------------------


def test_it_lists_the_programs_endpoints_and_the_workspace_wide_ones_marked(member_client, program):
    own = WebhookEndpointFactory(program=program, url="https://own.example.com/a", event_types=["sale.created"])
    wide = WebhookEndpointFactory(
        program=None, workspace=program.workspace, url="https://wide.example.com/b", include_test_events=True
    )
    sibling = ProgramFactory(workspace=program.workspace)
    WebhookEndpointFactory(program=sibling, url="https://sibling.example.com/c")
    WebhookEndpointFactory(url="https://elsewhere.example.com/d")  # another workspace

    body = page(member_client.get(f"/programs/{program.pk}/webhooks"))

    assert "https://own.example.com/a" in body and "https://wide.example.com/b" in body
    assert "sibling.example.com" not in body and "elsewhere.example.com" not in body
    # The program's own endpoint comes first; the workspace-wide one carries its mark.
    assert body.index("own.example.com") < body.index("wide.example.com")
    wide_card = body[body.index(f'id="endpoint-{wide.pk}"') :]
    assert "data-workspace-wide" in wide_card
    own_card = body[body.index(f'id="endpoint-{own.pk}"') : body.index(f'id="endpoint-{wide.pk}"')]
    assert "data-workspace-wide" not in own_card
    assert "sale.created" in own_card and "all event types" in wide_card
    assert "not sent (live events only)" in own_card and "included" in wide_card
    # The secret shows as its last four characters only.
    assert f"whsec_…{own.secret_for_tests[-4:]}" in own_card
    assert own.secret_for_tests not in body and wide.secret_for_tests not in body
    assert own.created_at.strftime("%Y-%m-%d") in own_card


def test_it_shows_an_endpoint_the_service_disabled_prominently(member_client, program):
    at = timezone.now().replace(microsecond=0) - timedelta(hours=3)
    endpoint = WebhookEndpointFactory(
        program=program, enabled=False, disabled_at=at, disabled_reason="The endpoint answered 410 Gone."
    )
    body = page(member_client.get(f"/programs/{program.pk}/webhooks"))
    alert = body[body.index(f'data-disabled-by-service="{endpoint.pk}"') :]
    assert "The endpoint answered 410 Gone." in alert[:600]
    assert at.strftime("%Y-%m-%d %H:%M") in alert[:600]
    detail = page(member_client.get(f"/programs/{program.pk}/webhooks/{endpoint.pk}"))
    assert f'data-disabled-by-service="{endpoint.pk}"' in detail and "410 Gone" in detail


def test_an_endpoint_its_owner_disabled_has_no_service_alert(member_client, program):
    WebhookEndpointFactory(program=program, enabled=False, disabled_at=timezone.now())
    body = page(member_client.get(f"/programs/{program.pk}/webhooks"))
    assert "disabled" in body and "data-disabled-by-service" not in body


def test_it_offers_the_add_button_to_roles_that_manage_only(owner_client, admin_role_client, member_client, program):
    url = f"/programs/{program.pk}/webhooks"
    assert 'id="add-endpoint"' in page(owner_client.get(url))
    assert 'id="add-endpoint"' in page(admin_role_client.get(url))
    member_page = page(member_client.get(url))
    assert 'id="add-endpoint"' not in member_page and "No webhook endpoints yet." in member_page


def test_the_program_navigation_links_the_webhooks_page(member_client, program):
    body = page(member_client.get(f"/programs/{program.pk}/webhooks"))
    assert f'href="/programs/{program.pk}/webhooks" aria-current="page"' in body
    assert f'href="/programs/{program.pk}/webhooks"' in page(member_client.get(f"/programs/{program.pk}/events"))


def test_the_list_costs_the_same_queries_however_many_endpoints(member_client, program, django_assert_num_queries):
    for n in range(3):
        WebhookEndpointFactory(program=program, url=f"https://h{n}.example.com/")
        WebhookEndpointFactory(program=None, workspace=program.workspace, url=f"https://w{n}.example.com/")
    # 1 session, 2 user, 3 program, 4 membership (program_for_action), 5 membership (the role, program_access),
    # 6 the endpoints (webhooks.selectors.endpoints_list).
    with django_assert_num_queries(6):
        response = member_client.get(f"/programs/{program.pk}/webhooks")
    assert response.status_code == 200


# --- creating -----------------------------------------------------------------------------------------------------


def test_it_creates_an_endpoint_and_shows_its_secret_once(owner_client, program):
    form = owner_client.get(f"/programs/{program.pk}/webhooks/new")
    assert form.status_code == 200 and 'name="event_types" value="*"' in page(form)

    response = create(
        owner_client,
        program,
        event_types=["sale.created", "commission.created"],
        include_test_events="on",
        description="CRM sync",
    )

    endpoint = WebhookEndpoint.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/programs/{program.pk}/webhooks/{endpoint.pk}"
    assert (endpoint.workspace_id, endpoint.program_id) == (program.workspace_id, program.pk)
    assert endpoint.url == HOOK_URL and endpoint.event_types == ["sale.created", "commission.created"]
    assert endpoint.include_test_events and endpoint.enabled and endpoint.description == "CRM sync"

    shown = owner_client.get(response["Location"])
    body = page(shown)
    secret = secret_decrypt(endpoint.secret_encrypted)
    assert secret.startswith("whsec_") and secret in body and 'id="new-secret"' in body
    assert texts.ENDPOINT_CREATED in body
    # Gone from the session as soon as it was rendered, and never on the page again.
    assert SHOWN_ONCE_KEY not in owner_client.session
    again = page(owner_client.get(response["Location"]))
    assert secret not in again and 'id="new-secret"' not in again
    assert f"whsec_…{secret[-4:]}" in again


def test_a_secret_made_for_one_endpoint_is_never_shown_on_anothers_page(owner_client, program):
    other = WebhookEndpointFactory(program=program)
    create(owner_client, program)
    endpoint = WebhookEndpoint.objects.exclude(pk=other.pk).get()
    body = page(owner_client.get(f"/programs/{program.pk}/webhooks/{other.pk}"))
    assert secret_decrypt(endpoint.secret_encrypted) not in body
    # Taken out on that render all the same: the endpoint's own page no longer has it.
    assert 'id="new-secret"' not in page(owner_client.get(f"/programs/{program.pk}/webhooks/{endpoint.pk}"))


def test_it_creates_a_workspace_wide_endpoint(admin_role_client, program):
    create(admin_role_client, program, scope="workspace", event_types=["*", "lead.created"])
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.program_id is None and endpoint.workspace_id == program.workspace_id
    # "All" wins over the single types checked with it (webhooks.services.event_types_check).
    assert endpoint.event_types == ["*"]
    sibling = ProgramFactory(workspace=program.workspace)
    assert endpoint.url in page(admin_role_client.get(f"/programs/{sibling.pk}/webhooks"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"url": "http://127.0.0.1/hook"}, messages.URL_PRIVATE.format(address="127.0.0.1")),
        ({"url": "ftp://hooks.example.com/"}, messages.URL_INVALID),
        ({"url": ""}, messages.URL_INVALID),
        ({"url": "https://user:pw@hooks.example.com/"}, messages.URL_CREDENTIALS),
        ({"event_types": []}, messages.EVENT_TYPES_REQUIRED),
    ],
)
def test_it_shows_the_services_refusal_on_the_form_and_creates_nothing(owner_client, program, fields, message):
    response = create(owner_client, program, **fields)
    assert response.status_code == 400
    body = page(response)
    errors = body[body.index('id="form-errors"') :]
    assert escape(message) in errors[:500]
    assert WebhookEndpoint.objects.count() == 0
    assert SHOWN_ONCE_KEY not in owner_client.session
    # The form keeps what was typed.
    if fields.get("url"):
        assert f'value="{fields["url"]}"' in body


def test_it_refuses_an_unknown_event_type_on_the_form(owner_client, program):
    response = create(owner_client, program, event_types=["sale.exploded"])
    assert response.status_code == 400
    assert WebhookEndpoint.objects.count() == 0


def test_it_refuses_a_description_too_long_for_the_column(owner_client, program):
    response = create(owner_client, program, description="x" * 201)
    assert response.status_code == 400 and 'id="form-errors"' in page(response)
    assert WebhookEndpoint.objects.count() == 0


def test_creating_needs_the_csrf_token(owner, program):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post(f"/programs/{program.pk}/webhooks/new", {"url": HOOK_URL, "event_types": ["*"]})
    assert response.status_code == 403
    assert WebhookEndpoint.objects.count() == 0


# --- editing ------------------------------------------------------------------------------------------------------


def test_it_edits_an_endpoint(owner_client, program):
    endpoint = WebhookEndpointFactory(program=program, event_types=["*"], description="old")
    url = f"/programs/{program.pk}/webhooks/{endpoint.pk}/edit"
    form = page(owner_client.get(url))
    assert f'value="{endpoint.url}"' in form and 'value="old"' in form

    response = owner_client.post(
        url,
        {
            "url": "https://new.example.com/in",
            "event_types": ["refund.applied", "partner.enrolled"],
            "include_test_events": "on",
            "description": "new",
            # enabled left unticked: disables it
        },
    )

    assert response.status_code == 302 and response["Location"] == f"/programs/{program.pk}/webhooks/{endpoint.pk}"
    endpoint.refresh_from_db()
    assert endpoint.url == "https://new.example.com/in"
    assert endpoint.event_types == ["refund.applied", "partner.enrolled"]
    assert endpoint.include_test_events and endpoint.description == "new"
    assert not endpoint.enabled and endpoint.disabled_at is not None and endpoint.disabled_reason == ""
    assert texts.ENDPOINT_UPDATED in page(owner_client.get(response["Location"]))


def test_enabling_an_endpoint_the_service_disabled_clears_why(admin_role_client, program):
    endpoint = WebhookEndpointFactory(
        program=program, enabled=False, disabled_at=timezone.now(), disabled_reason="The endpoint answered 410 Gone."
    )
    admin_role_client.post(
        f"/programs/{program.pk}/webhooks/{endpoint.pk}/edit",
        {"url": endpoint.url, "event_types": ["*"], "enabled": "on"},
    )
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.disabled_at is None and endpoint.disabled_reason == ""


def test_an_edit_the_service_refuses_changes_nothing(owner_client, program):
    endpoint = WebhookEndpointFactory(program=program, event_types=["sale.created"], description="keep")
    response = owner_client.post(
        f"/programs/{program.pk}/webhooks/{endpoint.pk}/edit",
        {"url": "http://10.0.0.8/hook", "event_types": ["*"], "enabled": "on", "description": "changed"},
    )
    assert response.status_code == 400
    assert messages.URL_PRIVATE.format(address="10.0.0.8") in page(response)
    endpoint.refresh_from_db()
    assert endpoint.url == HOOK_URL and endpoint.event_types == ["sale.created"] and endpoint.description == "keep"


def test_a_workspace_wide_endpoint_is_edited_from_any_program_of_the_workspace(owner_client, program):
    endpoint = WebhookEndpointFactory(program=None, workspace=program.workspace)
    response = owner_client.post(
        f"/programs/{program.pk}/webhooks/{endpoint.pk}/edit",
        {"url": "https://other.example.com/", "event_types": ["*"], "enabled": "on"},
    )
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.url == "https://other.example.com/" and endpoint.program_id is None


# --- rotating -----------------------------------------------------------------------------------------------------


def test_it_rotates_the_secret_and_shows_the_new_one_once(owner_client, program, settings):
    settings.WEBHOOK_ROTATION_OVERLAP_HOURS = 24
    endpoint = WebhookEndpointFactory(program=program)
    old = endpoint.secret_for_tests

    response = owner_client.post(f"/programs/{program.pk}/webhooks/{endpoint.pk}/rotate")

    assert response.status_code == 302 and response["Location"] == f"/programs/{program.pk}/webhooks/{endpoint.pk}"
    endpoint.refresh_from_db()
    new = secret_decrypt(endpoint.secret_encrypted)
    assert new != old and secret_decrypt(endpoint.previous_secret_encrypted) == old
    body = page(owner_client.get(response["Location"]))
    assert new in body and old not in body
    until = endpoint.previous_secret_expires_at
    assert texts.SECRET_ROTATED.format(until=until.strftime("%Y-%m-%d %H:%M"), hours=24) in body
    assert 'id="previous-secret"' in body
    again = page(owner_client.get(response["Location"]))
    assert new not in again and 'id="previous-secret"' in again


def test_rotating_answers_post_only(owner_client, program):
    endpoint = WebhookEndpointFactory(program=program)
    assert owner_client.get(f"/programs/{program.pk}/webhooks/{endpoint.pk}/rotate").status_code == 405


# --- deleting -----------------------------------------------------------------------------------------------------


def test_it_deletes_an_endpoint_after_confirmation(owner_client, program):
    endpoint = WebhookEndpointFactory(program=program)
    url = f"/programs/{program.pk}/webhooks/{endpoint.pk}/delete"
    confirm = owner_client.get(url)
    assert confirm.status_code == 200 and 'id="confirm-delete"' in page(confirm)
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()  # asking deletes nothing

    response = owner_client.post(url)

    assert response.status_code == 302 and response["Location"] == f"/programs/{program.pk}/webhooks"
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert texts.ENDPOINT_DELETED.format(url=endpoint.url) in page(owner_client.get(response["Location"]))


# --- who may do what ----------------------------------------------------------------------------------------------


def _manage_posts(program, endpoint):
    base = f"/programs/{program.pk}/webhooks"
    return [
        (f"{base}/new", {"url": HOOK_URL, "event_types": ["*"], "scope": "program"}),
        (f"{base}/{endpoint.pk}/edit", {"url": "https://changed.example.com/", "event_types": ["*"]}),
        (f"{base}/{endpoint.pk}/rotate", {}),
        (f"{base}/{endpoint.pk}/delete", {}),
    ]


def test_a_member_can_read_but_not_change_endpoints(member_client, program):
    endpoint = WebhookEndpointFactory(program=program)
    before = WebhookEndpoint.objects.values().get()
    for url, data in _manage_posts(program, endpoint):
        response = member_client.post(url, data)
        assert response.status_code == 403, url
        assert "Your role (member) cannot" in page(response)
    for url in (f"/programs/{program.pk}/webhooks/new", f"/programs/{program.pk}/webhooks/{endpoint.pk}/edit"):
        assert member_client.get(url).status_code == 403
    assert WebhookEndpoint.objects.values().get() == before
    detail = page(member_client.get(f"/programs/{program.pk}/webhooks/{endpoint.pk}"))
    assert 'id="edit-endpoint"' not in detail and 'id="rotate-secret"' not in detail
    assert 'id="delete-endpoint"' not in detail


def test_an_outsider_gets_403_and_a_signed_out_visitor_the_sign_in_page(outsider_client, client, program):
    endpoint = WebhookEndpointFactory(program=program)
    for url, data in _manage_posts(program, endpoint):
        assert outsider_client.post(url, data).status_code == 403
        response = client.post(url, data)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    for url in (f"/programs/{program.pk}/webhooks", f"/programs/{program.pk}/webhooks/{endpoint.pk}"):
        refused = outsider_client.get(url)
        assert refused.status_code == 403 and endpoint.url not in page(refused)
    assert WebhookEndpoint.objects.count() == 1


def test_another_workspaces_endpoint_is_unknown_through_ones_own_program(owner_client, program):
    """An owner of one workspace naming another workspace's endpoint under their own program: 404, not a change."""
    foreign = WebhookEndpointFactory(description="foreign")
    foreign_wide = WebhookEndpointFactory(program=None, workspace=foreign.workspace)
    for endpoint in (foreign, foreign_wide):
        base = f"/programs/{program.pk}/webhooks/{endpoint.pk}"
        assert owner_client.get(base).status_code == 404
        assert owner_client.get(f"{base}/edit").status_code == 404
        for action in ("edit", "rotate", "delete", "resend-failed"):
            assert owner_client.post(f"{base}/{action}", {"url": HOOK_URL, "event_types": ["*"]}).status_code == 404
    foreign.refresh_from_db()
    assert foreign.url == HOOK_URL and foreign.previous_secret_encrypted == ""
    assert WebhookEndpoint.objects.count() == 2


def test_a_sibling_programs_own_endpoint_is_not_reachable_from_this_program(owner_client, program):
    sibling = ProgramFactory(workspace=program.workspace)
    endpoint = WebhookEndpointFactory(program=sibling)
    assert owner_client.get(f"/programs/{program.pk}/webhooks/{endpoint.pk}").status_code == 404
    assert owner_client.get(f"/programs/{sibling.pk}/webhooks/{endpoint.pk}").status_code == 200


def test_an_unknown_program_or_endpoint_is_404(owner_client, program):
    endpoint = WebhookEndpointFactory(program=program)
    assert owner_client.get(f"/programs/{program.pk + 1000}/webhooks").status_code == 404
    assert owner_client.get(f"/programs/{program.pk}/webhooks/{endpoint.pk + 1000}").status_code == 404


def test_an_inactive_membership_gives_no_access(program):
    membership = MembershipFactory(workspace=program.workspace, role=Role.OWNER, is_active=False)
    client = Client()
    client.force_login(membership.user)
    assert client.get(f"/programs/{program.pk}/webhooks").status_code == 403


def test_a_program_key_never_authenticates_these_pages(client, program):
    """The pages are session pages: a Bearer program key (live or test) is ignored, so the caller is signed out."""
    endpoint = WebhookEndpointFactory(program=program)
    for key in (program.raw_api_key, program.raw_test_api_key):
        headers = {"Authorization": f"Bearer {key}"}
        for url in (f"/programs/{program.pk}/webhooks", f"/programs/{program.pk}/webhooks/{endpoint.pk}"):
            response = client.get(url, headers=headers)
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        response = client.post(f"/programs/{program.pk}/webhooks/{endpoint.pk}/rotate", headers=headers)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    endpoint.refresh_from_db()
    assert endpoint.previous_secret_encrypted == ""
