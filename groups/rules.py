"""Writes of a group's tier rules and bonuses (dashboard, admin, agent API). A rule or bonus changes nothing already
recorded: a deleted rule's moves keep their GroupChange (its rule becomes NULL), a bonus already paid cannot be
deleted (its awards hold it: deactivate it instead)."""

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import RestrictedError

from core.errors import BadRequestError, ConflictError, NotFoundError

from . import messages
from .models import Bonus, PartnerGroup, TierRule

TIER_RULE_FIELDS = ("target", "direction", "metric", "period", "threshold", "is_active")
BONUS_FIELDS = ("name", "metric", "period", "threshold", "amount_cents", "currency", "is_active")

TIER_TARGET_SELF = "target: a tier rule moves partners to another group"
TIER_PERIOD_CALENDAR = "period: a tier rule is judged per calendar month or quarter"
BONUS_PAID = "This bonus has been paid to partners: deactivate it instead of deleting it"


def _refused(refusal: ValidationError, code: str) -> BadRequestError:
    """The model's first complaint as one message naming its field ("threshold: ..."), as groups.services does."""
    field, problems = next(iter(refusal.message_dict.items()))
    return BadRequestError(f"{field}: {problems[0]}", code=code)


def _unknown(fields: dict[str, Any], allowed: tuple[str, ...], code: str) -> None:
    unknown = set(fields) - set(allowed)
    if unknown:
        raise BadRequestError(f"Unknown field: {sorted(unknown)[0]}", code=code)


def tier_rule_create(*, group: PartnerGroup, **fields: Any) -> TierRule:
    """A rule moving the group's partners to `target` (a PartnerGroup of the same program). Raises BadRequestError
    invalid_tier_rule, NotFoundError group_not_found (a target of another program)."""
    _unknown(fields, TIER_RULE_FIELDS, "invalid_tier_rule")
    target = fields.get("target")
    if not isinstance(target, PartnerGroup) or target.program_id != group.program_id:
        raise NotFoundError(messages.GROUP_NOT_FOUND, code="group_not_found")
    if target.pk == group.pk:
        raise BadRequestError(TIER_TARGET_SELF, code="invalid_tier_rule")
    rule = TierRule(group=group, **fields)
    # The model's constraint names no field; this says which.
    if rule.period not in ("month", "quarter"):
        raise BadRequestError(TIER_PERIOD_CALENDAR, code="invalid_tier_rule")
    try:
        rule.full_clean(exclude=["group", "target"], validate_constraints=False)
    except ValidationError as refusal:
        raise _refused(refusal, "invalid_tier_rule") from None
    rule.save(force_insert=True)
    return rule


def tier_rule_delete(*, rule: TierRule) -> None:
    """Deletes the rule; the moves it made stay recorded (GroupChange.rule becomes NULL)."""
    rule.delete()


def bonus_create(*, group: PartnerGroup, **fields: Any) -> Bonus:
    """A one-off bonus of the group. Raises BadRequestError invalid_bonus."""
    _unknown(fields, BONUS_FIELDS, "invalid_bonus")
    bonus = Bonus(group=group, **fields)
    try:
        bonus.full_clean(exclude=["group"], validate_constraints=False)
    except ValidationError as refusal:
        raise _refused(refusal, "invalid_bonus") from None
    bonus.save(force_insert=True)
    return bonus


def bonus_delete(*, bonus: Bonus) -> None:
    """Deletes a bonus never paid. Raises ConflictError bonus_paid when awards hold it (BonusAward.bonus RESTRICT)."""
    try:
        with transaction.atomic():
            bonus.delete()
    except RestrictedError:
        raise ConflictError(BONUS_PAID, code="bonus_paid") from None


def tier_rule_active_set(*, rule: TierRule, is_active: bool) -> bool:
    """Turns the tier rule on or off (an inactive one moves no one). True when it changed."""
    changed = TierRule.objects.filter(pk=rule.pk).exclude(is_active=is_active).update(is_active=is_active)
    rule.is_active = is_active
    return bool(changed)


def bonus_active_set(*, bonus: Bonus, is_active: bool) -> bool:
    """Turns the bonus on or off (an inactive one pays no more awards). True when it changed."""
    changed = Bonus.objects.filter(pk=bonus.pk).exclude(is_active=is_active).update(is_active=is_active)
    bonus.is_active = is_active
    return bool(changed)
