"""Group, coupon code and enrolment changes on the audit trail (agent_api.models.AgentAuditEntry), whoever made
them: an owner on the dashboard (key None, key_masked "user:<username>") or an agent key. Call it inside the
write's transaction, so there is no change without its entry."""

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from agent_api.models import AgentAuditEntry
from programs.models import AgentKey, PartnerProgram

from .models import CouponCode

# AgentAuditEntry.key_masked's length.
ACTOR_MAX = 32


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


def _jsonable(value: dict[str, Any] | None) -> dict[str, Any] | None:
    # Decimals and dates as DjangoJSONEncoder writes them, so the JSON column stores what a reader gets back.
    return None if value is None else json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def audit_write(
    *,
    workspace_id: int,
    actor: str,
    action: str,
    object_type: str,
    object_id: int | str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    key: AgentKey | None = None,
    request_id: str = "",
    idempotency_key: str = "",
) -> AgentAuditEntry:
    """One entry on the trail. actor: "user:<username>" (user_actor) for the dashboard, the key's masked value
    for an agent key (pass key too); cut to the column's 32 characters. action: "group.create", "group.update",
    "group.delete", "tier_rule.create", "bonus.delete", "coupon_code.create", "coupon_code.deactivate",
    "enrolment.move" ...; object_type "group", "tier_rule", "bonus", "coupon_code" or "enrolment"."""
    return AgentAuditEntry.objects.create(
        workspace_id=workspace_id,
        key=key,
        key_masked=actor[:ACTOR_MAX],
        action=action[:64],
        object_type=object_type[:32],
        object_id=str(object_id)[:64],
        before=_jsonable(before),
        after=_jsonable(after),
        request_id=request_id[:64],
        idempotency_key=idempotency_key[:255],
    )


def row_snapshot(row: models.Model, fields: tuple[str, ...]) -> dict[str, Any]:
    """A tier rule or bonus (any row) as the trail records it: its id and the named columns (a foreign key by its
    attname, e.g. target_id)."""
    return {"id": row.pk, **{name: getattr(row, name) for name in fields}}
