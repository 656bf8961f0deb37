"""A program's effective rules: its RuleSetting rows over the defaults of fraud.rules.SPECS.

The click and sale paths read them for every event, so each process keeps them FRAUD_RULES_CACHE_SECONDS
(default 5). Saving a setting clears this process's copy at once; other processes see it within the TTL."""

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypedDict

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import messages
from core.errors import BadRequestError

from .models import RuleSetting
from .rules import SPECS, THRESHOLD_RANGE, WINDOW_RANGE, Action, Rule


@dataclass(frozen=True)
class RuleConfig:
    rule: str
    enabled: bool
    action: str
    threshold: int | None
    window_minutes: int | None
    # False while the rule runs on its defaults (no setting saved).
    customised: bool = False

    @property
    def holds(self) -> bool:
        return self.enabled and self.action == Action.HOLD


@dataclass(frozen=True)
class ProgramRules:
    program_id: int
    rules: dict[str, RuleConfig]

    def get(self, rule: str) -> RuleConfig:
        return self.rules[rule]

    def on(self, rule: str) -> RuleConfig | None:
        """The rule's settings when it is enabled, else None."""
        config = self.rules[rule]
        return config if config.enabled else None


def default_rules() -> dict[str, RuleConfig]:
    return {
        rule: RuleConfig(
            rule=rule,
            enabled=spec.enabled,
            action=spec.action,
            threshold=spec.threshold,
            window_minutes=spec.window_minutes,
        )
        for rule, spec in SPECS.items()
    }


_cache: dict[int, tuple[float, ProgramRules]] = {}


def program_rules(program_id: int) -> ProgramRules:
    """The program's rules, from this process's cache when fresh."""
    now = time.monotonic()
    hit = _cache.get(program_id)
    if hit is not None and hit[0] > now:
        return hit[1]
    rules = program_rules_read(program_id)
    if settings.FRAUD_RULES_CACHE_SECONDS > 0:
        _cache[program_id] = (now + settings.FRAUD_RULES_CACHE_SECONDS, rules)
    return rules


def program_rules_read(program_id: int) -> ProgramRules:
    """The program's rules as stored now (one query)."""
    rules = default_rules()
    for setting in RuleSetting.objects.filter(program_id=program_id):
        if setting.rule in rules:
            rules[setting.rule] = _config_of(setting)
    return ProgramRules(program_id=program_id, rules=rules)


def _config_of(setting: RuleSetting) -> RuleConfig:
    """A saved setting as the rule runs it: a threshold or window the rule does not have is none."""
    spec = SPECS[setting.rule]
    return RuleConfig(
        rule=setting.rule,
        enabled=setting.enabled,
        action=setting.action,
        threshold=setting.threshold if spec.threshold is not None else None,
        window_minutes=setting.window_minutes if spec.window_minutes is not None else None,
        customised=True,
    )


def program_rules_clear(**_signal_kwargs: object) -> None:
    """Empties this process's cache now and, inside a transaction, again when it commits: a click served in
    between (a threaded worker) could have cached the rules still committed."""
    _cache.clear()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(_cache.clear)


