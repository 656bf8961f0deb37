from django.db import models
from django.db.models import F, Q
from django.utils import timezone as dj_timezone

from core.currency import Currency
from core.expressions import Negated
from programs.models import Partner, Program, ReferralLink, SameWorkspace


class CustomerStatus(models.TextChoices):
    CLICK = "click", "Clicked"
    LEAD = "lead", "Signed up"
    CONVERTED = "converted", "Paid"


class Customer(SameWorkspace, models.Model):
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="customers")
    click_id = models.CharField(max_length=255, unique=True)
    # NULL until a lead settles: "not saved yet" differs from any caller's id.
    customer_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    customer_status = models.CharField(max_length=16, choices=CustomerStatus.choices, default=CustomerStatus.CLICK)
    first_partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    first_link = models.ForeignKey(ReferralLink, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    email = models.EmailField(blank=True, default="")
    processor_customer_id = models.CharField(max_length=255, blank=True, default="")
    is_test = models.BooleanField(default=False)
    first_clicked_at = models.DateTimeField(default=dj_timezone.now)
    # The attribution window runs from the latest click, as the tracker's cookie is re-set on each one.
    last_clicked_at = models.DateTimeField(default=dj_timezone.now)
    first_sale_at = models.DateTimeField(null=True, blank=True)
    # The visitor (fraud.rules.visitor_hash: IP and user agent, keyed; never the raw IP) of the click that created
    # the customer, and the flags that click raised (paid_ads): the sale rules read them (fraud.sale).
    visitor_hash = models.CharField(max_length=32, blank=True, default="")
    click_flags = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)

    workspace_relations = ("program", "first_partner", "first_link")

    class Meta:
        indexes = [
            # The visitor_velocity rule counts a visitor's customers in a window.
            models.Index(
                fields=["program", "visitor_hash", "first_clicked_at"],
                condition=~Q(visitor_hash=""),
                name="customer_program_visitor",
            ),
            models.Index(fields=["program", "customer_key"], name="customer_program_key"),
            models.Index(fields=["program", "email"], name="customer_program_email"),
            models.Index(fields=["program", "processor_customer_id"], name="customer_program_processor"),
        ]

    def __str__(self) -> str:
        return self.click_id


class ClickEvent(SameWorkspace, models.Model):
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="click_events")
    partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, related_name="+")
    link = models.ForeignKey(ReferralLink, on_delete=models.SET_NULL, null=True, related_name="+")
    customer = models.ForeignKey(Customer, on_delete=models.SET_NULL, null=True, related_name="clicks")
    click_id = models.CharField(max_length=255, db_index=True)
    session_id = models.CharField(max_length=255, blank=True, default="")
    page_url = models.TextField(blank=True, default="")
    page_title = models.TextField(blank=True, default="")
    referrer_url = models.TextField(blank=True, default="")
    user_agent = models.TextField(blank=True, default="")
    screen_resolution = models.CharField(max_length=32, blank=True, default="")
    viewport_size = models.CharField(max_length=32, blank=True, default="")
    language = models.CharField(max_length=35, blank=True, default="")
    timezone = models.CharField(max_length=64, blank=True, default="")
    geo_country = models.CharField(max_length=2, blank=True, default="")
    geo_region = models.CharField(max_length=128, blank=True, default="")
    geo_city = models.CharField(max_length=128, blank=True, default="")
    device_type = models.CharField(max_length=16, blank=True, default="")
    device_os = models.CharField(max_length=64, blank=True, default="")
    browser_name = models.CharField(max_length=64, blank=True, default="")
    is_test = models.BooleanField(default=False)
    # How the click counts (fraud.rules.Traffic): "" counted; duplicate, bot and prefetch are recorded but not
    # counted, and bot and prefetch clicks have no customer (never attributed).
    traffic = models.CharField(max_length=16, blank=True, default="")
    # Rules that flagged the click without changing how it counts (paid_ads).
    flags = models.JSONField(default=list, blank=True)
    visitor_hash = models.CharField(max_length=32, blank=True, default="")
    click_timestamp = models.DateTimeField(default=dj_timezone.now)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)

    workspace_relations = ("program", "partner", "link", "customer")

    class Meta:
        indexes = [
            # The duplicate_click rule's probe: a counted click of the visitor on the link within the window.
            models.Index(
                fields=["visitor_hash", "link", "click_timestamp"],
                condition=Q(traffic=""),
                name="click_counted_visitor_link",
            ),
            # The clicks the rules marked, newest first (tracking.selectors.clicks.marked_clicks): by (-id), which no
            # other index orders by, so a program with few marked clicks never has its page read off the primary key.
            models.Index(
                F("program"),
                Negated(F("id")),
                condition=~Q(traffic="") | ~Q(flags=[]),
                name="click_program_flagged",
            ),
            # The events list reads newest first with the id as tie-break: the index gives that order whole.
            models.Index(fields=["program", "is_test", "-click_timestamp", "-id"], name="click_program_time_id"),
            # The agent API's keyset pages: one program's events, newest first by id.
            models.Index(fields=["program", "is_test", "-id"], name="click_program_id"),
        ]

    def __str__(self) -> str:
        return f"click #{self.pk} {self.click_id}"


