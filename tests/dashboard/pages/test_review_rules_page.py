"""The fraud rules page: every rule with its description and settings, saved through fraud.config.rule_update
(only the rules that changed, all or none), its range refusals shown next to the rule with nothing saved, reset to
defaults, and changed by roles with program:manage only."""

import pytest
from django.utils.html import escape

from core import messages as core_messages
from dashboard import messages as texts
from fraud.config import program_rules_read
from fraud.models import RuleSetting
from fraud.rules import SPECS, THRESHOLD_RANGE, WINDOW_RANGE

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/review/rules"


def page(response) -> str:
    return response.content.decode()


def rule_row(body: str, rule: str) -> str:
    start = body.index(f'id="rule-{rule}"')
    return body[start : body.index("</tr>", start)]


def current_data(program) -> dict[str, str]:
    """The form as the page fills it in: every rule's current settings."""
    data: dict[str, str] = {}
    for rule, config in program_rules_read(program.pk).rules.items():
        if config.enabled:
            data[f"{rule}-enabled"] = "on"
        data[f"{rule}-action"] = config.action
        if config.threshold is not None:
            data[f"{rule}-threshold"] = str(config.threshold)
        if config.window_minutes is not None:
            data[f"{rule}-window_minutes"] = str(config.window_minutes)
    return data


def save(client, program, **changes: str | None):
    data = current_data(program)
    for name, value in changes.items():
        key = name.replace("__", "-")
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return client.post(url(program), data)


def test_it_lists_every_rule_with_its_description_and_defaults(member_client, program):
    body = page(member_client.get(url(program)))
    for rule, spec in SPECS.items():
        row = rule_row(body, rule)
        assert escape(spec.description) in row
        assert 'data-customised="false"' in row and "defaults" in row
        assert (f'name="{rule}-threshold"' in row) == (spec.threshold is not None)
        assert (f'name="{rule}-window_minutes"' in row) == (spec.window_minutes is not None)
    assert 'name="duplicate_click-enabled" checked' in body and 'name="paid_ads-enabled" checked' not in body
    # A member reads them, changes nothing.
    assert 'id="save-rules"' not in body and "disabled" in rule_row(body, "bot")


def test_saving_changes_only_the_rules_that_changed(owner_client, program):
    response = save(
        owner_client,
        program,
        paid_ads__enabled="on",
        sale_velocity__enabled="on",
        sale_velocity__threshold="7",
        sale_velocity__window_minutes="120",
        bot__action="hold",
    )
    assert response.status_code == 302 and response["Location"] == url(program)
    assert set(RuleSetting.objects.filter(program=program).values_list("rule", flat=True)) == {
        "paid_ads",
        "sale_velocity",
        "bot",
    }
    rules = program_rules_read(program.pk)
    assert rules.get("paid_ads").enabled and rules.get("paid_ads").action == "hold"
    velocity = rules.get("sale_velocity")
    assert velocity.enabled and velocity.threshold == 7 and velocity.window_minutes == 120
    assert rules.get("bot").action == "hold" and not rules.get("duplicate_click").customised

    body = page(owner_client.get(response["Location"]))
    assert "Fraud rules saved: " in body
    assert 'data-customised="true"' in rule_row(body, "sale_velocity")
    assert 'data-reset="sale_velocity"' in body and 'data-reset="duplicate_click"' not in body
    assert 'name="sale_velocity-threshold" value="7"' in body


def test_turning_a_rule_off_saves_it(owner_client, program):
    save(owner_client, program, duplicate_click__enabled=None)
    assert not program_rules_read(program.pk).get("duplicate_click").enabled


def test_saving_unchanged_rules_writes_nothing(owner_client, program):
    response = save(owner_client, program)
    assert response.status_code == 302 and not RuleSetting.objects.exists()
    assert texts.RULES_UNCHANGED in page(owner_client.get(url(program)))


