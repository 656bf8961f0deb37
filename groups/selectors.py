"""Reads of groups: a program's default group, a partner's group in a program."""

from django.db import IntegrityError, transaction

from programs.models import PartnerProgram, Program

from .models import PartnerGroup
from .terms import DEFAULT_GROUP_NAME


def default_group(program: Program) -> PartnerGroup:
    """The program's default group, made when it has none yet (a concurrent maker wins, its row is returned)."""
    group = PartnerGroup.objects.filter(program=program, is_default=True).first()
    if group is not None:
        return group
    try:
        with transaction.atomic():
            return PartnerGroup.objects.create(
                program=program, name=DEFAULT_GROUP_NAME, slug="default", is_default=True
            )
    except IntegrityError:
        return PartnerGroup.objects.get(program=program, is_default=True)


def enrolment_group(enrolment: PartnerProgram) -> PartnerGroup:
    """The enrolment's group: its own, or the program's default group."""
    if enrolment.group_id is not None:
        return enrolment.group  # type: ignore[return-value]
    return default_group(enrolment.program)


def program_groups(program: Program) -> list[PartnerGroup]:
    """The program's groups, the default first, then by name."""
    default_group(program)
    return list(PartnerGroup.objects.filter(program=program).order_by("-is_default", "name", "pk"))
