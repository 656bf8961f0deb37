import re
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages

from programs import services
from programs.keys import key_digest
from programs.models import AgentKey
from programs.services import agent_key_create, agent_key_revoke
from tests.factories import ProgramFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db

ADD = "/admin/programs/agentkey/add/"
LIST = "/admin/programs/agentkey/"


@pytest.fixture
def operator_client(client):
    user = get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123")
    client.force_login(user)
    return client


def shown_keys(response) -> list[str]:
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    return re.findall(r"(agt_[A-Za-z0-9_-]{20,})", text)


def form_data(**overrides) -> dict[str, Any]:
    return {"name": "ops bot", "scopes": ["programs:read"], "expires_at_0": "", "expires_at_1": "", **overrides}


def change_url(key: AgentKey) -> str:
    return f"/admin/programs/agentkey/{key.pk}/change/"


def test_issuing_limits_the_key_to_programs_with_an_expiry_and_shows_it_once(operator_client):
    program = ProgramFactory()
    ProgramFactory(workspace=program.workspace)
    response = operator_client.post(
        ADD,
        form_data(
            workspace=program.workspace.pk,
            programs=[program.pk],
            scopes=["payouts:write", "links:read"],
            expires_at_0="2031-01-01",
            expires_at_1="00:00:00",
        ),
    )
    assert response.status_code == 302
    [raw] = shown_keys(response)
    key = AgentKey.objects.get()
    assert key.digest == key_digest(raw) and raw.endswith(key.last4)
    assert key.workspace == program.workspace and list(key.programs.all()) == [program]
    assert key.scopes == ["links:read", "payouts:write"]  # canonical order
    assert key.expires_at is not None and key.expires_at.year == 2031
    page = operator_client.get(change_url(key)).content.decode()
    assert raw in page  # the one-time message, then never again
    page = operator_client.get(change_url(key)).content.decode()
    assert raw not in page and key.digest not in page and key.masked in page


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"scopes": ["tracking:read"]}, "scopes"),
        ({"scopes": ["programs:read", "programs:admin"]}, "scopes"),
        ({"scopes": []}, "scopes"),
        ({"workspace": ""}, "workspace"),
        ({"name": ""}, "name"),
    ],
)
def test_a_bad_key_is_a_form_error_and_nothing_is_issued(operator_client, overrides, field):
    workspace = WorkspaceFactory()
    response = operator_client.post(ADD, form_data(**{"workspace": workspace.pk, **overrides}))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors[field]
    assert not AgentKey.objects.exists() and not shown_keys(response)


def test_a_program_of_another_workspace_is_a_form_error(operator_client):
    mine, foreign = ProgramFactory(), ProgramFactory()
    response = operator_client.post(ADD, form_data(workspace=mine.workspace.pk, programs=[mine.pk, foreign.pk]))
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["programs"]
    assert error == f"Program(s) {foreign.pk} are not in workspace {mine.workspace.pk}"
    assert not AgentKey.objects.exists()


def test_an_issued_key_keeps_its_workspace_and_secret_but_its_scopes_programs_and_expiry_change(operator_client):
    program = ProgramFactory()
    key, _ = agent_key_create(workspace=program.workspace, name="bot", scopes=["programs:read"])
    digest, other = key.digest, WorkspaceFactory()
    response = operator_client.post(
        change_url(key),
        form_data(
            name="renamed",
            workspace=other.pk,  # read-only: ignored
            programs=[program.pk],
            scopes=["events:write"],
            expires_at_0="2032-02-02",
            expires_at_1="12:00:00",
            revoked_at_0="2020-01-01",  # read-only: ignored
            revoked_at_1="00:00:00",
        ),
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.name == "renamed" and key.workspace == program.workspace and key.digest == digest
    assert key.scopes == ["events:write"] and list(key.programs.all()) == [program]
    assert key.expires_at is not None and key.expires_at.year == 2032 and key.revoked_at is None


def test_editing_refuses_a_foreign_program_and_an_unknown_scope(operator_client):
    key, _ = agent_key_create(workspace=WorkspaceFactory(), name="bot", scopes=["programs:read"])
    foreign = ProgramFactory()
    response = operator_client.post(change_url(key), form_data(programs=[foreign.pk], scopes=["nope:read"]))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"programs", "scopes"}
    key.refresh_from_db()
    assert key.scopes == ["programs:read"] and not key.programs.exists()


def test_a_legacy_key_without_workspace_can_be_given_one(operator_client):
    key = AgentKey(name="legacy", scopes=["programs:read"])
    services.agent_key_issue(key=key)
    workspace = WorkspaceFactory()
    response = operator_client.post(change_url(key), form_data(workspace=workspace.pk))
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.workspace == workspace


def test_the_revoke_action_revokes_through_the_service(operator_client):
    workspace = WorkspaceFactory()
    active, _ = agent_key_create(workspace=workspace, name="a", scopes=["programs:read"])
    revoked, _ = agent_key_create(workspace=workspace, name="b", scopes=["programs:read"])
    untouched, _ = agent_key_create(workspace=workspace, name="c", scopes=["programs:read"])
    agent_key_revoke(key=revoked)
    first_revocation = revoked.revoked_at
    with mock.patch("programs.admin.agent_key_revoke", wraps=agent_key_revoke) as revoke:
        response = operator_client.post(
            LIST, {"action": "revoke_selected", "_selected_action": [active.pk, revoked.pk]}
        )
    assert response.status_code == 302
    assert {call.kwargs["key"].pk for call in revoke.call_args_list} == {active.pk, revoked.pk}
    active.refresh_from_db(), revoked.refresh_from_db(), untouched.refresh_from_db()
    assert active.revoked_at is not None and revoked.revoked_at == first_revocation and untouched.revoked_at is None
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert "Revoked 1 agent key(s). 1 were already revoked." in text


def test_the_list_shows_masked_keys_and_filters_by_revocation_and_workspace(operator_client):
    workspace = WorkspaceFactory()
    active, _ = agent_key_create(workspace=workspace, name="active-key", scopes=["programs:read"])
    gone, _ = agent_key_create(workspace=workspace, name="gone-key", scopes=["partners:write"])
    elsewhere, _ = agent_key_create(workspace=WorkspaceFactory(), name="other-key", scopes=["programs:read"])
    agent_key_revoke(key=gone)
    page = operator_client.get(LIST).content.decode()
    assert active.masked in page and "partners:write" in page and active.digest not in page
    page = operator_client.get(LIST, {"revoked": "yes"}).content.decode()
    assert "gone-key" in page and "active-key" not in page
    page = operator_client.get(LIST, {"revoked": "no", "workspace__id__exact": workspace.pk}).content.decode()
    assert "active-key" in page and "gone-key" not in page and "other-key" not in page