@pytest.mark.parametrize(
    ("changes", "rule", "message"),
    [
        (
            {"sale_velocity__threshold": "0"},
            "sale_velocity",
            core_messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
        ),
        (
            {"visitor_velocity__threshold": str(THRESHOLD_RANGE[1] + 1)},
            "visitor_velocity",
            core_messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
        ),
        (
            {"duplicate_click__window_minutes": str(WINDOW_RANGE[1] + 1)},
            "duplicate_click",
            core_messages.FRAUD_RULE_WINDOW_RANGE.format(low=WINDOW_RANGE[0], high=WINDOW_RANGE[1]),
        ),
        ({"sale_velocity__threshold": "lots"}, "sale_velocity", texts.RULE_NUMBER_INVALID),
        ({"sale_velocity__threshold": "9" * 5000}, "sale_velocity", texts.RULE_NUMBER_INVALID),
        ({"sale_velocity__threshold": None}, "sale_velocity", texts.RULE_THRESHOLD_REQUIRED),
        ({"visitor_velocity__window_minutes": ""}, "visitor_velocity", texts.RULE_WINDOW_REQUIRED),
        ({"bot__action": "block"}, "bot", texts.RULE_ACTION_INVALID),
    ],
)
def test_a_refused_setting_is_shown_by_its_rule_and_nothing_is_saved(owner_client, program, changes, rule, message):
    # A valid change to another rule in the same form is not saved either.
    response = save(owner_client, program, paid_ads__enabled="on", **changes)
    assert response.status_code == 400
    body = page(response)
    errors = body[body.index(f'data-rule-errors="{rule}"') :]
    assert escape(message) in errors[: errors.index("</div>")]
    assert texts.RULES_NOT_SAVED in body
    assert not RuleSetting.objects.exists()
    assert not program_rules_read(program.pk).get("paid_ads").enabled


def test_reset_puts_a_rule_back_on_its_defaults(owner_client, program):
    save(owner_client, program, sale_velocity__enabled="on", sale_velocity__threshold="9")
    save(owner_client, program, bot__enabled=None)
    response = owner_client.post(f"{url(program)}/reset", {"rule": "sale_velocity"})
    assert response.status_code == 302 and response["Location"] == url(program)
    assert list(RuleSetting.objects.values_list("rule", flat=True)) == ["bot"]
    velocity = program_rules_read(program.pk).get("sale_velocity")
    assert not velocity.customised and velocity.threshold == SPECS["sale_velocity"].threshold
    assert texts.RULE_RESET.format(rule="Sales per click id") in page(owner_client.get(url(program)))


@pytest.mark.parametrize("rule", ["", "nonsense", "x" * 10_000])
def test_resetting_an_unknown_rule_says_so(owner_client, program, rule):
    response = owner_client.post(f"{url(program)}/reset", {"rule": rule})
    assert response.status_code == 302
    body = page(owner_client.get(url(program)))
    assert escape(core_messages.FRAUD_RULE_UNKNOWN.format(rule=rule[:64])) in body


def test_a_member_cannot_change_or_reset_rules(member_client, program):
    RuleSetting.objects.create(program=program, rule="bot", enabled=False, action="flag")
    assert save(member_client, program, paid_ads__enabled="on").status_code == 403
    assert member_client.post(f"{url(program)}/reset", {"rule": "bot"}).status_code == 403
    assert list(RuleSetting.objects.values_list("rule", "enabled")) == [("bot", False)]


def test_another_programs_rules_are_out_of_reach(outsider_client, program):
    assert outsider_client.get(url(program)).status_code == 403
    assert save(outsider_client, program, paid_ads__enabled="on").status_code == 403
    assert not RuleSetting.objects.exists()


def test_the_rules_page_costs_few_queries(owner_client, program, django_assert_num_queries):
    RuleSetting.objects.create(program=program, rule="bot", enabled=False, action="flag")
    # 1 session, 2 user, 3 program, 4-5 memberships, 6 the rule settings.
    with django_assert_num_queries(6):
        assert owner_client.get(url(program)).status_code == 200
