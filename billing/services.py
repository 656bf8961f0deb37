"""Writes of the billing app: connections (made, their secret rotated, switched off), verified events stored once
and queued, and stored events replayed. Processing is billing.events'."""

import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.errors import BadRequestError
from core.tasks import enqueue
from programs.models import Program
from webhooks.signing import secret_decrypt, secret_encrypt

from .models import BillingConnection, BillingEvent, Environment, Platform
from .platforms.base import Verified
from .tasks import billing_event_attempt_task

logger = logging.getLogger("svc.billing")

# How long a rotated-out secret is still accepted unless the owner says otherwise: deliveries the platform signed
# before the change (retries among them) still verify.
DEFAULT_OVERLAP_HOURS = 24
MAX_OVERLAP_HOURS = 24 * 7
MAX_SECRET_LENGTH = 500


def _token() -> str:
    return secrets.token_urlsafe(24)


def _hint(secret: str) -> str:
    # Enough to tell two secrets apart on the page, never enough to use.
    return f"…{secret[-4:]}" if len(secret) >= 12 else "…"


def _secret_checked(secret: str) -> str:
    secret = secret.strip()
    if not secret:
        raise BadRequestError("secret is required: paste the signing secret the platform shows for this webhook")
    if len(secret) > MAX_SECRET_LENGTH or not secret.isprintable():
        raise BadRequestError(f"secret must be printable text of at most {MAX_SECRET_LENGTH} characters")
    return secret


@dataclass(frozen=True)
class ConnectionDetails:
    """What the owner types when connecting: the signing secret and, for Chargebee, the webhook's basic-auth user
    name, the site and a read-only API key."""

    secret: str
    environment: str = Environment.LIVE
    username: str = ""
    site: str = ""
    api_key: str = ""


def _details_checked(platform: str, details: ConnectionDetails) -> ConnectionDetails:
    if details.environment not in Environment.values:
        raise BadRequestError("environment must be live or test")
    for name, value in (("username", details.username), ("site", details.site), ("api_key", details.api_key)):
        if len(value) > 255 or (value and not value.isprintable()):
            raise BadRequestError(f"{name} must be printable text of at most 255 characters")
    if platform == Platform.CHARGEBEE and not details.username.strip():
        raise BadRequestError("username is required: the user name of the Chargebee webhook's basic authentication")
    return ConnectionDetails(
        secret=_secret_checked(details.secret),
        environment=details.environment,
        username=details.username.strip(),
        site=details.site.strip(),
        api_key=details.api_key.strip(),
    )


def connection_create(*, program: Program, platform: str, details: ConnectionDetails) -> BillingConnection:
    """Connects the platform to the program (one connection per platform; connecting again after switching off
    turns the same connection back on with the new details, keeping its URL and its events)."""
    if platform not in Platform.values:
        raise BadRequestError(f"platform must be one of: {', '.join(Platform.values)}")
    details = _details_checked(platform, details)
    columns = {
        "environment": details.environment,
        "secret_encrypted": secret_encrypt(details.secret),
        "secret_hint": _hint(details.secret),
        "previous_secret_encrypted": "",
        "previous_secret_expires_at": None,
        "username": details.username,
        "site": details.site,
        "api_key_encrypted": secret_encrypt(details.api_key) if details.api_key else "",
        "is_active": True,
    }
    with transaction.atomic():
        connection = BillingConnection.objects.select_for_update().filter(program=program, platform=platform).first()
        if connection is None:
            try:
                with transaction.atomic():
                    connection = BillingConnection.objects.create(
                        program=program, platform=platform, token=_token(), **columns
                    )
            except IntegrityError:
                # Connected at the same moment by another request: that one stands.
                connection = BillingConnection.objects.select_for_update().get(program=program, platform=platform)
                return connection
        else:
            for name, value in columns.items():
                setattr(connection, name, value)
            connection.save()
    logger.info("billing.connected", extra={"program_id": program.pk, "platform": platform})
    return connection


def connection_update(
    *,
    connection: BillingConnection,
    environment: str | None = None,
    username: str | None = None,
    site: str | None = None,
    api_key: str | None = None,
) -> BillingConnection:
    """Changes what is not the secret (the secret changes by rotation). An empty api_key removes it."""
    with transaction.atomic():
        locked = BillingConnection.objects.select_for_update().get(pk=connection.pk)
        current = ConnectionDetails(
            secret="unchanged",
            environment=locked.environment if environment is None else environment,
            username=locked.username if username is None else username,
            site=locked.site if site is None else site,
            api_key="",
        )
        checked = _details_checked(locked.platform, current)
        locked.environment = checked.environment
        locked.username = checked.username
        locked.site = checked.site
        if api_key is not None:
            key = _details_checked(locked.platform, ConnectionDetails(secret="x", username="x", api_key=api_key))
            locked.api_key_encrypted = secret_encrypt(key.api_key) if key.api_key else ""
        locked.save()
    return locked


