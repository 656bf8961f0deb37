"""The terms a partner earns under: their group's in the program (the default group's are the program's own
columns). Read with the enrolment the sale already reads, and cached with it for LINK_CACHE_SECONDS as the
enrolment always was (tracking.link_cache): saving an enrolment or a group clears this process's cache at once;
other server processes take a move or a change of terms within those seconds."""

import time
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

from programs.models import PartnerProgram, Program


@dataclass(frozen=True)
class GroupTerms:
    """A group's reward terms. group_id None: the program's default group (its terms are the program's)."""

    group_id: int | None
    group_name: str
    commission_type: str
    rate: Decimal
    duration_months: int
    hold_days: int

    @property
    def is_default(self) -> bool:
        return self.group_id is None


DEFAULT_GROUP_NAME = "Default"


def program_terms(program: Program) -> GroupTerms:
    """The default group's terms: the program's columns, as the spec's settings set them."""
    return GroupTerms(
        group_id=None,
        group_name=DEFAULT_GROUP_NAME,
        commission_type=program.commission_type,
        rate=program.commission_rate,
        duration_months=program.duration_months,
        hold_days=program.hold_days,
    )


@dataclass(frozen=True)
class Enrolment:
    """A partner's enrolment in a program as a sale reads it: its group's terms (None: the default group's)."""

    group: GroupTerms | None

    def terms(self, program: Program) -> GroupTerms:
        return self.group if self.group is not None else program_terms(program)


_GROUP_COLUMNS = (
    "group_id",
    "group__name",
    "group__is_default",
    "group__commission_type",
    "group__commission_rate",
    "group__duration_months",
    "group__hold_days",
)
_enrolments: dict[tuple[int, int], tuple[float, Enrolment]] = {}


def enrolment_get(*, partner_id: int, program_id: int) -> Enrolment | None:
    """The partner's enrolment in the program with its group's terms, in one query (cached); None when the partner
    is not enrolled (never cached, so a new enrolment counts at once everywhere)."""
    now = time.monotonic()
    hit = _enrolments.get((partner_id, program_id))
    if hit is not None and hit[0] > now:
        return hit[1]
    row = (
        PartnerProgram.objects.filter(partner_id=partner_id, program_id=program_id).values_list(*_GROUP_COLUMNS).first()
    )
    if row is None:
        return None
    group_id, name, is_default, commission_type, rate, duration_months, hold_days = row
    group = None
    if group_id is not None and not is_default:
        group = GroupTerms(
            group_id=group_id,
            group_name=name,
            commission_type=commission_type,
            rate=rate,
            duration_months=duration_months,
            hold_days=hold_days,
        )
    enrolment = Enrolment(group=group)
    if settings.LINK_CACHE_SECONDS > 0:
        if len(_enrolments) >= settings.LINK_CACHE_MAX_ENTRIES:
            _enrolments.clear()
        _enrolments[(partner_id, program_id)] = (now + settings.LINK_CACHE_SECONDS, enrolment)
    return enrolment


def partner_terms(*, partner_id: int | None, program: Program) -> GroupTerms:
    """The terms the partner's next commission in the program is computed under: their group's, or the program's
    when they are in the default group or no longer enrolled."""
    if partner_id is None:
        return program_terms(program)
    enrolment = enrolment_get(partner_id=partner_id, program_id=program.pk)
    return program_terms(program) if enrolment is None else enrolment.terms(program)


def terms_cache_clear(**_signal_kwargs: object) -> None:
    _enrolments.clear()
