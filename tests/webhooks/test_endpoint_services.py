"""webhooks.services.endpoint_create: a program endpoint belongs to a program of its own workspace."""

import pytest

from tests.factories import ProgramFactory, WorkspaceFactory
from webhooks import messages
from webhooks.models import WebhookEndpoint
from webhooks.services import WebhookRefused, endpoint_create

pytestmark = pytest.mark.django_db


def test_it_refuses_a_program_of_another_workspace_and_makes_nothing():
    program = ProgramFactory()
    other = WorkspaceFactory()
    with pytest.raises(WebhookRefused, match=messages.PROGRAM_OTHER_WORKSPACE):
        endpoint_create(
            workspace_id=other.pk, program_id=program.pk, url="https://93.184.216.34/hook", event_types=["*"]
        )
    assert not WebhookEndpoint.objects.exists()


def test_it_makes_a_program_endpoint_and_a_workspace_wide_one():
    program = ProgramFactory()
    own = endpoint_create(
        workspace_id=program.workspace_id, program_id=program.pk, url="https://93.184.216.34/a", event_types=["*"]
    )
    wide = endpoint_create(
        workspace_id=program.workspace_id, program_id=None, url="https://93.184.216.34/b", event_types=["*"]
    )
    assert (own.endpoint.program_id, wide.endpoint.program_id) == (program.pk, None)
    assert own.secret.startswith("whsec_") and own.secret != wide.secret