def connection_secret_rotate(
    *, connection: BillingConnection, secret: str, overlap_hours: int = DEFAULT_OVERLAP_HOURS
) -> BillingConnection:
    """The new secret signs from now on; the one it replaces is still accepted for `overlap_hours` (0: at once no
    longer), so deliveries the platform signed before the change still verify."""
    secret = _secret_checked(secret)
    if not 0 <= overlap_hours <= MAX_OVERLAP_HOURS:
        raise BadRequestError(f"overlap_hours must be between 0 and {MAX_OVERLAP_HOURS}")
    with transaction.atomic():
        locked = BillingConnection.objects.select_for_update().get(pk=connection.pk)
        if overlap_hours:
            locked.previous_secret_encrypted = locked.secret_encrypted
            locked.previous_secret_expires_at = timezone.now() + timedelta(hours=overlap_hours)
        else:
            locked.previous_secret_encrypted = ""
            locked.previous_secret_expires_at = None
        locked.secret_encrypted = secret_encrypt(secret)
        locked.secret_hint = _hint(secret)
        locked.save()
    logger.info("billing.secret_rotated", extra={"program_id": locked.program_id, "platform": locked.platform})
    return locked


def connection_deactivate(*, connection: BillingConnection) -> BillingConnection:
    """Switched off: its URL answers 404 and nothing it sent before is undone. Connecting again turns it back on."""
    BillingConnection.objects.filter(pk=connection.pk).update(is_active=False, updated_at=timezone.now())
    connection.refresh_from_db()
    return connection


def connection_secrets(connection: BillingConnection, *, now: datetime) -> list[str]:
    """The secrets a delivery may be signed with: the current one, then the previous one while its overlap lasts."""
    found = [secret_decrypt(connection.secret_encrypted)]
    expires = connection.previous_secret_expires_at
    if connection.previous_secret_encrypted and expires is not None and expires > now:
        found.append(secret_decrypt(connection.previous_secret_encrypted))
    return found


def connection_api_key(connection: BillingConnection) -> str:
    return secret_decrypt(connection.api_key_encrypted) if connection.api_key_encrypted else ""


def signature_failure_record(*, connection: BillingConnection, reason: str, now: datetime) -> None:
    """Counted for readiness; one UPDATE, so a flood of forged deliveries costs one statement each."""
    BillingConnection.objects.filter(pk=connection.pk).update(
        signature_failures=F("signature_failures") + 1,
        last_signature_failure_at=now,
        last_signature_failure=reason[:255],
    )


@dataclass(frozen=True)
class EventStored:
    duplicate: bool
    event: BillingEvent | None = None


def billing_event_store(
    *, connection: BillingConnection, verified: Verified, carried_attribution: bool | None, now: datetime
) -> EventStored:
    """Stores a verified event once per connection (the platform's event id is the key: a redelivery, a replayed
    request or the same event delivered concurrently to several workers is stored once, by the unique constraint)
    and queues its processing once the row is committed."""
    livemode = connection.livemode if verified.livemode is None else (verified.livemode and connection.livemode)
    try:
        with transaction.atomic():
            event = BillingEvent.objects.create(
                connection=connection,
                program_id=connection.program_id,
                platform=connection.platform,
                event_id=verified.event_id[:255],
                event_type=verified.event_type[:100],
                livemode=livemode,
                payload=verified.payload,
                carried_attribution=carried_attribution,
                received_at=now,
            )
            BillingConnection.objects.filter(pk=connection.pk).update(last_event_at=now)
            transaction.on_commit(lambda: enqueue(billing_event_attempt_task, event.pk))
    except IntegrityError:
        return EventStored(duplicate=True)
    logger.info(
        "billing.event_received",
        extra={"platform": connection.platform, "event_id": event.event_id, "type": event.event_type},
    )
    return EventStored(duplicate=False, event=event)


def billing_events_replay(*, program: Program, event_pks: Iterable[int]) -> int:
    """Puts the program's stored events back to `received` and queues each again. Processing is idempotent: a
    payment recorded already is not counted twice, a refund applied already is not applied again."""
    pks = list(event_pks)
    with transaction.atomic():
        replayed = list(
            BillingEvent.objects.filter(program=program, pk__in=pks).order_by("pk").values_list("pk", flat=True)
        )
        BillingEvent.objects.filter(pk__in=replayed).update(status=BillingEvent.Status.RECEIVED)
        for pk in replayed:
            transaction.on_commit(partial(enqueue, billing_event_attempt_task, pk))
    logger.info("billing.events_replayed", extra={"program_id": program.pk, "event_pks": replayed})
    return len(replayed)