class LeadEvent(SameWorkspace, models.Model):
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="lead_events")
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="leads")
    partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, related_name="+")
    click_id = models.CharField(max_length=255, db_index=True)
    customer_key = models.CharField(max_length=255, blank=True, default="")
    email = models.EmailField(blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    page_url = models.TextField(blank=True, default="")
    # A browser lead on a server_required program waits here until the server confirms it.
    provisional = models.BooleanField(default=False)
    settled_at = models.DateTimeField(null=True, blank=True)
    server_mode = models.BooleanField(default=False)
    is_test = models.BooleanField(default=False)
    lead_timestamp = models.DateTimeField(default=dj_timezone.now)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)

    workspace_relations = ("program", "customer", "partner")

    class Meta:
        indexes = [
            models.Index(fields=["program", "is_test", "-lead_timestamp", "-id"], name="lead_program_time_id"),
            # The rollup task finds the days whose leads settled lately (tracking.rollups).
            models.Index(fields=["settled_at"], name="lead_settled_at"),
            models.Index(fields=["program", "is_test", "-id"], name="lead_program_id"),
            models.Index(fields=["program", "email"], name="lead_program_email"),
            models.Index(fields=["program", "customer_key"], name="lead_program_key"),
        ]

    def __str__(self) -> str:
        return f"lead #{self.pk} {self.click_id}"


class SaleType(models.TextChoices):
    PAYMENT = "payment"
    SUBSCRIPTION = "subscription"


class SubscriptionInterval(models.TextChoices):
    MONTHLY = "monthly"
    QUARTERLY = "quarterly"
    ANNUAL = "annual"


# An imported sale's provider: this, then the platform ("import:rewardful"). Its provider_payment_id is the payment
# processor's id for the sale where the platform gave one, which is how a Stripe refund after the move finds it.
IMPORTED_PROVIDER_PREFIX = "import:"


class SaleEvent(SameWorkspace, models.Model):
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="sale_events")
    customer = models.ForeignKey(Customer, on_delete=models.SET_NULL, null=True, blank=True, related_name="sales")
    partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    click_id = models.CharField(max_length=255, blank=True, default="")
    # The caller's transaction_id. Globally unique among live sales (and, separately, among test sales):
    # the constraint, not a prior read, stops duplicates.
    processor_event_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 (test sales may omit it)
    amount_cents = models.BigIntegerField(default=0)
    tax_cents = models.BigIntegerField(null=True, blank=True)
    currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD)
    sale_type = models.CharField(max_length=16, choices=SaleType.choices, default=SaleType.PAYMENT)
    payment_status = models.CharField(max_length=16, default="paid")
    is_recurring = models.BooleanField(default=False)
    provider = models.CharField(max_length=32, blank=True, default="")
    provider_payment_id = models.CharField(max_length=255, blank=True, default="")
    subscription_id = models.CharField(max_length=255, blank=True, default="")
    subscription_interval = models.CharField(max_length=16, blank=True, default="")
    product_id = models.CharField(max_length=255, blank=True, default="")
    occurred_at = models.DateTimeField(null=True, blank=True)
    line_items = models.JSONField(null=True, blank=True)
    attributed = models.BooleanField(default=True)
    # Set when the commission policy decided this attributed sale pays nothing (commissions.calculations.
    # NoCommission), in the decision's transaction: an attributed live sale with neither this nor a
    # commission is one whose commission was lost, and only such a sale is the reconciler's to complete.
    no_commission_reason = models.CharField(max_length=32, blank=True, default="")
    # Which lookup found the sale's customer, written with the sale (insight.explain reads it): "customer_key"
    # or "click_id" on the sale endpoint, "<provider>:<step>" for a billing platform's payment (tracking.payments).
    # Empty when no customer matched, and on sales recorded before it existed.
    attributed_by = models.CharField(max_length=48, blank=True, default="")
    is_test = models.BooleanField(default=False)
    sale_date = models.DateTimeField(default=dj_timezone.now)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)

    workspace_relations = ("program", "customer", "partner")

    class Meta:
        indexes = [
            models.Index(fields=["program", "is_test", "-sale_date", "-id"], name="sale_program_time_id"),
            models.Index(fields=["program", "is_test", "-id"], name="sale_program_id"),
            # A processor refund of an imported sale looks it up by the processor's payment id.
            models.Index(fields=["program", "provider_payment_id"], name="sale_program_payment_id"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["processor_event_id"], condition=Q(is_test=False), name="sale_unique_transaction_live"
            ),
            models.UniqueConstraint(
                fields=["processor_event_id"], condition=Q(is_test=True), name="sale_unique_transaction_test"
            ),
            # Test sales may omit the amount; real ones never.
            models.CheckConstraint(
                condition=Q(amount_cents__gt=0) | Q(is_test=True, amount_cents__gte=0),
                name="sale_amount_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"sale #{self.pk} {self.processor_event_id or ''}"


class TrackingLog(models.Model):
    """What happened to each tracking call, for the integrator's checklist and for support."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, null=True, blank=True, related_name="logs")
    event = models.CharField(max_length=64)
    outcome = models.CharField(max_length=32, default="ok")
    is_test = models.BooleanField(default=False)
    request_id = models.CharField(max_length=128, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)

    class Meta:
        indexes = [models.Index(fields=["program", "-created_at"], name="log_program_time")]

    def __str__(self) -> str:
        return f"{self.event} {self.outcome} #{self.pk}"


class PageVisit(models.Model):
    """A page view reported by the browser tracker (POST /api/v1/track/visit)."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="visits")
    click_id = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    page_url = models.TextField(blank=True, default="")
    page_title = models.TextField(blank=True, default="")
    referrer_url = models.TextField(blank=True, default="")
    referrer_domain = models.CharField(max_length=253, blank=True, default="")
    utm_source = models.CharField(max_length=255, blank=True, default="")
    utm_medium = models.CharField(max_length=255, blank=True, default="")
    utm_campaign = models.CharField(max_length=255, blank=True, default="")
    is_test = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=dj_timezone.now, editable=False)

    class Meta:
        indexes = [models.Index(fields=["program", "-created_at"], name="visit_program_time")]

    def __str__(self) -> str:
        return f"visit #{self.pk} {self.page_url[:60]}"


class ProcessorEvent(models.Model):
    """A verified payment event from a program's connected Stripe account, stored once by Stripe's event id
    (a redelivery is acknowledged and not processed again) and processed by a Celery task."""

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        PROCESSED = "processed", "Processed"
        IGNORED = "ignored", "Ignored"
        FAILED = "failed", "Failed"

    provider = models.CharField(max_length=32, default="stripe")
    event_id = models.CharField(max_length=255, unique=True)
    event_type = models.CharField(max_length=100)
    account_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    program = models.ForeignKey(
        Program, on_delete=models.SET_NULL, null=True, blank=True, related_name="processor_events"
    )
    livemode = models.BooleanField(default=False)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    outcome = models.CharField(max_length=255, blank=True, default="")
    sale = models.ForeignKey("SaleEvent", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    received_at = models.DateTimeField(default=dj_timezone.now, editable=False)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["program", "-received_at"], name="processor_event_program_time")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id}"


