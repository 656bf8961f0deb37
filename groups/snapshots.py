"""How the audit trail (agent_api.audit.audit_write) records a group's rows before and after a change, and how an
owner is named on it."""

from typing import Any

from django.db import models

from programs.models import PartnerProgram

from .models import CouponCode


def user_actor(user: Any) -> str:
    """How an owner is named on the trail and in GroupChange.actor: "user:<username>"."""
    return f"user:{user.get_username()}"


def code_snapshot(code: CouponCode) -> dict[str, Any]:
    """A coupon code as the trail records it, before and after a change."""
    return {
        "id": code.pk,
        "code": code.code,
        "partner_id": code.partner_id,
        "program_id": code.program_id,
        "source": code.source,
        "stripe_promotion_code_id": code.stripe_promotion_code_id,
        "is_active": code.is_active,
    }


def enrolment_snapshot(enrolment: PartnerProgram, *, group_id: int | None = None) -> dict[str, Any]:
    """A partner's enrolment as a move records it: the group it is in (group_id: the group's own id, the default
    group's too, since the enrolment's NULL means it)."""
    return {
        "id": enrolment.pk,
        "partner_id": enrolment.partner_id,
        "program_id": enrolment.program_id,
        "group_id": group_id if group_id is not None else enrolment.group_id,
    }


def row_snapshot(row: models.Model, fields: tuple[str, ...]) -> dict[str, Any]:
    """A tier rule or bonus (any row) as the trail records it: its id and the named columns (a foreign key by its
    attname, e.g. target_id)."""
    return {"id": row.pk, **{name: getattr(row, name) for name in fields}}
