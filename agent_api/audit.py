"""Group, coupon code and enrolment changes on the audit trail (agent_api.models.AgentAuditEntry), whoever made
them: an owner on the dashboard (key None, key_masked "user:<username>"), an operator in Django admin (named in
groups.admin's registry) or an agent key. Call it inside the write's transaction, so there is no change without its
entry. What the entries record of each row is groups.snapshots'."""

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from agent_api.models import AgentAuditEntry
from programs.models import AgentKey

# AgentAuditEntry.key_masked's length.
ACTOR_MAX = 32


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
