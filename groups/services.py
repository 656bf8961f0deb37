"""Writes of groups: making, changing and deleting a program's groups, and moving a partner between them.

A move changes the terms of the commissions earned from then on: each commission keeps the group, type and rate it
was computed under (commissions.models.Commission.group, commission_type, commission_rate)."""

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, RestrictedError
from django.utils import timezone
from django.utils.text import slugify

from core.errors import BadRequestError, ConflictError, NotFoundError
from programs.models import PartnerProgram, Program
from webhooks.events import event_emit
from webhooks.models import EventType
from webhooks.payloads import partner_group_changed_data

from . import messages
from .models import GroupChange, PartnerGroup, TierRule
from .selectors import default_group

# The columns an owner sets on a group (dashboard, admin, agent API): the rest is the service's.
GROUP_FIELDS = (
    "name",
    "commission_type",
    "commission_rate",
    "duration_months",
    "hold_days",
    "discount_type",
    "discount_percent",
    "discount_amount_cents",
    "discount_currency",
    "discount_duration",
    "discount_duration_months",
    "applications_open",
    "application_questions",
)
# The default group's terms are the program's own columns: they are changed through the program's settings.
DEFAULT_GROUP_TERMS = ("commission_type", "commission_rate", "duration_months", "hold_days")


def group_snapshot(group: PartnerGroup) -> dict[str, Any]:
    """The group as the audit trail records it, before and after a change."""
    columns = {name: getattr(group, name) for name in GROUP_FIELDS}
    return {"id": group.pk, "slug": group.slug, "is_default": group.is_default, **columns}


def _slug_free(program: Program, name: str) -> str:
    base = slugify(name)[:90] or "group"
    taken = set(PartnerGroup.objects.filter(program=program, slug__startswith=base).values_list("slug", flat=True))
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    return slug


def _checked(group: PartnerGroup) -> PartnerGroup:
    """Validates the group's columns as the model does; a refusal is a 400 naming the first field."""
    try:
        group.full_clean(exclude=["program", "slug"])
    except ValidationError as refusal:
        field, problems = next(iter(refusal.message_dict.items()))
        raise BadRequestError(f"{field}: {problems[0]}", code="invalid_group") from None
    return group


def group_create(*, program: Program, **fields: Any) -> PartnerGroup:
    """A new group of the program. Raises BadRequestError invalid_group, ConflictError group_name_taken."""
    unknown = set(fields) - set(GROUP_FIELDS)
    if unknown:
        raise BadRequestError(f"Unknown group field: {sorted(unknown)[0]}", code="invalid_group")
    default_group(program)
    group = PartnerGroup(program=program, **fields)
    group.slug = _slug_free(program, group.name)
    _checked(group)
    try:
        with transaction.atomic():
            group.save(force_insert=True)
    except IntegrityError:
        raise ConflictError(messages.GROUP_NAME_TAKEN.format(name=group.name), code="group_name_taken") from None
    return group


def group_update(*, group: PartnerGroup, **fields: Any) -> PartnerGroup:
    """Changes the group's columns (the default group's terms are the program's: refused here). Commissions already
    earned keep the terms they were computed under."""
    unknown = set(fields) - set(GROUP_FIELDS)
    if unknown:
        raise BadRequestError(f"Unknown group field: {sorted(unknown)[0]}", code="invalid_group")
    if group.is_default and set(fields) & set(DEFAULT_GROUP_TERMS):
        raise BadRequestError(
            "The default group's terms are the program's settings: change them there", code="invalid_group"
        )
    for name, value in fields.items():
        setattr(group, name, value)
    _checked(group)
    try:
        with transaction.atomic():
            group.save()
    except IntegrityError:
        raise ConflictError(messages.GROUP_NAME_TAKEN.format(name=group.name), code="group_name_taken") from None
    return group


def group_delete(*, group: PartnerGroup) -> None:
    """Deletes an empty group that is not the default. Its commissions keep their terms (their group becomes
    NULL, with type and rate kept); its tier rules and bonuses go with it."""
    if group.is_default:
        raise BadRequestError(messages.GROUP_DEFAULT_NOT_DELETABLE, code="default_group")
    count = PartnerProgram.objects.filter(group=group).count()
    if count:
        raise ConflictError(messages.GROUP_NOT_EMPTY.format(count=count), code="group_not_empty")
    try:
        group.delete()
    except (ProtectedError, RestrictedError):
        raise ConflictError(messages.GROUP_NOT_EMPTY.format(count=count), code="group_not_empty") from None


@dataclass(frozen=True)
class Move:
    """Why a partner is moved, as GroupChange records it."""

    reason: str
    actor: str = ""
    rule: TierRule | None = None
    period_key: str = ""
    figure: int | None = None
    # An import places partners as the old platform had them: history, announced to no receiver (as imported
    # commissions send nothing), still recorded as a GroupChange.
    announce: bool = True


def partner_move(*, enrolment: PartnerProgram, group: PartnerGroup, move: Move) -> GroupChange | None:
    """Puts the enrolled partner in `group` (of the same program) and records the change with its
    partner.group_changed event, in one transaction with the enrolment locked. None when the partner is in that
    group already, or when a tier rule has moved this partner in this period before (the constraint decides)."""
    if group.program_id != enrolment.program_id:
        raise NotFoundError(messages.GROUP_NOT_FOUND, code="group_not_found")
    with transaction.atomic():
        locked = PartnerProgram.objects.select_for_update(no_key=True).get(pk=enrolment.pk)
        current = locked.group or default_group(locked.program)
        if current.pk == group.pk:
            return None
        change = GroupChange(
            program_id=locked.program_id,
            partner_id=locked.partner_id,
            from_group=current,
            to_group=group,
            reason=move.reason,
            rule=move.rule,
            period_key=move.period_key,
            figure=move.figure,
            actor=move.actor[:200],
            created_at=timezone.now(),
        )
        try:
            with transaction.atomic():
                change.save(force_insert=True)
        except IntegrityError:
            return None
        locked.group = None if group.is_default else group
        locked.save(update_fields=["group"])
        enrolment.group = locked.group
        if not move.announce:
            return change
        event_emit(
            program_id=locked.program_id,
            type=EventType.PARTNER_GROUP_CHANGED,
            livemode=True,
            data=partner_group_changed_data(change=change, from_name=current.name, to_name=group.name),
            object_id=change.pk,
        )
    return change
