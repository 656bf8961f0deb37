"""A program's connections to billing platforms other than Stripe (Paddle Billing, Lemon Squeezy, Polar, Dodo
Payments, Chargebee) and the webhook events each one received (docs/billing/)."""

from django.db import models
from django.db.models import Q
from django.utils import timezone as dj_timezone

from programs.models import Program
from tracking.models import ProcessorEvent, SaleEvent


class Platform(models.TextChoices):
    PADDLE = "paddle", "Paddle Billing"
    LEMONSQUEEZY = "lemonsqueezy", "Lemon Squeezy"
    POLAR = "polar", "Polar"
    DODO = "dodo", "Dodo Payments"
    CHARGEBEE = "chargebee", "Chargebee"


class Environment(models.TextChoices):
    LIVE = "live", "Live"
    TEST = "test", "Test (sandbox): sales are recorded as test sales, with no commission"


class BillingConnection(models.Model):
    """One platform connected to one program. Events arrive at /webhooks/billing/<platform>/<token>: the token
    names the connection (it is not the secret; the signature is). The signing secret is stored encrypted
    (webhooks.signing), because verifying needs it back; after a rotation the previous one is still accepted
    until `previous_secret_expires_at`."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="billing_connections")
    platform = models.CharField(max_length=16, choices=Platform.choices)
    token = models.CharField(max_length=64, unique=True)
    environment = models.CharField(max_length=8, choices=Environment.choices, default=Environment.LIVE)
    secret_encrypted = models.TextField()
    secret_hint = models.CharField(max_length=16, blank=True, default="")
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # Chargebee: the basic-auth user name of its webhook, its site and a read-only API key (encrypted) the event is
    # checked against. Unused by the other platforms.
    username = models.CharField(max_length=255, blank=True, default="")
    site = models.CharField(max_length=255, blank=True, default="")
    api_key_encrypted = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True)
    signature_failures = models.PositiveIntegerField(default=0)
    last_signature_failure_at = models.DateTimeField(null=True, blank=True)
    last_signature_failure = models.CharField(max_length=255, blank=True, default="")
    last_event_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["program", "platform"], name="billing_connection_one_per_platform"),
        ]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} for program #{self.program_id}"

    @property
    def livemode(self) -> bool:
        return self.environment == Environment.LIVE


class BillingEvent(models.Model):
    """A verified webhook event of a connection, stored once by the platform's event id (a redelivery is
    acknowledged and not processed again: the unique constraint decides, also between concurrent deliveries) and
    processed by a Celery task. Lemon Squeezy sends no event id: its key is made from the event name, the object
    and its update time (billing.platforms.lemonsqueezy)."""

    Status = ProcessorEvent.Status

    connection = models.ForeignKey(BillingConnection, on_delete=models.CASCADE, related_name="events")
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="billing_events")
    platform = models.CharField(max_length=16, choices=Platform.choices)
    event_id = models.CharField(max_length=255)
    event_type = models.CharField(max_length=100)
    livemode = models.BooleanField(default=True)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=ProcessorEvent.Status.choices, default=Status.RECEIVED)
    outcome = models.CharField(max_length=255, blank=True, default="")
    # Whether the event carried the attribution data of a checkout (svc_click_id or svc_customer_key), for the
    # readiness check that names payments arriving without it.
    carried_attribution = models.BooleanField(null=True, blank=True)
    sale = models.ForeignKey(SaleEvent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    received_at = models.DateTimeField(default=dj_timezone.now, editable=False)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["program", "-received_at"], name="billing_event_program_time"),
            models.Index(fields=["connection", "-received_at"], name="billing_event_connection_time"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["connection", "event_id"], name="billing_event_once"),
            models.CheckConstraint(condition=~Q(event_id=""), name="billing_event_id_present"),
        ]

    def __str__(self) -> str:
        return f"{self.platform} {self.event_type} {self.event_id}"
