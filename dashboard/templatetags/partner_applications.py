"""{% load partner_applications %}{% pending_applications program as section %}: what the Partners page's
Applications section (templates/dashboard/_applications.html) shows, read by the section itself so the page's
view needs no change."""

from dataclasses import dataclass
from typing import Any

from django import template

from core.urls import public_url
from programs.models import PartnerApplication, Program

register = template.Library()

# The oldest first: the ones waiting longest are decided first; the rest are counted.
SHOWN = 50


@dataclass(frozen=True)
class ApplicationsSection:
    applications: list[PartnerApplication]
    count: int
    rejected_before: set[str]  # emails of the shown applications whose earlier application was rejected
    public_address: str


@register.simple_tag(takes_context=True)
def pending_applications(context: dict[str, Any], program: Program) -> ApplicationsSection:
    pending = PartnerApplication.objects.filter(program=program, status=PartnerApplication.Status.PENDING)
    shown = list(pending.order_by("created_at", "pk")[:SHOWN])
    rejected = set(
        PartnerApplication.objects.filter(
            program=program,
            status=PartnerApplication.Status.REJECTED,
            email__in=[application.email for application in shown],
        ).values_list("email", flat=True)
    )
    return ApplicationsSection(
        applications=shown,
        count=pending.count() if len(shown) == SHOWN else len(shown),
        rejected_before=rejected,
        public_address=public_url(context.get("request"), f"/join/{program.pk}"),
    )
