"""{% load partner_groups %}{% partner_groups program partners as grouping %}: each partner's group and coupon codes
on the Partners page (templates/dashboard/_partner_group.html), read for the whole page at once by the page itself
(as partner_applications does) so the page's view needs no change: two queries, the program's groups and the page's
partners' codes. `grouping.by_partner|of_partner:id` is one partner's {group, codes}."""

from dataclasses import dataclass
from typing import Any

from django import template

from groups.models import CouponCode, PartnerGroup
from groups.selectors import program_groups
from programs.models import Program

register = template.Library()


@dataclass(frozen=True)
class PartnerGrouping:
    groups: list[PartnerGroup]  # the program's, the default first (the move form's choices)
    by_partner: dict[int, dict[str, Any]]  # partner id -> {"group": PartnerGroup, "codes": [CouponCode]}


@register.simple_tag
def partner_groups(program: Program, rows: list[dict[str, Any]]) -> PartnerGrouping:
    """rows: the Partners page's rows, each with its "enrolment"."""
    enrolments = [row["enrolment"] for row in rows]
    groups = list(PartnerGroup.objects.filter(program=program).order_by("-is_default", "name", "pk"))
    default = next((group for group in groups if group.is_default), None)
    if default is None:  # a program older than groups: its default group is made now, once
        groups = program_groups(program)
        default = groups[0]
    codes: dict[int, list[CouponCode]] = {}
    partner_ids = [enrolment.partner_id for enrolment in enrolments]
    for code in CouponCode.objects.filter(program=program, partner_id__in=partner_ids).order_by("-is_active", "code"):
        codes.setdefault(code.partner_id, []).append(code)
    by_id = {group.pk: group for group in groups}
    return PartnerGrouping(
        groups=groups,
        by_partner={
            enrolment.partner_id: {
                "group": by_id.get(enrolment.group_id or default.pk, default),
                "codes": codes.get(enrolment.partner_id, []),
            }
            for enrolment in enrolments
        },
    )


@register.filter
def of_partner(by_partner: dict[int, dict[str, Any]], partner_id: int) -> dict[str, Any]:
    return by_partner.get(partner_id, {})
