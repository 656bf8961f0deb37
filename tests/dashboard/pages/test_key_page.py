"""The API key page: masked keys for everyone, the regenerate button and its confirmation dialog for owners only,
and the rotation warning while the key is flagged or after it retired."""

from datetime import timedelta

import pytest
from django.utils import timezone

from programs.models import ProgramKey

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/key"


def test_it_shows_the_masked_keys_and_never_a_real_one(member_client, program):
    page = member_client.get(url(program)).content.decode()
    for key in ProgramKey.objects.filter(program=program):
        assert key.masked in page
    assert program.raw_api_key not in page and program.raw_test_api_key not in page
    assert 'id="rotation-warning"' not in page


def test_the_owner_gets_the_regenerate_buttons_and_the_confirmation_dialog(owner_client, program):
    page = owner_client.get(url(program)).content.decode()
    assert 'data-regenerate-mode="live"' in page and 'data-regenerate-mode="test"' in page
    assert '<dialog id="regenerate-dialog"' in page
    assert f'data-regenerate-url="/api/programs/{program.pk}/regenerate-key"' in page
    assert "It will not be shown again." in page
    assert 'src="/static/js/dashboard-key.js"' in page


@pytest.mark.parametrize("who", ["admin_role_client", "member_client"])
def test_other_roles_get_no_regenerate_button(request, program, who):
    page = request.getfixturevalue(who).get(url(program)).content.decode()
    assert "data-regenerate-mode" not in page and "regenerate-dialog" not in page
    assert "dashboard-key.js" not in page
    assert "Only workspace owners can regenerate keys." in page


def flag(program, deadline):
    ProgramKey.objects.filter(program=program, mode="live").update(
        rotation_marked_at=timezone.now() - timedelta(days=1), rotation_deadline=deadline
    )


def test_a_flagged_key_shows_its_deadline(owner_client, member_client, program):
    deadline = timezone.now() + timedelta(days=10)
    flag(program, deadline)
    page = owner_client.get(url(program)).content.decode()
    assert 'id="rotation-warning"' in page
    assert f"must be rotated before {deadline:%Y-%m-%d %H:%M} UTC" in page
    assert "Regenerate it below" in page
    assert "Ask a workspace owner" in member_client.get(url(program)).content.decode()


def test_a_retired_key_says_so(owner_client, program):
    deadline = timezone.now() - timedelta(hours=1)
    flag(program, deadline)
    page = owner_client.get(url(program)).content.decode()
    assert f"This key was retired on {deadline:%Y-%m-%d %H:%M} UTC." in page
    assert '<span class="badge bad">retired</span>' in page
