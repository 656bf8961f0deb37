"""The webhooks pages' forms. They only read the posted fields into types; what a URL or a list of event types
may be is decided by webhooks.services, whose WebhookRefused message the page shows on the field it concerns."""

from typing import ClassVar

from django import forms

from webhooks import messages as webhook_messages
from webhooks.models import ALL_EVENT_TYPES, EventType

from .form_errors import FieldErrorsForm

EVENT_TYPE_CHOICES = [(ALL_EVENT_TYPES, "All event types, including ones added later"), *EventType.choices]
SCOPE_PROGRAM = "program"
SCOPE_WORKSPACE = "workspace"


class EndpointForm(FieldErrorsForm):
    refusal_openings: ClassVar[dict[str, str]] = {webhook_messages.EVENT_TYPE_UNKNOWN.split("{", 1)[0]: "event_types"}

    # Not a URLField: webhooks.addresses.url_check is the one rule (and message) for what a webhook URL may be.
    url = forms.CharField(
        label="URL",
        max_length=2000,
        required=False,
        strip=True,
        widget=forms.TextInput(attrs={"placeholder": "https://example.com/webhooks", "size": 50, "inputmode": "url"}),
    )
    # Not required here: with none checked the service answers its own message (EVENT_TYPES_REQUIRED).
    event_types = forms.MultipleChoiceField(
        label="Event types", choices=EVENT_TYPE_CHOICES, required=False, widget=forms.CheckboxSelectMultiple
    )
    include_test_events = forms.BooleanField(label="Include test events", required=False)
    description = forms.CharField(
        label="Description", max_length=200, required=False, strip=True, widget=forms.TextInput(attrs={"size": 50})
    )


class EndpointCreateForm(EndpointForm):
    scope = forms.ChoiceField(
        label="Scope",
        choices=[(SCOPE_PROGRAM, "This program only"), (SCOPE_WORKSPACE, "Every program of the workspace")],
        initial=SCOPE_PROGRAM,
        widget=forms.RadioSelect,
    )


class EndpointEditForm(EndpointForm):
    enabled = forms.BooleanField(label="Enabled", required=False)