class DailyRollup(models.Model):
    """One program's events of one UTC day, per partner and link, as tracking.rollups counts them: reads that
    would otherwise group raw events (performance, readiness, partners) sum these rows plus the live delta of the
    events not folded in yet. partner_id and link_id are plain ids, 0 for none (a unique key over NULLs would not
    merge); a partner deleted later keeps its id here and the reads show it as "(no partner)", as the raw events do."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    is_test = models.BooleanField(default=False)
    partner_id = models.BigIntegerField(default=0, db_default=0)
    link_id = models.BigIntegerField(default=0, db_default=0)
    clicks = models.BigIntegerField(default=0, db_default=0)
    # Settled leads; a provisional one (a browser signup waiting for the server) counts apart.
    leads = models.BigIntegerField(default=0, db_default=0)
    provisional_leads = models.BigIntegerField(default=0, db_default=0)
    leads_with_key = models.BigIntegerField(default=0, db_default=0)
    sales = models.BigIntegerField(default=0, db_default=0)
    attributed_sales = models.BigIntegerField(default=0, db_default=0)
    # Of the attributed sales: their amounts, and what their commissions still pay (commissions.selectors).
    revenue_cents = models.BigIntegerField(default=0, db_default=0)
    commission_cents = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["program", "day", "is_test", "partner_id", "link_id"], name="daily_rollup_unique"
            )
        ]

    def __str__(self) -> str:
        return f"rollup {self.program_id} {self.day} partner {self.partner_id} link {self.link_id}"


class RollupState(models.Model):
    """The rollups' watermarks (one row): events with an id at or below them are folded into DailyRollup; the
    reads count the ones above live. `generation` grows with every run, so a read can tell that a run
    committed while it was reading and read again."""

    click_id = models.BigIntegerField(default=0)
    lead_id = models.BigIntegerField(default=0)
    sale_id = models.BigIntegerField(default=0)
    generation = models.BigIntegerField(default=0)
    # Changes to events already folded in (a lead settling, a commission refunded or voided) are looked for
    # from here on the next run.
    changes_seen_at = models.DateTimeField(null=True, blank=True)
    # Clicks at or below this id were counted on the referral link and partner-program counters by the click
    # itself, before the counters moved to the rollups: a run adds only the clicks above it (set by migration).
    counters_from_click_id = models.BigIntegerField(default=0)
    # Likewise the live sales at or below this id were counted on the partner-program sales and revenue counters
    # by the sale itself: a run adds only the sales above it (set by migration).
    counters_from_sale_id = models.BigIntegerField(default=0)
    # Raw clicks before this day were dropped (manage.py prune_clicks); only the rollups count them.
    clicks_pruned_before = models.DateField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"rollups up to click {self.click_id}, lead {self.lead_id}, sale {self.sale_id}"
