"""Paying partners: how each partner account is paid (PayoutAccount), the runs an owner previews and confirms
(PayoutRun, with its audit trail), and one Payout per partner per run, debited on the ledger when it is made
and settled as paid or failed by the rail (docs/payouts.md).

The ledger stays the single record of money: a payout's debit is a `payout` LedgerEntry naming it (one per
payout, a database constraint), and what a refund or a failure gives back is a positive `payout` entry."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from commissions.models import Commission
from core.currency import Currency
from core.money import money
from programs.models import Partner, PartnerAccount, Program, SameWorkspace, Workspace


class Rail(models.TextChoices):
    STRIPE = "stripe", "Stripe (connected Express account)"
    PAYPAL = "paypal", "PayPal (exported batch)"
    WISE = "wise", "Wise (exported batch)"


MANUAL_RAILS = (Rail.PAYPAL, Rail.WISE)


class PayoutAccount(models.Model):
    """How a partner account is paid, for every workspace it is a partner of: a Stripe Express account connected to
    the operator's Connect platform, or a manual rail (an email or bank reference paid from an exported batch)."""

    account = models.OneToOneField(PartnerAccount, on_delete=models.CASCADE, related_name="payout_account")
    rail = models.CharField(max_length=16, choices=Rail.choices, default=Rail.STRIPE)
    # Stripe: the connected account and what its last account.updated said.
    stripe_account_id = models.CharField(max_length=255, blank=True, default="")
    payouts_enabled = models.BooleanField(default=False)
    transfers_active = models.BooleanField(default=False)
    details_submitted = models.BooleanField(default=False)
    requirements_due = models.JSONField(default=list, blank=True)
    disabled_reason = models.CharField(max_length=255, blank=True, default="")
    # Manual rails: where the partner is paid (PayPal email, or Wise email / bank reference) and the name on it.
    payout_email = models.EmailField(blank=True, default="")
    bank_reference = models.CharField(max_length=255, blank=True, default="")
    holder_name = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["stripe_account_id"], condition=~Q(stripe_account_id=""), name="payout_account_stripe_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.rail} payout account of {self.account_id}"

    @property
    def ready(self) -> bool:
        """Whether a payout on this account can be sent now."""
        if self.rail == Rail.STRIPE:
            return bool(self.stripe_account_id) and self.transfers_active
        return bool(self.payout_email or self.bank_reference)

    @property
    def destination(self) -> str:
        """Where a payout goes, as recorded on it when it is made."""
        if self.rail == Rail.STRIPE:
            return self.stripe_account_id
        return self.payout_email or self.bank_reference


