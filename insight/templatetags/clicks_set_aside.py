"""{% clicks_set_aside_get program as set_aside %}: the live clicks the fraud rules set aside lately and why, as
readiness counts them (templates/dashboard/_clicks_set_aside.html shows them on the overview)."""

from typing import Any

from django import template
from django.utils import timezone

from insight.readiness import BOT_DAYS, SET_ASIDE_WHY, clicks_set_aside_read
from programs.models import Program

register = template.Library()


@register.simple_tag
def clicks_set_aside_get(program: Program) -> dict[str, Any]:
    by_reason = clicks_set_aside_read(program.pk, now=timezone.now())
    reasons = [
        {"value": reason, "count": seen, "why": SET_ASIDE_WHY.get(reason, "")}
        for reason, seen in sorted(by_reason.items(), key=lambda item: -item[1])
        if seen
    ]
    return {"days": BOT_DAYS, "total": sum(by_reason.values()), "reasons": reasons}
