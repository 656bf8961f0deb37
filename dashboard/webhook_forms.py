"""The webhooks pages' forms. They only read the posted fields into types; what a URL or a list of event types
may be is decided by webhooks.services, whose WebhookRefused message the page shows on the form."""

from django import forms

from webhooks.models import ALL_EVENT_TYPES, EventType

EVENT_TYPE_CHOICES = [(ALL_EVENT_TYPES, "All event types, including ones added later"), *EventType.choices]
SCOPE_PROGRAM = "program"
SCOPE_WORKSPACE = "workspace"


class EndpointForm(forms.Form):
    # Not a URLField: webhooks.addresses.url_check is the one rule (and message) for what a webhook URL may be.
    url = forms.CharField(max_length=2000, required=False, strip=True)
    # Not required here: with none checked the service answers its own message (EVENT_TYPES_REQUIRED).
    event_types = forms.MultipleChoiceField(
        choices=EVENT_TYPE_CHOICES, required=False, widget=forms.CheckboxSelectMultiple
    )
    include_test_events = forms.BooleanField(required=False)
    description = forms.CharField(max_length=200, required=False, strip=True)


class EndpointCreateForm(EndpointForm):
    scope = forms.ChoiceField(
        choices=[(SCOPE_PROGRAM, "This program only"), (SCOPE_WORKSPACE, "Every program of the workspace")],
        initial=SCOPE_PROGRAM,
        widget=forms.RadioSelect,
    )


class EndpointEditForm(EndpointForm):
    enabled = forms.BooleanField(required=False)