class PayoutMinimum(models.Model):
    """A program's minimum payout in one currency, in its minor units: a partner is paid once what is available
    reaches it (no row: any positive amount)."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="payout_minimums")
    currency = models.CharField(max_length=3, choices=Currency.choices)
    minimum_cents = models.BigIntegerField()
    # Paid by the scheduled run (PAYOUTS_SCHEDULE) without an owner confirming.
    automatic = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["program", "currency"], name="payout_minimum_once"),
            models.CheckConstraint(condition=Q(minimum_cents__gte=0), name="payout_minimum_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"minimum {money(self.minimum_cents, self.currency)} for program #{self.program_id}"


class PayoutRun(SameWorkspace, models.Model):
    """One program's payouts in one currency: previewed (lines computed and shown), then confirmed once (a Payout
    per line, each debited on the ledger in the same transaction)."""

    class Status(models.TextChoices):
        PREVIEW = "preview", "Previewed"
        CONFIRMED = "confirmed", "Confirmed"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="payout_runs")
    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="payout_runs")
    currency = models.CharField(max_length=3, choices=Currency.choices)
    minimum_cents = models.BigIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PREVIEW)
    # The preview as shown: [{partner_id, partner, amount_cents, rail, ready, reason}].
    lines = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    workspace_relations = ("workspace", "program")

    class Meta:
        indexes = [models.Index(fields=["program", "-created_at"], name="payout_run_program_time")]
        constraints = [models.CheckConstraint(condition=Q(minimum_cents__gte=0), name="payout_run_minimum")]

    def __str__(self) -> str:
        return f"payout run #{self.pk} {self.currency} ({self.status})"


class PayoutRunAudit(models.Model):
    """Who did what to a run, and when: previewed, confirmed, exported, imported, marked paid, retried."""

    class Action(models.TextChoices):
        PREVIEWED = "previewed", "Previewed"
        CONFIRMED = "confirmed", "Confirmed"
        EXPORTED = "exported", "Exported"
        IMPORTED = "imported", "Imported results"
        MARKED_PAID = "marked_paid", "Marked paid"
        MARKED_FAILED = "marked_failed", "Marked failed"

    run = models.ForeignKey(PayoutRun, on_delete=models.CASCADE, related_name="audit")
    action = models.CharField(max_length=16, choices=Action.choices)
    # "user:<id> <email>", "agent:<key id>", "command" or "schedule", as the commission review log names actors.
    actor = models.CharField(max_length=200)
    detail = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        indexes = [models.Index(fields=["run", "created_at"], name="payout_audit_run_time")]

    def __str__(self) -> str:
        return f"{self.action} run #{self.run_id} by {self.actor}"


class PayoutStatus(models.TextChoices):
    PENDING = "pending", "Pending (not sent yet)"
    PROCESSING = "processing", "Processing (sent, or exported for the rail)"
    PAID = "paid", "Paid"
    FAILED = "failed", "Failed (money back on the balance)"
    CANCELLED = "cancelled", "Cancelled (refunds took it all back before it was sent)"


OPEN_PAYOUT_STATUSES = (PayoutStatus.PENDING, PayoutStatus.PROCESSING)


class Payout(SameWorkspace, models.Model):
    run = models.ForeignKey(PayoutRun, on_delete=models.PROTECT, related_name="payouts")
    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="payouts")
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="payouts")
    amount_cents = models.BigIntegerField()
    currency = models.CharField(max_length=3, choices=Currency.choices)
    status = models.CharField(max_length=16, choices=PayoutStatus.choices, default=PayoutStatus.PENDING)
    rail = models.CharField(max_length=16, choices=Rail.choices)
    # The Stripe account id, or the email / bank reference, as it was when the payout was made.
    destination = models.CharField(max_length=255)
    stripe_transfer_id = models.CharField(max_length=255, blank=True, default="")
    # The rail's own reference for a manual payout (PayPal or Wise transaction id), from an imported result.
    rail_reference = models.CharField(max_length=255, blank=True, default="")
    failure_code = models.CharField(max_length=100, blank=True, default="")
    failure_message = models.CharField(max_length=500, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    # Moved on only after Stripe answered a 5xx: Stripe keeps that answer for the key and would replay it, so the
    # next attempt (after finding no transfer in the payout's group) needs a new key. A lost answer keeps the key.
    key_generation = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    sent_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    workspace_relations = ("program", "partner", "run")

    class Meta:
        indexes = [
            models.Index(fields=["partner", "-created_at"], name="payout_partner_time"),
            models.Index(fields=["status", "updated_at"], name="payout_status_time"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount_cents__gte=0), name="payout_nonnegative"),
            # One payout per partner in a run, and never two open at once for a partner in a program's currency:
            # two runs confirmed together cannot both pay the same balance.
            models.UniqueConstraint(fields=["run", "partner"], name="payout_once_per_run"),
            models.UniqueConstraint(
                fields=["partner", "program", "currency"],
                condition=Q(status__in=["pending", "processing"]),
                name="payout_one_open_per_partner",
            ),
            models.UniqueConstraint(
                fields=["stripe_transfer_id"], condition=~Q(stripe_transfer_id=""), name="payout_transfer_once"
            ),
        ]

    def __str__(self) -> str:
        return f"payout #{self.pk} {money(self.amount_cents, self.currency)} ({self.status})"

    @property
    def transfer_group(self) -> str:
        """Names the payout on Stripe: the reconciler finds a transfer sent before a crash by it."""
        return f"payout_{self.pk}"

    @property
    def idempotency_key(self) -> str:
        """The same for every attempt at the payout's one transfer, so Stripe makes it at most once (a new
        generation only after Stripe answered a 5xx, see key_generation)."""
        suffix = f"-{self.key_generation}" if self.key_generation else ""
        return f"svc-payout-{self.pk}-transfer{suffix}"


class PayoutCommission(models.Model):
    """A commission a payout covers (its statement). Covered by one live payout at most: a failed or cancelled
    payout's rows turn inactive and the commission can be covered again."""

    payout = models.ForeignKey(Payout, on_delete=models.CASCADE, related_name="covered")
    commission = models.ForeignKey(Commission, on_delete=models.PROTECT, related_name="payout_rows")
    amount_cents = models.BigIntegerField()  # what the commission still paid when the payout was made
    active = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["commission"], condition=Q(active=True), name="payout_commission_once"),
            models.UniqueConstraint(fields=["payout", "commission"], name="payout_commission_row_once"),
        ]

    def __str__(self) -> str:
        return f"payout #{self.payout_id} covers commission #{self.commission_id}"


class PayoutEmail(models.Model):
    """An email sent to the partner about a payout (paid, or failed and why): written in the transaction that sends
    it, so a retried task never sends one twice."""

    payout = models.ForeignKey(Payout, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16)  # paid | failed
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["payout", "event"], name="payout_email_once")]

    def __str__(self) -> str:
        return f"{self.payout_id} {self.event}"
