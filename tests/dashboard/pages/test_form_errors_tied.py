"""A refused form marks the field each error is about (aria-invalid) and ties it to its message (aria-describedby
naming the element that shows it): the form's own checks and the services' refusals, which name their field first
and are put on that field. The browser side (focus moves to the first invalid field) is in
tests/browser/test_accessibility_browser.py."""

import re

import pytest
from django.utils.html import escape

from core import messages as core_messages
from dashboard import messages as texts
from fraud.config import program_rules_read
from fraud.rules import THRESHOLD_RANGE, WINDOW_RANGE
from webhooks import messages as webhook_messages
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db


def tag_of(body: str, element_id: str) -> str:
    """The opening tag of the element with that id."""
    match = re.search(rf'<[a-z]+ [^>]*id="{re.escape(element_id)}"[^>]*>', body)
    assert match, f"no element #{element_id}"
    return match.group(0)


def text_of(body: str, element_id: str) -> str:
    start = body.index(f'id="{element_id}"')
    return body[body.index(">", start) + 1 : body.index("</", start)]


def invalid_ids(body: str) -> list[str]:
    """The ids of the elements marked invalid."""
    tags = re.findall(r'<[a-z]+ [^>]*aria-invalid="true"[^>]*>', body)
    return [match.group(1) for tag in tags if (match := re.search(r' id="([^"]+)"', tag))]


def rules_post(client, program, **changes: str) -> str:
    """The rules form as the page fills it in (every rule's current settings), with `changes`; refused."""
    data: dict[str, str] = {}
    for rule, config in program_rules_read(program.pk).rules.items():
        if config.enabled:
            data[f"{rule}-enabled"] = "on"
        data[f"{rule}-action"] = config.action
        if config.threshold is not None:
            data[f"{rule}-threshold"] = str(config.threshold)
        if config.window_minutes is not None:
            data[f"{rule}-window_minutes"] = str(config.window_minutes)
    response = client.post(f"/programs/{program.pk}/review/rules", {**data, **changes})
    assert response.status_code == 400
    return response.content.decode()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # Refused by fraud.config.rule_update: the service's message, put on the field it names.
        (
            "sale_velocity-threshold",
            "0",
            core_messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
        ),
        (
            "duplicate_click-window_minutes",
            str(WINDOW_RANGE[1] + 1),
            core_messages.FRAUD_RULE_WINDOW_RANGE.format(low=WINDOW_RANGE[0], high=WINDOW_RANGE[1]),
        ),
        # Refused by the form.
        ("visitor_velocity-threshold", "lots", texts.RULE_NUMBER_INVALID),
        ("bot-action", "block", texts.RULE_ACTION_INVALID),
    ],
)
def test_a_refused_rule_setting_marks_its_field_and_names_its_message(owner_client, program, field, value, message):
    body = rules_post(owner_client, program, **{field: value})
    tag = tag_of(body, f"id_{field}")
    assert 'aria-invalid="true"' in tag and f'aria-describedby="id_{field}_error"' in tag
    assert escape(message) in text_of(body, f"id_{field}_error")
    assert invalid_ids(body) == [f"id_{field}"]


def test_every_rule_control_has_a_label_naming_its_rule_and_column(member_client, program):
    body = member_client.get(f"/programs/{program.pk}/review/rules").content.decode()
    for control in re.findall(r'<(?:select|input type="number") id="([^"]+)"', body):
        label = re.search(rf'<label class="visually-hidden" for="{re.escape(control)}">[^<]+</label>', body)
        assert label, f"{control} has no label"
    assert (
        '<label class="visually-hidden" for="id_sale_velocity-threshold">Sales per click id: threshold</label>' in body
    )


def webhook_post(client, program, **fields) -> str:
    data = {"scope": "program", "url": "https://93.184.215.14/hook", "event_types": ["sale.created"], **fields}
    response = client.post(f"/programs/{program.pk}/webhooks/new", data)
    assert response.status_code == 400
    assert not WebhookEndpoint.objects.exists()
    return response.content.decode()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        # Refused by webhooks.services: put on the field the message names.
        ({"url": "http://127.0.0.1/hook"}, "url", webhook_messages.URL_PRIVATE.format(address="127.0.0.1")),
        ({"url": "ftp://hooks.example.com/"}, "url", webhook_messages.URL_INVALID),
        ({"url": "https://user:pw@hooks.example.com/"}, "url", webhook_messages.URL_CREDENTIALS),
        # Refused by the form.
        ({"description": "x" * 201}, "description", "Ensure this value has at most 200 characters (it has 201)."),
    ],
)
def test_a_refused_webhook_field_is_marked_and_tied_to_its_message(owner_client, program, fields, field, message):
    body = webhook_post(owner_client, program, **fields)
    tag = tag_of(body, f"id_{field}")
    assert 'aria-invalid="true"' in tag and f'aria-describedby="id_{field}_error"' in tag
    assert text_of(body, f"id_{field}_error") == escape(message)
    # The summary at the top repeats it, linked to the field.
    summary = body[body.index('id="form-errors"') :]
    assert f'<a href="#id_{field}">' in summary[:800] and escape(message) in summary[:800]


def test_no_event_type_marks_every_box_and_ties_each_to_the_message(owner_client, program):
    body = webhook_post(owner_client, program, event_types=[])
    boxes = re.findall(r'<input type="checkbox" name="event_types"[^>]*>', body)
    assert boxes and all(
        'aria-invalid="true"' in box and 'aria-describedby="id_event_types_error"' in box for box in boxes
    )
    assert text_of(body, "id_event_types_error") == escape(webhook_messages.EVENT_TYPES_REQUIRED)
    assert '<a href="#id_event_types_0">' in body
    assert 'aria-invalid="true"' not in tag_of(body, "id_url")
