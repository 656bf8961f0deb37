"""A program's terms as real programs run them: partners in groups with their own rewards and customer discount,
rules that move partners between groups (tiers), one-off bonuses at milestones, and coupon codes that attribute
sales to a partner.

Every program has one default group (is_default). Its commission terms are the program's own columns (the spec's
settings), never copied here, so a program with only its default group behaves as before; an enrolment with no
group (PartnerProgram.group NULL) is in the default group."""

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Upper
from django.utils import timezone

from core.currency import Currency
from programs.models import (
    PERCENT_TYPES,
    CommissionType,
    Partner,
    Program,
    SameWorkspace,
)


class DiscountType(models.TextChoices):
    PERCENT = "percent", "Percent off"
    AMOUNT = "amount", "Amount off"


class DiscountDuration(models.TextChoices):
    """As Stripe's coupons name them: the first payment, the first N months, or every payment."""

    ONCE = "once", "The first payment"
    REPEATING = "repeating", "The first N months"
    FOREVER = "forever", "Every payment"


class PartnerGroup(SameWorkspace, models.Model):
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100)
    # The group's own application page: /join/<program id>/<slug>.
    slug = models.SlugField(max_length=100)
    is_default = models.BooleanField(default=False)
    # The group's reward terms; the default group's are the program's columns (groups.terms.group_terms).
    commission_type = models.CharField(max_length=32, choices=CommissionType.choices, default=CommissionType.PERCENT)
    commission_rate = models.DecimalField(
        max_digits=14, decimal_places=4, default=Decimal("20"), validators=[MinValueValidator(Decimal("0.0001"))]
    )
    duration_months = models.PositiveIntegerField(default=0, help_text="Recurring commissions: 0 = lifetime")
    hold_days = models.PositiveIntegerField(default=30, help_text="Commission hold period, days")
    # The discount the customers this group's partners bring get ("" for none). percent: discount_percent;
    # amount: discount_amount_cents in discount_currency.
    discount_type = models.CharField(max_length=16, choices=DiscountType.choices, blank=True, default="")
    discount_percent = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    discount_amount_cents = models.BigIntegerField(null=True, blank=True)
    discount_currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD)
    discount_duration = models.CharField(max_length=16, choices=DiscountDuration.choices, default=DiscountDuration.ONCE)
    discount_duration_months = models.PositiveSmallIntegerField(null=True, blank=True)
    # The coupon on the program's connected Stripe account that this group's promotion codes are made for
    # (groups.stripe_codes); "" until the first code is made with Stripe connected.
    stripe_coupon_id = models.CharField(max_length=255, blank=True, default="")
    applications_open = models.BooleanField(default=False, help_text="Anyone may apply to this group on its page")
    # The extra questions its application page asks: a list of {"label": str, "required": bool}.
    application_questions = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    workspace_relations = ("program",)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["program", "slug"], name="group_slug_unique"),
            models.UniqueConstraint(Upper("name"), "program", name="group_name_unique"),
            models.UniqueConstraint(fields=["program"], condition=Q(is_default=True), name="group_one_default"),
            models.CheckConstraint(condition=Q(commission_rate__gt=0), name="group_rate_positive"),
            models.CheckConstraint(
                condition=~Q(commission_type__in=sorted(PERCENT_TYPES)) | Q(commission_rate__lte=100),
                name="group_percent_at_most_100",
            ),
            models.CheckConstraint(
                # isnull=False spelled out: a CHECK lets a NULL comparison through.
                condition=Q(discount_type="")
                | Q(
                    discount_type=DiscountType.PERCENT,
                    discount_percent__isnull=False,
                    discount_percent__gt=0,
                    discount_percent__lte=100,
                )
                | Q(
                    discount_type=DiscountType.AMOUNT, discount_amount_cents__isnull=False, discount_amount_cents__gt=0
                ),
                name="group_discount_complete",
                violation_error_message=(
                    "A percent discount needs discount_percent above 0 and at most 100; an amount discount needs "
                    "discount_amount_cents above 0"
                ),
            ),
            models.CheckConstraint(
                condition=~Q(discount_duration=DiscountDuration.REPEATING)
                | Q(discount_duration_months__isnull=False, discount_duration_months__gte=1),
                name="group_discount_months",
                violation_error_message="A repeating discount needs discount_duration_months of at least 1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.program_id})"


class Metric(models.TextChoices):
    SALES = "sales", "Sales"
    REVENUE = "revenue", "Revenue"


class Period(models.TextChoices):
    MONTH = "month", "Calendar month"
    QUARTER = "quarter", "Calendar quarter"
    LIFETIME = "lifetime", "All time"


class TierRule(models.Model):
    """Moves a partner of `group` to `target` when their figure in the period reaches `threshold` (promote: the
    current period so far) or stays below it (demote: the last complete period). Evaluated by the beat job
    tiers.tasks.tier_rules_apply; each move is a GroupChange naming the rule, once per partner and period."""

    class Direction(models.TextChoices):
        PROMOTE = "promote", "Promote at or above the threshold"
        DEMOTE = "demote", "Demote below the threshold"

    group = models.ForeignKey(PartnerGroup, on_delete=models.CASCADE, related_name="tier_rules")
    target = models.ForeignKey(PartnerGroup, on_delete=models.CASCADE, related_name="+")
    direction = models.CharField(max_length=8, choices=Direction.choices, default=Direction.PROMOTE)
    metric = models.CharField(max_length=8, choices=Metric.choices)
    # Tiers are judged per calendar month or quarter (lifetime is for bonuses).
    period = models.CharField(max_length=8, choices=Period.choices, default=Period.MONTH)
    # A count of sales, or revenue in the smallest currency unit.
    threshold = models.BigIntegerField(validators=[MinValueValidator(1)])
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(threshold__gte=1), name="tier_threshold_positive"),
            models.CheckConstraint(condition=~Q(group=models.F("target")), name="tier_moves_elsewhere"),
            models.CheckConstraint(condition=~Q(period=Period.LIFETIME), name="tier_period_calendar"),
        ]

    def __str__(self) -> str:
        return f"{self.direction} {self.group_id} -> {self.target_id} at {self.threshold} {self.metric}/{self.period}"


