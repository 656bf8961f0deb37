from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.currency import Currency
from core.money import money
from programs.models import CommissionType, Partner, Program, SameWorkspace, Workspace


class CommissionStatus(models.TextChoices):
    PENDING = "pending", "Pending (in hold)"
    APPROVED = "approved", "Approved (credited)"
    PAID = "paid", "Paid out"
    REFUNDED = "refunded", "Partly refunded"
    REVERSED = "reversed", "Reversed"


class CommissionKind(models.TextChoices):
    SALE = "sale", "Earned by a sale"
    BONUS = "bonus", "A milestone bonus (groups.models.BonusAward): no sale"


class Commission(SameWorkspace, models.Model):
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="commissions")
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="commissions")
    # The sale and customer are named, not imported: tracking depends on commissions, never the reverse.
    sale = models.OneToOneField(
        "tracking.SaleEvent", on_delete=models.PROTECT, null=True, blank=True, related_name="commission"
    )
    kind = models.CharField(max_length=8, choices=CommissionKind.choices, default=CommissionKind.SALE)
    # The terms it was computed under, kept as they were: the partner's group then (NULL: the default group, or a
    # commission older than groups) and the type and rate applied ("" and NULL for a bonus or an older commission).
    group = models.ForeignKey("groups.PartnerGroup", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    commission_type = models.CharField(max_length=32, blank=True, default="")
    commission_rate = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    customer = models.ForeignKey(
        "tracking.Customer", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    amount_cents = models.BigIntegerField()
    currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD)
    status = models.CharField(max_length=16, choices=CommissionStatus.choices, default=CommissionStatus.PENDING)
    # Credited to the partner ledger (left pending); refunds deduct from the ledger only when set.
    credited = models.BooleanField(default=False)
    sale_refunded_cents = models.BigIntegerField(default=0)
    deducted_cents = models.BigIntegerField(default=0)
    refund_reason = models.TextField(blank=True, default="")
    # Idempotency of refunds: caller refund ids already applied, and amounts of refunds sent without an id
    # (a second id-less refund of the same amount is a retry).
    applied_refund_ids = models.JSONField(default=list, blank=True)
    applied_anonymous_amounts = models.JSONField(default=list, blank=True)
    refund_count = models.PositiveIntegerField(default=0)
    hold_until = models.DateTimeField()
    # Placed on hold by the program owner or by a fraud rule: not approved when hold_until passes, and not
    # credited, until an owner releases it (or voids it).
    held_at = models.DateTimeField(null=True, blank=True)
    hold_reason = models.TextField(blank=True, default="")
    # The fraud rule that held it ("" when an owner did, or it is not held), and every rule that fired on its sale
    # (fraud.rules.Rule values; a flag-only rule is listed without holding).
    hold_rule = models.CharField(max_length=32, blank=True, default="")
    flags = models.JSONField(default=list, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    # Voided by the program owner: reversed whole, its credit (if any) taken back from the ledger.
    voided_at = models.DateTimeField(null=True, blank=True)
    void_reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    workspace_relations = ("program", "partner", "sale", "customer")

    class Meta:
        indexes = [
            models.Index(fields=["status", "hold_until"], name="commission_due"),
            # The dashboard's commissions list, newest first, whole or by status.
            models.Index(fields=["program", "-created_at", "-id"], name="commission_program_time"),
            # A partner's commissions newest first (the partner portal's Commissions page).
            models.Index(fields=["partner", "-created_at", "-id"], name="commission_partner_time"),
            models.Index(fields=["program", "status", "-created_at", "-id"], name="commission_program_status"),
            # The rollup task finds the sales whose commission changed lately (tracking.rollups).
            models.Index(fields=["updated_at"], name="commission_updated_at"),
            # The review queue: a program's held commissions, newest first.
            models.Index(
                fields=["program", "-created_at", "-id"],
                condition=Q(held_at__isnull=False),
                name="commission_program_held",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount_cents__gte=0), name="commission_amount_nonnegative"),
            models.CheckConstraint(
                condition=Q(deducted_cents__gte=0) & Q(deducted_cents__lte=models.F("amount_cents")),
                name="commission_deduction_within_amount",
            ),
            models.CheckConstraint(condition=Q(sale_refunded_cents__gte=0), name="commission_refund_nonnegative"),
            models.CheckConstraint(
                condition=Q(kind=CommissionKind.BONUS) | Q(sale__isnull=False), name="commission_sale_unless_bonus"
            ),
        ]

    def __str__(self) -> str:
        return f"commission #{self.pk} ({self.status})"


class CommissionReview(SameWorkspace, models.Model):
    """One decision on a commission's hold: held (by a rule or an owner), released or voided, by whom and why.
    Written in the decision's own transaction, with its ledger entry; never updated or deleted."""

    class Action(models.TextChoices):
        HELD = "held", "Held"
        RELEASED = "released", "Released"
        VOIDED = "voided", "Voided"
        # Not a decision: a refund cancelled the held commission, so nothing is left to decide.
        ENDED = "ended", "Hold ended by a refund"

    commission = models.ForeignKey(Commission, on_delete=models.CASCADE, related_name="reviews")
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    # The rule that held it ("" for an owner's decision).
    rule = models.CharField(max_length=32, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    # Who decided, as shown to owners: "rule", "user:<username>", "agent key <masked>", "admin:<username>", or
    # "refund" for a hold a refund ended.
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("program", "commission")

    class Meta:
        indexes = [models.Index(fields=["program", "-created_at"], name="review_program_time")]

    def __str__(self) -> str:
        return f"commission #{self.commission_id} {self.action} by {self.actor}"


class ProductCommissionRate(models.Model):
    """Per-product policy: a sale whose product_id matches uses this type and rate instead of the program's."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="product_rates")
    # The group whose rate it is; NULL: the default group's (the program's).
    group = models.ForeignKey(
        "groups.PartnerGroup", on_delete=models.CASCADE, null=True, blank=True, related_name="product_rates"
    )
    product_id = models.CharField(max_length=255)
    commission_type = models.CharField(max_length=32, choices=CommissionType.choices)
    commission_rate = models.DecimalField(max_digits=14, decimal_places=4)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["program", "product_id"], condition=Q(group__isnull=True), name="product_rate_unique"
            ),
            models.UniqueConstraint(
                fields=["group", "product_id"], condition=Q(group__isnull=False), name="product_rate_group_unique"
            ),
            models.CheckConstraint(condition=Q(commission_rate__gt=0), name="product_rate_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.product_id}: {self.commission_rate} {self.commission_type}"

    def clean(self) -> None:
        super().clean()
        if self.group_id is not None and self.group is not None and self.group.program_id != self.program_id:
            raise ValidationError({"group": "The group must be one of the rate's program"})


class LedgerEntry(SameWorkspace, models.Model):
    """Append-only partner balance: the balance is the sum of amounts. Never updated or deleted."""

    class Kind(models.TextChoices):
        CREDIT = "credit", "Commission credited"
        DEDUCTION = "deduction", "Refund clawback"
        PAYOUT = "payout", "Paid out"
        ADJUSTMENT = "adjustment", "Manual adjustment"
        # A hold, release or void that moves no money (amount 0): the partner's ledger still tells the decision.
        REVIEW = "review", "Review decision"

    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="ledger")
    program = models.ForeignKey(Program, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    commission = models.ForeignKey(
        Commission, on_delete=models.PROTECT, null=True, blank=True, related_name="ledger_entries"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    amount_cents = models.BigIntegerField()
    currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD)
    memo = models.CharField(max_length=255, blank=True, default="")
    # A payout's debit (negative) and what a refund or a failure gave back of it (positive): payouts.models.
    payout = models.ForeignKey(
        "payouts.Payout", on_delete=models.PROTECT, null=True, blank=True, related_name="ledger_entries"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("partner", "program", "commission")

    class Meta:
        verbose_name_plural = "ledger entries"  # Django's default appends an "s": "ledger entrys"
        indexes = [models.Index(fields=["partner", "currency"], name="ledger_partner_currency")]
        constraints = [
            # A commission is credited at most once.
            models.UniqueConstraint(
                fields=["commission"], condition=Q(kind="credit"), name="ledger_one_credit_per_commission"
            ),
            # A payout is debited once.
            models.UniqueConstraint(
                fields=["payout"], condition=Q(kind="payout", amount_cents__lt=0), name="ledger_one_debit_per_payout"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {money(self.amount_cents, self.currency)} (partner #{self.partner_id})"


class Withdrawal(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PAID = "paid", "Paid"
        CANCELLED = "cancelled", "Cancelled"

    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="withdrawals")
    amount_cents = models.BigIntegerField()
    requested_cents = models.BigIntegerField()
    currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(amount_cents__gte=0), name="withdrawal_nonnegative")]

    def __str__(self) -> str:
        return f"withdrawal #{self.pk} {money(self.amount_cents, self.currency)} ({self.status})"


class Notification(SameWorkspace, models.Model):
    class Audience(models.TextChoices):
        PARTNER = "partner", "Partner (in-app)"
        ADVERTISER = "advertiser", "Advertiser"

    class Kind(models.TextChoices):
        COMMISSION_REFUNDED = "commission_refunded", "Commission partly refunded"
        COMMISSION_REVERSED = "commission_reversed", "Commission reversed"
        MANUAL_REVIEW = "manual_review", "Paid-out commission needs review"

    audience = models.CharField(max_length=16, choices=Audience.choices)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    commission = models.ForeignKey(Commission, on_delete=models.CASCADE, related_name="notifications")
    # Which refund step caused it, so a retried task never notifies twice.
    dedupe_key = models.CharField(max_length=255)
    message = models.TextField()
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("commission", "workspace", "partner")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audience", "dedupe_key"], name="notification_once"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} to {self.audience} (commission #{self.commission_id})"


class NotificationOutbox(models.Model):
    """A refund's notifications still to be delivered. Written in the refund's own transaction, so a
    committed refund always has one and a rolled-back refund never does; delivery (creating the
    Notification rows) happens after commit through Celery, and a periodic sweep retries whatever a broker
    outage or a failed task left undelivered. Holds what the step was, so a late delivery still describes
    that refund rather than the commission's later state."""

    commission = models.ForeignKey(Commission, on_delete=models.CASCADE, related_name="+")
    refund_step = models.PositiveIntegerField()
    was_paid_out = models.BooleanField()
    reversed = models.BooleanField()
    refund_reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    delivered_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        verbose_name_plural = "notification outbox"
        indexes = [
            models.Index(fields=["id"], condition=Q(delivered_at__isnull=True), name="outbox_undelivered"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["commission", "refund_step"], name="outbox_one_per_refund_step"),
        ]

    def __str__(self) -> str:
        state = "delivered" if self.delivered_at else "undelivered"
        return f"refund step {self.refund_step} of commission #{self.commission_id} ({state})"
