"""fraud.config's rule writes: several rules saved all or none (rules_update), and two saves of one rule at once
(PostgreSQL: real row locks) keeping both changes, whether the rule had a saved setting or ran on its defaults."""

import threading
from unittest import mock

import pytest

from core import messages
from fraud import config
from fraud.models import RuleSetting
from fraud.rules import SPECS, THRESHOLD_RANGE, Rule
from tests.helpers import run_together, wait_for_lock_waiters


@pytest.mark.django_db
def test_several_rules_are_saved_all_or_none(program):
    saved = config.rules_update(
        program_id=program.pk, changes={Rule.PAID_ADS: {"enabled": True}, Rule.BOT: {"action": "hold"}}
    )
    assert saved == [Rule.PAID_ADS, Rule.BOT]
    assert set(RuleSetting.objects.values_list("rule", flat=True)) == {Rule.PAID_ADS, Rule.BOT}

    with pytest.raises(config.RulesRefused) as refused:
        config.rules_update(
            program_id=program.pk,
            changes={Rule.DUPLICATE_CLICK: {"enabled": False}, Rule.BOT: {"threshold": 5}},
        )
    assert refused.value.refusals == {Rule.BOT: messages.FRAUD_RULE_NO_THRESHOLD.format(rule=Rule.BOT)}
    assert not RuleSetting.objects.filter(rule=Rule.DUPLICATE_CLICK).exists(), "the rule that passed rolled back"


def save_one_rule_twice_at_once(program_id: int) -> None:
    """Turns the sale velocity rule on and raises its threshold in two saves at once. The first holds the rule's
    lock at the moment it writes, until the second queues behind it (or, were the lock missing, has finished
    having read the rule before the first wrote it)."""
    holding = threading.Event()
    rival_done = threading.Event()
    first = threading.local()
    save = RuleSetting.save

    def save_while_the_rival_queues(setting: RuleSetting, *args: object, **kwargs: object) -> None:
        if getattr(first, "thread", False) and not holding.is_set():
            holding.set()
            wait_for_lock_waiters(1, or_until=rival_done.is_set)
        save(setting, *args, **kwargs)  # type: ignore[arg-type]

    def change(n: int) -> config.RuleConfig:
        if n == 0:
            first.thread = True
            return config.rule_update(program_id=program_id, rule=Rule.SALE_VELOCITY, enabled=True)
        assert holding.wait(timeout=30)
        try:
            return config.rule_update(program_id=program_id, rule=Rule.SALE_VELOCITY, threshold=THRESHOLD_RANGE[1])
        finally:
            rival_done.set()

    with mock.patch.object(RuleSetting, "save", save_while_the_rival_queues):
        run_together(2, change)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_saves_of_a_saved_rule_at_once_keep_both_changes(program):
    assert not SPECS[Rule.SALE_VELOCITY].enabled
    config.rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, action="flag")
    save_one_rule_twice_at_once(program.pk)
    setting = RuleSetting.objects.get(program=program, rule=Rule.SALE_VELOCITY)
    assert (setting.enabled, setting.threshold, setting.action) == (True, THRESHOLD_RANGE[1], "flag")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_first_saves_of_a_rule_at_once_keep_both_changes(program):
    save_one_rule_twice_at_once(program.pk)
    setting = RuleSetting.objects.get(program=program, rule=Rule.SALE_VELOCITY)
    assert (setting.enabled, setting.threshold) == (True, THRESHOLD_RANGE[1])