class Bonus(models.Model):
    """A one-off payment when a partner of the group reaches `threshold` of `metric` in a period (lifetime: the
    first N sales or revenue X ever). Paid as a commission of kind bonus (BonusAward), at most once per partner and
    period."""

    group = models.ForeignKey(PartnerGroup, on_delete=models.CASCADE, related_name="bonuses")
    name = models.CharField(max_length=100)
    metric = models.CharField(max_length=8, choices=Metric.choices)
    period = models.CharField(max_length=8, choices=Period.choices, default=Period.LIFETIME)
    threshold = models.BigIntegerField(validators=[MinValueValidator(1)])
    amount_cents = models.BigIntegerField(validators=[MinValueValidator(1)])
    currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name_plural = "bonuses"
        constraints = [
            models.CheckConstraint(condition=Q(threshold__gte=1), name="bonus_threshold_positive"),
            models.CheckConstraint(condition=Q(amount_cents__gte=1), name="bonus_amount_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class BonusAward(models.Model):
    """A bonus paid: its commission, and the figure that reached the threshold. The constraint is what makes a
    milestone pay once per partner and period, whatever runs at the same time."""

    bonus = models.ForeignKey(Bonus, on_delete=models.RESTRICT, related_name="awards")
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="+")
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+")
    # "all", "2026-12" or "2026-Q4" (groups.periods.period_key).
    period_key = models.CharField(max_length=16)
    figure = models.BigIntegerField()
    commission = models.OneToOneField("commissions.Commission", on_delete=models.PROTECT, related_name="bonus_award")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bonus", "partner", "period_key"], name="bonus_once_per_period")]

    def __str__(self) -> str:
        return f"bonus {self.bonus_id} to partner {self.partner_id} for {self.period_key}"


class GroupChange(models.Model):
    """A partner put in a group: by whom (an owner, a tier rule, an import, an application) and, for a rule, the
    figure that triggered it. A rule moves a partner at most once per period (the constraint)."""

    class Reason(models.TextChoices):
        OWNER = "owner", "Moved by an owner"
        TIER = "tier", "Tier rule"
        IMPORT = "import", "Import"
        APPLICATION = "application", "Application"

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+")
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="group_changes")
    from_group = models.ForeignKey(PartnerGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    to_group = models.ForeignKey(PartnerGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    rule = models.ForeignKey(TierRule, on_delete=models.SET_NULL, null=True, blank=True, related_name="changes")
    period_key = models.CharField(max_length=16, blank=True, default="")
    figure = models.BigIntegerField(null=True, blank=True)
    actor = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        indexes = [models.Index(fields=["program", "partner", "-created_at"], name="group_change_partner_time")]
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "partner", "period_key"],
                condition=Q(rule__isnull=False),
                name="tier_move_once_per_period",
            )
        ]

    def __str__(self) -> str:
        return f"partner {self.partner_id}: {self.from_group_id} -> {self.to_group_id} ({self.reason})"


class CouponCode(SameWorkspace, models.Model):
    """A code a partner gives their audience ("JANE20"). A sale carrying it (the sale API's coupon_code, a Stripe
    checkout session's or invoice's promotion code) is the partner's when nothing else attributes it."""

    class Source(models.TextChoices):
        STRIPE = "stripe", "A Stripe promotion code made by the service"
        MANUAL = "manual", "Registered as it is (another processor, or made by hand)"
        IMPORT = "import", "Imported from another platform"

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="coupon_codes")
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="coupon_codes")
    # Stored upper-cased (groups.codes.code_normalized): codes are case-insensitive, as Stripe's promotion codes are.
    code = models.CharField(max_length=100)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.MANUAL)
    stripe_promotion_code_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("program", "partner")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["program", "code"], name="coupon_code_unique")]
        indexes = [models.Index(fields=["partner", "program"], name="coupon_partner_program")]

    def __str__(self) -> str:
        return self.code
