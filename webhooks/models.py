"""Outbound webhooks: the events the service announces, the endpoints that receive them, and every delivery
and attempt (docs/webhooks.md).

Programs, workspaces and users are named, not imported: the apps that emit events (programs, tracking,
commissions) depend on this one, never the reverse."""

from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone


def utc_text(value: datetime | None) -> str | None:
    """A time as events carry it: ISO 8601 in UTC with a Z."""
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class EventType(models.TextChoices):
    LEAD_CREATED = "lead.created"
    SALE_CREATED = "sale.created"
    COMMISSION_CREATED = "commission.created"
    COMMISSION_APPROVED = "commission.approved"
    COMMISSION_REFUNDED = "commission.refunded"
    COMMISSION_REVERSED = "commission.reversed"
    REFUND_APPLIED = "refund.applied"
    PARTNER_ENROLLED = "partner.enrolled"
    # An extension: a partner put in another group (groups.services.partner_move).
    PARTNER_GROUP_CHANGED = "partner.group_changed"
    PAYOUT_CREATED = "payout.created"
    PAYOUT_PAID = "payout.paid"
    PAYOUT_FAILED = "payout.failed"


# An endpoint's event_types may hold this instead of a list of types: every type, including ones added later.
ALL_EVENT_TYPES = "*"


class WebhookEndpoint(models.Model):
    """Where a program's (or, with no program, every program of the workspace's) events are sent.

    The signing secret is kept encrypted (webhooks.signing), never as plain text, and shown once when made or
    rotated. After a rotation the previous secret still signs until previous_secret_expires_at, so a receiver
    that has not yet switched keeps verifying (two signatures in webhook-signature)."""

    workspace = models.ForeignKey("programs.Workspace", on_delete=models.CASCADE, related_name="webhook_endpoints")
    program = models.ForeignKey(
        "programs.Program", on_delete=models.CASCADE, null=True, blank=True, related_name="webhook_endpoints"
    )
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    event_types = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    # Test-mode events (livemode false) go only to endpoints that ask for them.
    include_test_events = models.BooleanField(default=False)
    secret_encrypted = models.TextField()
    secret_last4 = models.CharField(max_length=4)
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # Why it was disabled: by its owner (empty), a 410 from the receiver, or failing too long.
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True, default="")
    # Since when every attempt has failed (none succeeded since); cleared by the next success.
    failing_since = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["workspace", "program"], name="webhook_endpoint_owner")]

    def __str__(self) -> str:
        return f"webhook endpoint #{self.pk} {self.url}"

    def wants(self, *, event_type: str, livemode: bool) -> bool:
        if not livemode and not self.include_test_events:
            return False
        return ALL_EVENT_TYPES in self.event_types or event_type in self.event_types


class WebhookEvent(models.Model):
    """One event, written in the same transaction as the change it announces (the outbox), then fanned out
    to the endpoints that want it (one WebhookDelivery each). Also what `svc listen` streams. `data` is the
    payload as it was at the change; object_id, when set, is the id of the row the event is about, written by
    the same statement that inserted that row (it goes into data as "id")."""

    public_id = models.CharField(max_length=40, unique=True)
    program = models.ForeignKey("programs.Program", on_delete=models.CASCADE, related_name="webhook_events")
    type = models.CharField(max_length=64)
    livemode = models.BooleanField()
    object_id = models.BigIntegerField(null=True, blank=True)
    data = models.JSONField(default=dict)
    # Made by `svc trigger` (an example payload, no real change behind it).
    synthetic = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    fanned_out_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # svc listen and the delivery log read a program's events newest first / after a cursor.
            models.Index(fields=["program", "-id"], name="webhook_event_program"),
            models.Index(fields=["id"], condition=Q(fanned_out_at__isnull=True), name="webhook_event_unfanned"),
            models.Index(fields=["created_at"], name="webhook_event_created"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.public_id}"

    def payload(self) -> dict[str, Any]:
        """The envelope sent to receivers: {id, type, created_at, program_id, livemode, data}."""
        data = {"id": self.object_id, **self.data} if self.object_id is not None else dict(self.data)
        return {
            "id": self.public_id,
            "type": self.type,
            "created_at": utc_text(self.created_at),
            "program_id": self.program_id,
            "livemode": self.livemode,
            "data": data,
        }


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending (next attempt scheduled)"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed (retries exhausted or endpoint disabled)"


class WebhookDelivery(models.Model):
    """One event to one endpoint: retried until it succeeds, its retries run out, or the endpoint is disabled.
    A worker takes an attempt by a conditional UPDATE of leased_until (webhooks.delivery), so two workers never
    send the same delivery at once, and a delivery that succeeded is not sent again unless its owner resends it.
    It is queued to the broker only under a claim (queued_until, webhooks.dispatch), so it is queued once."""

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # Attempts since the last resend: what the retry schedule counts.
    scheduled_attempts = models.PositiveIntegerField(default=0)
    # Resent by its owner: the next attempt is logged as manual.
    resent = models.BooleanField(default=False)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)
    # Queued to the broker and not taken by a worker yet: no sweep queues it again until then (webhooks.dispatch).
    queued_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        constraints = [models.UniqueConstraint(fields=["event", "endpoint"], name="webhook_delivery_once")]
        indexes = [
            models.Index(fields=["next_attempt_at"], condition=Q(status="pending"), name="webhook_delivery_due"),
            # The claims outstanding: what the broker may hold (few rows, cleared as workers take them).
            models.Index(
                fields=["queued_until"], condition=Q(queued_until__isnull=False), name="webhook_delivery_queued"
            ),
            models.Index(fields=["endpoint", "-created_at", "-id"], name="webhook_delivery_endpoint"),
            models.Index(fields=["endpoint", "status", "-created_at"], name="webhook_delivery_status"),
        ]

    def __str__(self) -> str:
        return f"delivery #{self.pk} of {self.event_id} to endpoint #{self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery, as it went: status, latency, the start of the response, or the error.

    Written before the request goes out (in_flight) and completed after, so an attempt whose worker died in the
    middle is still on record: the delivery's next attempt marks it "outcome unknown" (the receiver may have had
    it, with the same webhook-id)."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    manual = models.BooleanField(default=False)
    started_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    response_excerpt = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    succeeded = models.BooleanField(default=False)
    # Sent, outcome not recorded yet: being made, or (once the delivery is attempted again) never recorded.
    in_flight = models.BooleanField(default=False, db_default=False)

    class Meta:
        indexes = [models.Index(fields=["delivery", "number"], name="webhook_attempt_delivery")]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery #{self.delivery_id}"
