"""Writes through the agent API: each runs in one transaction with its audit entry and, when the caller sent an
Idempotency-Key, with the record that lets a retry replay the first response instead of writing again."""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ConflictError
from programs.models import AgentKey

from . import messages
from .models import AgentAuditEntry, AgentIdempotencyRecord

# A retry later than this writes again: the record is gone (agent_idempotency_records_purge).
IDEMPOTENCY_RETENTION = timedelta(hours=24)


@dataclass(frozen=True)
class AgentWrite:
    """What a write did: the response to send and the facts of its audit entry."""

    status: int
    body: dict[str, Any]
    action: str
    object_type: str
    object_id: int | str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(frozen=True)
class ResponseSeal:
    """How a response holding a one-time secret is kept for replays: `close` turns the body into what the
    idempotency record stores (the secret encrypted, never in the clear), `open` turns that back into the body a
    replay answers, so a retry after a lost response still gets the secret it would otherwise never see again."""

    close: Callable[[dict[str, Any]], dict[str, Any]]
    open: Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class AgentWriteOutcome:
    status: int
    body: dict[str, Any]
    replayed: bool


def request_digest(*, method: str, path: str, body: Any) -> str:
    """The identity of a request for idempotency: method, path and the JSON body (key order ignored)."""
    canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _jsonable(value: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def audit_record(*, key: AgentKey, write: AgentWrite, request_id: str, idempotency_key: str = "") -> AgentAuditEntry:
    assert key.workspace_id is not None  # agent_api.auth refuses a key without a workspace
    return AgentAuditEntry.objects.create(
        workspace_id=key.workspace_id,
        key=key,
        key_masked=key.masked,
        action=write.action,
        object_type=write.object_type,
        object_id=str(write.object_id),
        before=_jsonable(write.before),
        after=_jsonable(write.after),
        request_id=request_id[:64],
        idempotency_key=idempotency_key,
    )


def agent_write_run(
    *,
    key: AgentKey,
    perform: Callable[[], AgentWrite],
    digest: str,
    idempotency_key: str = "",
    request_id: str = "",
    seal: ResponseSeal | None = None,
) -> AgentWriteOutcome:
    """Runs `perform` (which calls the domain service) with its audit entry in one transaction.

    With an Idempotency-Key, the key's record is inserted first: a concurrent retry waits on the unique constraint
    until this transaction ends, then replays the stored response (or runs itself if this one rolled back). A key
    already used with another request is 409 idempotency_conflict. Only successful writes are stored: an error
    rolls everything back, so a retry after a 4xx runs again."""
    with transaction.atomic():
        record = None
        if idempotency_key:
            try:
                with transaction.atomic():
                    record = AgentIdempotencyRecord.objects.create(
                        key=key, idempotency_key=idempotency_key, request_digest=digest, status_code=0, response_body=""
                    )
            except IntegrityError:
                earlier = AgentIdempotencyRecord.objects.get(key=key, idempotency_key=idempotency_key)
                if earlier.request_digest != digest:
                    raise ConflictError(
                        messages.IDEMPOTENCY_CONFLICT, code=messages.CODE_IDEMPOTENCY_CONFLICT
                    ) from None
                stored = json.loads(earlier.response_body)
                return AgentWriteOutcome(
                    status=earlier.status_code, body=seal.open(stored) if seal else stored, replayed=True
                )
        write = perform()
        body = _jsonable(write.body) or {}
        audit_record(key=key, write=write, request_id=request_id, idempotency_key=idempotency_key)
        if record is not None:
            record.status_code = write.status
            record.response_body = json.dumps(seal.close(body) if seal else body)
            record.save(update_fields=["status_code", "response_body"])
    return AgentWriteOutcome(status=write.status, body=body, replayed=False)


def agent_idempotency_records_purge(*, now: datetime | None = None) -> int:
    """Deletes the records older than IDEMPOTENCY_RETENTION. Returns how many."""
    cutoff = (now or timezone.now()) - IDEMPOTENCY_RETENTION
    deleted, _ = AgentIdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
