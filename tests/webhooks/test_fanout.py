"""Which endpoints an event goes to: the program's and its workspace-wide ones, by event type, test events only
where asked, never to disabled endpoints or ones made after the event; once however often it is fanned out."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import ProgramFactory, WebhookEndpointFactory
from tests.webhooks.builders import emit
from webhooks.fanout import event_fan_out
from webhooks.models import WebhookDelivery, WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory()


def receivers(event: WebhookEvent) -> set[int]:
    event_fan_out(event_id=event.pk)
    return set(WebhookDelivery.objects.filter(event=event).values_list("endpoint_id", flat=True))


def test_it_goes_to_the_programs_endpoints_and_its_workspaces_not_to_others(program):
    own = WebhookEndpointFactory(program=program)
    workspace_wide = WebhookEndpointFactory(program=None, workspace=program.workspace)
    sibling_program = WebhookEndpointFactory(program=ProgramFactory(workspace=program.workspace))
    other_workspace = WebhookEndpointFactory(program=None, workspace=ProgramFactory().workspace)
    assert receivers(emit(program)) == {own.pk, workspace_wide.pk}
    assert sibling_program.pk and other_workspace.pk
    assert receivers(emit(sibling_program.program)) == {sibling_program.pk, workspace_wide.pk}


def test_it_goes_only_to_endpoints_that_want_the_type(program):
    sales = WebhookEndpointFactory(program=program, event_types=["sale.created", "refund.applied"])
    everything = WebhookEndpointFactory(program=program, event_types=["*"])
    leads = WebhookEndpointFactory(program=program, event_types=["lead.created"])
    assert receivers(emit(program, "sale.created")) == {sales.pk, everything.pk}
    assert receivers(emit(program, "lead.created")) == {leads.pk, everything.pk}
    assert receivers(emit(program, "partner.enrolled")) == {everything.pk}


def test_test_events_go_only_to_endpoints_that_take_them(program):
    live_only = WebhookEndpointFactory(program=program)
    takes_tests = WebhookEndpointFactory(program=program, include_test_events=True)
    workspace_takes_tests = WebhookEndpointFactory(program=None, workspace=program.workspace, include_test_events=True)
    assert receivers(emit(program, livemode=False)) == {takes_tests.pk, workspace_takes_tests.pk}
    assert receivers(emit(program)) == {live_only.pk, takes_tests.pk, workspace_takes_tests.pk}


def test_disabled_endpoints_get_nothing(program):
    enabled = WebhookEndpointFactory(program=program)
    WebhookEndpointFactory(program=program, enabled=False)
    WebhookEndpointFactory(program=None, workspace=program.workspace, enabled=False)
    assert receivers(emit(program)) == {enabled.pk}


def test_an_endpoint_made_after_the_event_gets_nothing(program, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    before = WebhookEndpointFactory(program=program)
    event = emit(program)
    time_machine.shift(timedelta(seconds=1))
    WebhookEndpointFactory(program=program)
    WebhookEndpointFactory(program=None, workspace=program.workspace)
    assert receivers(event) == {before.pk}


def test_it_fans_out_once_however_often_asked(program):
    endpoint = WebhookEndpointFactory(program=program)
    event = emit(program)
    first = event_fan_out(event_id=event.pk)
    assert first == [WebhookDelivery.objects.get(event=event, endpoint=endpoint).pk]
    assert event_fan_out(event_id=event.pk) == []
    assert WebhookDelivery.objects.count() == 1
    event.refresh_from_db()
    assert event.fanned_out_at is not None


def test_an_event_no_endpoint_wants_is_still_marked_fanned_out(program):
    WebhookEndpointFactory(program=program, event_types=["lead.created"])
    event = emit(program)
    assert event_fan_out(event_id=event.pk) == []
    event.refresh_from_db()
    assert event.fanned_out_at is not None and not WebhookDelivery.objects.exists()
