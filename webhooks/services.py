"""Managing endpoints (made, changed, rotated, deleted) and resending deliveries. The dashboard, the agent API
and admin all come here; each raises WebhookRefused with a messages constant when the input cannot be taken."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import messages
from .addresses import UrlRefused, url_check
from .dispatch import deliveries_queue
from .events import endpoints_changed, event_emit
from .models import ALL_EVENT_TYPES, DeliveryStatus, EventType, WebhookDelivery, WebhookEndpoint, WebhookEvent
from .payloads import EXAMPLE_DATA, WITHOUT_OBJECT_ID
from .signing import secret_encrypt, secret_generate


class WebhookRefused(ValueError):
    """The input cannot be taken; str() is the messages constant saying why."""


def event_types_check(event_types: Iterable[str]) -> list[str]:
    """The endpoint's event types, deduplicated in order: known types, or "*" alone for all of them."""
    wanted = list(dict.fromkeys(event_types))
    if not wanted:
        raise WebhookRefused(messages.EVENT_TYPES_REQUIRED)
    if ALL_EVENT_TYPES in wanted:
        return [ALL_EVENT_TYPES]
    for event_type in wanted:
        if event_type not in EventType.values:
            raise WebhookRefused(messages.EVENT_TYPE_UNKNOWN.format(type=event_type))
    return wanted


def _url_check(url: str) -> str:
    try:
        url_check(url)
    except UrlRefused as error:
        raise WebhookRefused(str(error)) from None
    return url


@dataclass(frozen=True)
class EndpointWithSecret:
    """An endpoint just made or rotated, with its secret in the clear: shown to its owner this once."""

    endpoint: WebhookEndpoint
    secret: str


def _secret_fields(secret: str) -> dict[str, str]:
    return {"secret_encrypted": secret_encrypt(secret), "secret_last4": secret[-4:]}


def _program_in_workspace(*, program_id: int, workspace_id: int) -> bool:
    # programs.models.Program, reached through the endpoint's foreign key: programs imports this app.
    program_model = WebhookEndpoint._meta.get_field("program").related_model
    return program_model._default_manager.filter(pk=program_id, workspace_id=workspace_id).exists()


def endpoint_create(
    *,
    workspace_id: int,
    program_id: int | None,
    url: str,
    event_types: Iterable[str],
    description: str = "",
    enabled: bool = True,
    include_test_events: bool = False,
) -> EndpointWithSecret:
    """A new endpoint for one program (program_id) or every program of the workspace (None)."""
    if program_id is not None and not _program_in_workspace(program_id=program_id, workspace_id=workspace_id):
        raise WebhookRefused(messages.PROGRAM_OTHER_WORKSPACE)
    secret = secret_generate()
    endpoint = WebhookEndpoint.objects.create(
        workspace_id=workspace_id,
        program_id=program_id,
        url=_url_check(url),
        event_types=event_types_check(event_types),
        description=description,
        enabled=enabled,
        include_test_events=include_test_events,
        **_secret_fields(secret),
    )
    endpoints_changed()
    return EndpointWithSecret(endpoint=endpoint, secret=secret)


def endpoint_update(*, endpoint_id: int, changes: dict[str, Any]) -> WebhookEndpoint:
    """Changes url, event_types, description, enabled or include_test_events (the keys given). Enabling a
    disabled endpoint clears why it was disabled and its failure streak."""
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
        if "url" in changes:
            endpoint.url = _url_check(changes["url"])
        if "event_types" in changes:
            endpoint.event_types = event_types_check(changes["event_types"])
        for name in ("description", "include_test_events"):
            if name in changes:
                setattr(endpoint, name, changes[name])
        if "enabled" in changes and changes["enabled"] != endpoint.enabled:
            endpoint.enabled = changes["enabled"]
            endpoint.disabled_at = None if endpoint.enabled else timezone.now()
            endpoint.disabled_reason = ""
            if endpoint.enabled:
                endpoint.failing_since = None
                endpoint.consecutive_failures = 0
        endpoint.save()
    endpoints_changed()
    return endpoint


def endpoint_rotate_secret(*, endpoint_id: int, now: datetime | None = None) -> EndpointWithSecret:
    """A new secret. The one it replaces keeps signing (a second signature) for WEBHOOK_ROTATION_OVERLAP_HOURS,
    so receivers can switch without dropping a delivery. Rotating again within the overlap drops the oldest."""
    now = now or timezone.now()
    secret = secret_generate()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
        endpoint.previous_secret_encrypted = endpoint.secret_encrypted
        endpoint.previous_secret_expires_at = now + timedelta(hours=settings.WEBHOOK_ROTATION_OVERLAP_HOURS)
        for name, value in _secret_fields(secret).items():
            setattr(endpoint, name, value)
        endpoint.save()
    return EndpointWithSecret(endpoint=endpoint, secret=secret)


def endpoint_delete(*, endpoint_id: int) -> bool:
    """Deletes the endpoint with its deliveries and their log. False when it was already gone."""
    deleted, _ = WebhookEndpoint.objects.filter(pk=endpoint_id).delete()
    endpoints_changed()
    return bool(deleted)


def _resend(deliveries: Any, now: datetime) -> list[int]:
    ids = list(deliveries.values_list("pk", flat=True))
    if ids:
        WebhookDelivery.objects.filter(pk__in=ids).update(
            status=DeliveryStatus.PENDING, next_attempt_at=now, scheduled_attempts=0, resent=True, queued_until=None
        )
        transaction.on_commit(lambda: deliveries_queue(ids=ids))
    return ids


def delivery_resend(*, delivery_id: int, now: datetime | None = None) -> bool:
    """Sends a delivery again now (same event id, so a receiver that already has it can tell), with a fresh retry
    schedule. A delivery being sent at this moment is left to finish. False when it is pending already."""
    now = now or timezone.now()
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().select_related("endpoint").get(pk=delivery_id)
        if not delivery.endpoint.enabled:
            raise WebhookRefused(messages.ENDPOINT_DISABLED_NO_RESEND)
        if delivery.status == DeliveryStatus.PENDING:
            return False
        return bool(_resend(WebhookDelivery.objects.filter(pk=delivery.pk), now))


def deliveries_resend_failed(*, endpoint_id: int, since: datetime, until: datetime, now: datetime | None = None) -> int:
    """Resends every failed delivery of the endpoint whose event happened in [since, until). Returns how many."""
    if since >= until:
        raise WebhookRefused(messages.RESEND_PERIOD_INVALID)
    now = now or timezone.now()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
        if not endpoint.enabled:
            raise WebhookRefused(messages.ENDPOINT_DISABLED_NO_RESEND)
        failed = WebhookDelivery.objects.filter(
            endpoint=endpoint,
            status=DeliveryStatus.FAILED,
            event__created_at__gte=since,
            event__created_at__lt=until,
        )
        return len(_resend(failed, now))


def event_trigger(*, program_id: int, event_type: str) -> WebhookEvent:
    """`svc trigger`: a synthetic test-mode event of the type, with the example payload, sent the way real
    events are (svc listen, and endpoints that take test events)."""
    if event_type not in EventType.values:
        known = ", ".join(EventType.values)
        raise WebhookRefused(messages.TRIGGER_TYPE_UNKNOWN.format(type=event_type, known=known))
    return event_emit(
        program_id=program_id,
        type=event_type,
        livemode=False,
        data=EXAMPLE_DATA[event_type],
        # data.id 0 where the real event carries an id: the shape is the real one, the row is nobody's.
        object_id=None if event_type in WITHOUT_OBJECT_ID else 0,
        synthetic=True,
    )