def rule_update(
    *,
    program_id: int,
    rule: str,
    enabled: bool | None = None,
    action: str | None = None,
    threshold: int | None = None,
    window_minutes: int | None = None,
) -> RuleConfig:
    """Changes one rule of a program; what is not given stays as it is. Raises BadRequestError for an unknown
    rule or action, or a threshold or window the rule does not have or out of range. Takes effect for new
    clicks and sales (within FRAUD_RULES_CACHE_SECONDS in other processes); nothing recorded is re-judged."""
    if rule not in SPECS:
        raise BadRequestError(messages.FRAUD_RULE_UNKNOWN.format(rule=rule))
    spec = SPECS[rule]
    if action is not None and action not in Action.values:
        raise BadRequestError(messages.FRAUD_RULE_ACTION_INVALID)
    if threshold is not None:
        if spec.threshold is None:
            raise BadRequestError(messages.FRAUD_RULE_NO_THRESHOLD.format(rule=rule))
        if not THRESHOLD_RANGE[0] <= threshold <= THRESHOLD_RANGE[1]:
            raise BadRequestError(
                messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1])
            )
    if window_minutes is not None:
        if spec.window_minutes is None:
            raise BadRequestError(messages.FRAUD_RULE_NO_WINDOW.format(rule=rule))
        if not WINDOW_RANGE[0] <= window_minutes <= WINDOW_RANGE[1]:
            low, high = WINDOW_RANGE
            raise BadRequestError(messages.FRAUD_RULE_WINDOW_RANGE.format(low=low, high=high))

    def changed(current: RuleConfig) -> RuleConfig:
        return replace(
            current,
            enabled=current.enabled if enabled is None else enabled,
            action=current.action if action is None else action,
            threshold=current.threshold if threshold is None else threshold,
            window_minutes=current.window_minutes if window_minutes is None else window_minutes,
            customised=True,
        )

    # The setting is locked before it is read: two saves of one rule at once (one turning it off, one changing its
    # threshold) would otherwise each write the other's setting back as it read it, and one change would be lost.
    # A rule on its defaults has no row yet: the first save inserts it, and a second one waits on the unique index
    # until then, and then locks and reads that row.
    with transaction.atomic():
        fresh = changed(default_rules()[rule])
        setting, created = RuleSetting.objects.select_for_update().get_or_create(
            program_id=program_id, rule=rule, defaults=_columns(fresh)
        )
        if created:
            return fresh
        updated = changed(_config_of(setting))
        columns = _columns(updated)
        for name, value in columns.items():
            setattr(setting, name, value)
        setting.save(update_fields=list(columns))
    return updated


def _columns(config: RuleConfig) -> dict[str, object]:
    return {
        "enabled": config.enabled,
        "action": config.action,
        "threshold": config.threshold,
        "window_minutes": config.window_minutes,
        "updated_at": timezone.now(),
    }


class RuleChanges(TypedDict, total=False):
    """Some of one rule's settings, as rule_update takes them; a setting left out stays as it is."""

    enabled: bool
    action: str
    threshold: int
    window_minutes: int


class RulesRefused(Exception):
    """rules_update refused some of the rules and saved none; `refusals` gives each refused rule's message."""

    def __init__(self, refusals: dict[str, str]) -> None:
        super().__init__(refusals)
        self.refusals = refusals


def rules_update(*, program_id: int, changes: Mapping[str, RuleChanges]) -> list[str]:
    """Changes several rules of a program, all or none, in one transaction: rule_update for each, in the order
    given. Returns the rules changed. Raises RulesRefused with the message of every rule refused (each is tried,
    so a page can show them all at once); nothing is saved then."""
    refusals: dict[str, str] = {}
    with transaction.atomic():
        for rule, change in changes.items():
            try:
                rule_update(program_id=program_id, rule=rule, **change)
            except BadRequestError as refused:
                refusals[rule] = refused.message
        if refusals:
            raise RulesRefused(refusals)  # out of the transaction: the rules changed before roll back
    return list(changes)


def rule_reset(*, program_id: int, rule: str) -> RuleConfig:
    """Puts one rule back on its defaults."""
    if rule not in SPECS:
        raise BadRequestError(messages.FRAUD_RULE_UNKNOWN.format(rule=rule))
    # The delete's post_delete signal empties the cached rules (fraud.apps).
    RuleSetting.objects.filter(program_id=program_id, rule=rule).delete()
    return default_rules()[rule]


__all__ = [
    "ProgramRules",
    "Rule",
    "RuleChanges",
    "RuleConfig",
    "RulesRefused",
    "program_rules",
    "rule_reset",
    "rule_update",
    "rules_update",
]
