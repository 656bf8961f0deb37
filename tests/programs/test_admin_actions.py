import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages

from programs.keys import key_digest
from programs.models import AgentKey, ProgramKey
from tests.factories import ProgramFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client):
    user = get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123")
    client.force_login(user)
    return client


def shown_keys(response, prefix: str) -> list[str]:
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    return re.findall(rf"({re.escape(prefix)}[A-Za-z0-9_-]{{20,}})", text)


def test_issuing_an_agent_key_shows_it_once_and_stores_only_its_hash(operator_client):
    workspace = WorkspaceFactory()
    response = operator_client.post(
        "/admin/programs/agentkey/add/",
        {"name": "ops bot", "workspace": workspace.pk, "scopes": ["programs:read", "commissions:write"]},
    )
    assert response.status_code == 302
    [raw] = shown_keys(response, "agt_")
    key = AgentKey.objects.get()
    assert key.digest == key_digest(raw) and key.scopes == ["programs:read", "commissions:write"]
    assert raw not in {key.digest, key.last4, key.name}
    first = operator_client.get(f"/admin/programs/agentkey/{key.pk}/change/").content.decode()
    assert raw in first  # the one-time message
    again = operator_client.get(f"/admin/programs/agentkey/{key.pk}/change/").content.decode()
    assert raw not in again and key.masked in again


def test_the_regenerate_action_shows_the_new_key_once(operator_client):
    program = ProgramFactory()
    response = operator_client.post(
        "/admin/programs/program/", {"action": "regenerate_live_key", "_selected_action": [program.pk]}
    )
    [raw] = shown_keys(response, "aff_")
    assert ProgramKey.objects.get(program=program, mode="live").digest == key_digest(raw)


def test_the_rotation_action_asks_for_a_deadline_then_marks_the_key(operator_client):
    program = ProgramFactory()
    form = operator_client.post(
        "/admin/programs/program/", {"action": "mark_live_key_for_rotation", "_selected_action": [program.pk]}
    )
    assert form.status_code == 200 and b"deadline" in form.content
    done = operator_client.post(
        "/admin/programs/program/",
        {
            "action": "mark_live_key_for_rotation",
            "_selected_action": [program.pk],
            "apply": "1",
            "deadline": "2031-01-01 00:00:00",
        },
    )
    assert done.status_code == 302
    key = ProgramKey.objects.get(program=program, mode="live")
    assert key.rotation_deadline.year == 2031 and key.rotation_marked_at is not None


def test_adding_a_program_in_admin_creates_its_keys_and_shows_them_once(operator_client):
    workspace = ProgramFactory().workspace
    response = operator_client.post(
        "/admin/programs/program/add/",
        {
            "workspace": workspace.pk,
            "name": "Admin made",
            "domain": "admin.example.com",
            "commission_type": "percent",
            "commission_rate": "15",
            "duration_months": 0,
            "cookie_duration": 30,
            "hold_days": 30,
            "lead_auth": "browser_allowed",
            "keys-TOTAL_FORMS": 0,
            "keys-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302
    assert len(shown_keys(response, "aff_")) == 2


@pytest.mark.parametrize(
    "path",
    [
        "/admin/programs/workspace/",
        "/admin/programs/membership/",
        "/admin/programs/program/",
        "/admin/programs/programkey/",
        "/admin/programs/agentkey/",
        "/admin/programs/partner/",
        "/admin/programs/partnerprogram/",
        "/admin/programs/referrallink/",
        "/admin/tracking/customer/",
        "/admin/tracking/clickevent/",
        "/admin/tracking/leadevent/",
        "/admin/tracking/saleevent/",
        "/admin/tracking/trackinglog/",
        "/admin/commissions/commission/",
        "/admin/commissions/ledgerentry/",
        "/admin/commissions/withdrawal/",
        "/admin/commissions/notification/",
    ],
)
def test_every_model_has_an_admin_page(operator_client, path):
    ProgramFactory()
    assert operator_client.get(path).status_code == 200
