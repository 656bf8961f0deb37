"""The answers of tracking's read routes, shared by every surface that serves them. The readiness verdict, the
performance report and the click sources are output serializers: the views render their bodies through them and
the OpenAPI description is read from them, so the two cannot drift apart. The explanations' items (a sale, a
partner, a link, a click, a refused sale, a customer, a lead, a customer's sale, a refund step, a ledger entry,
the Stripe event, a review decision) are output serializers too; the explanations' envelopes are described only.

Each class is named after its component in the OpenAPI description (drf-spectacular drops "Serializer")."""

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field, inline_serializer
from rest_framework import serializers

from core.api.fields import AnyField
from core.api.output import output_serializer


def _time() -> serializers.DateTimeField:
    # A new field each time: one field instance under two names of a serializer keeps only the last name.
    return serializers.DateTimeField(allow_null=True)


DayRangeSerializer = output_serializer(
    "DayRangeSerializer", {"from": serializers.DateField(), "to": serializers.DateField()}
)


# The report's numbers, in the order its rows hold them.
class _PerformanceNumbers(serializers.Serializer[Any]):
    clicks = serializers.IntegerField()
    leads = serializers.IntegerField()
    sales = serializers.IntegerField()
    revenue_cents = serializers.IntegerField()
    commission_cents = serializers.IntegerField()


# A serializer's fields list its bases' first, in the order of the bases: a day's date, a partner's id and name come
# before the numbers.
class _Day(serializers.Serializer[Any]):
    date = serializers.DateField()


class _Partner(serializers.Serializer[Any]):
    partner_id = serializers.IntegerField(allow_null=True)
    partner_name = serializers.CharField()


class PerformanceTotalsSerializer(_PerformanceNumbers):
    pass


class PerformanceDaySerializer(_Day, _PerformanceNumbers):
    pass


class PerformancePartnerSerializer(_Partner, _PerformanceNumbers):
    pass


class TrackingPerformanceSerializer(serializers.Serializer[Any]):
    range = DayRangeSerializer()
    totals = PerformanceTotalsSerializer()
    by_day = serializers.ListField(child=PerformanceDaySerializer())
    by_partner = serializers.ListField(child=PerformancePartnerSerializer())


# The performance report's body (tracking.selectors.performance.tracking_performance_get under "data").
TrackingPerformanceResultSerializer = output_serializer(
    "TrackingPerformanceResultSerializer", {"data": TrackingPerformanceSerializer()}
)


class ReadinessLastEventAtSerializer(serializers.Serializer[Any]):
    click = serializers.DateTimeField(allow_null=True)
    lead = serializers.DateTimeField(allow_null=True)
    sale = serializers.DateTimeField(allow_null=True)


class ReadinessCheckSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=["pass", "warn", "fail"])
    title = serializers.CharField()
    detail = serializers.CharField()
    next_step = serializers.CharField()


class ReadinessMistakeSerializer(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="Stable, e.g. sale_customer_key_without_lead")
    title = serializers.CharField()
    count = serializers.IntegerField(help_text="How often in the window")
    last_seen_at = serializers.DateTimeField(allow_null=True)
    fix = serializers.CharField()
    docs = serializers.CharField(help_text="The code's section of docs/readiness.md, served at /docs/readiness#<code>")
    severity = serializers.ChoiceField(
        choices=["fail", "warn"], help_text="fail: it lost something (calls refused); it fails integration_mistakes"
    )


class ReadinessClicksSetAsideSerializer(serializers.Serializer[Any]):
    days = serializers.IntegerField(help_text="The window: the last N days (among the latest 1,000 marked clicks)")
    total = serializers.IntegerField()
    by_reason = serializers.DictField(
        child=serializers.IntegerField(), help_text="Per fraud traffic value: duplicate, bot, prefetch"
    )


# The readiness verdict (insight.readiness.readiness_compute), as every surface answers it.
class ReadinessVerdictSerializer(serializers.Serializer[Any]):
    program_id = serializers.IntegerField()
    ready = serializers.BooleanField(help_text="No check fails")
    status = serializers.ChoiceField(choices=["ready", "ready_with_warnings", "incomplete"])
    next_step = serializers.CharField(
        help_text="The worst mistake's fix, else the first failing (else warning) check's next step"
    )
    checked_at = serializers.DateTimeField()
    counts = serializers.DictField(child=serializers.IntegerField())
    last_event_at = ReadinessLastEventAtSerializer()
    checks = serializers.ListField(child=ReadinessCheckSerializer())
    mistakes = serializers.ListField(
        help_text="Integration mistakes seen in the last 7 days of calls, worst first (fail before warn, then the "
        "most frequent)",
        child=ReadinessMistakeSerializer(),
    )
    mistakes_count = serializers.IntegerField()
    clicks_set_aside = ReadinessClicksSetAsideSerializer(
        help_text="Live clicks the fraud rules set aside lately (not counted as clicks), and why"
    )


class ReferrerDomainSerializer(serializers.Serializer[Any]):
    domain = serializers.CharField()
    clicks = serializers.IntegerField()


class UtmSourceSerializer(serializers.Serializer[Any]):
    utm_source = serializers.CharField()
    clicks = serializers.IntegerField()


class ClickSourcesSampleSerializer(serializers.Serializer[Any]):
    clicks = serializers.IntegerField(help_text="Clicks counted")
    limit = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="More clicks in range than the limit")


class ClickSourcesSerializer(serializers.Serializer[Any]):
    range = DayRangeSerializer()
    referrer_domains = serializers.ListField(child=ReferrerDomainSerializer())
    utm_sources = serializers.ListField(child=UtmSourceSerializer())
    sample = ClickSourcesSampleSerializer()


# The click sources report's body (tracking.selectors.sources.click_sources_get under "data").
ClickSourcesResultSerializer = output_serializer("ClickSourcesResultSerializer", {"data": ClickSourcesSerializer()})


# --- The explanations (insight.explain) -------------------------------------------------------------
# Its items (a sale, a partner, a link, a click, a sale refused after the window) are rendered by these output
# serializers from the rows themselves. Times stay datetimes (format=None): the explain page formats them and the
# JSON renderer writes them as every explain body always has.


def _datetime(**kwargs: Any) -> serializers.DateTimeField:
    return serializers.DateTimeField(format=None, **kwargs)


class ExplainPartnerSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()


class ExplainLinkSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    short_link = serializers.CharField()


class ExplainFraudRuleSerializer(serializers.Serializer[Any]):
    rule = serializers.CharField(help_text="The fraud rule (duplicate_click, bot, paid_ads, self_referral, ...)")
    description = serializers.CharField(help_text="What the rule checks")
    status = serializers.ChoiceField(
        choices=["not_counted", "never_attributed", "flagged", "held", "released", "voided", "ended"],
        help_text="held: it holds the commission now; released, voided or ended (by a refund): its hold's last "
        "decision",
    )
    text = serializers.CharField(help_text="<rule>: what it found, in one line")


# A sale (tracking.models.SaleEvent) as its explanation shows it.
class ExplainedSaleSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    transaction_id = serializers.CharField(source="processor_event_id", allow_null=True)
    amount_cents = serializers.IntegerField()
    currency = serializers.CharField()
    sale_type = serializers.CharField()
    is_recurring = serializers.BooleanField()
    product_id = serializers.CharField()
    provider = serializers.CharField()
    sale_date = _datetime()
    is_test = serializers.BooleanField()


class _AsIs:
    """Output only: the value as read (a number stays the int or float it is)."""

    def to_representation(self, value: Any) -> Any:
        return value


class _AsIsFloatField(_AsIs, serializers.FloatField):
    pass


class _AsIsIntegerField(_AsIs, serializers.IntegerField):
    pass


# A sale refused after the window, from its tracking log row (tracking.models.TrackingLog: what the sale service
# logged in details).
class ExplainRefusedSaleSerializer(serializers.Serializer[Any]):
    transaction_id = serializers.CharField(source="details.transaction_id", allow_null=True)
    refused_at = _datetime(source="created_at")
    click_age_days = _AsIsFloatField(source="details.click_age_days", allow_null=True)
    window_days = _AsIsIntegerField(source="details.window_days", allow_null=True)
    attributed_by = serializers.CharField(source="details.attributed_by", default="")


# A click (tracking.models.ClickEvent) of a customer or of a click id: the click rules' steps need the program's
# rules (context "click_rules": insight.explain's _ClickRules).
class ExplainClickEventSerializer(serializers.Serializer[Any]):
    clicked_at = _datetime(source="click_timestamp")
    link = ExplainLinkSerializer(allow_null=True)
    page_url = serializers.CharField()
    traffic = serializers.CharField()
    flags = serializers.SerializerMethodField()
    rules = serializers.SerializerMethodField()

    def get_flags(self, click: Any) -> list[str]:
        return list(click.flags or [])

    @extend_schema_field(ExplainFraudRuleSerializer(many=True))
    def get_rules(self, click: Any) -> list[dict[str, str]]:
        steps: list[dict[str, str]] = self.context["click_rules"].steps(traffic=click.traffic, flags=click.flags)
        return steps


# A customer (tracking.models.Customer) as its explanation shows it.
class ExplainCustomerSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    click_id = serializers.CharField()
    customer_key = serializers.SerializerMethodField(help_text="Empty until a lead saves one")
    status = serializers.CharField(source="customer_status")
    is_test = serializers.BooleanField()
    first_clicked_at = _datetime()
    last_clicked_at = _datetime()
    first_sale_at = _datetime(allow_null=True)
    stripe_customer_id = serializers.CharField(source="processor_customer_id")

    def get_customer_key(self, customer: Any) -> str:
        return customer.customer_key or ""


# A customer's lead (tracking.models.LeadEvent).
class ExplainLeadSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    customer_key = serializers.CharField()
    click_id = serializers.CharField()
    provisional = serializers.BooleanField()
    server_mode = serializers.BooleanField()
    created_at = _datetime(source="lead_timestamp")


# A refund applied to a commission (commissions.selectors.commission_refund_steps: one outbox row per refund).
class ExplainRefundStepSerializer(serializers.Serializer[Any]):
    step = serializers.IntegerField(source="refund_step")
    reason = serializers.CharField(source="refund_reason")
    reversed = serializers.BooleanField(help_text="The refund reversed the commission whole")
    was_paid_out = serializers.BooleanField()
    created_at = _datetime()


class ExplainSaleCommissionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    amount_cents = serializers.IntegerField()
    status = serializers.CharField()
    held = serializers.SerializerMethodField()
    hold_rule = serializers.CharField()
    flags = serializers.SerializerMethodField()

    def get_held(self, commission: Any) -> bool:
        return commission.held_at is not None

    def get_flags(self, commission: Any) -> list[str]:
        return list(commission.flags or [])


class ExplainSaleSelectorSerializer(serializers.Serializer[Any]):
    transaction_id = serializers.CharField(source="processor_event_id", allow_null=True)


# A customer's sale (tracking.models.SaleEvent, its commission joined) summarised; context "not_recorded": what
# attributed_by says of an attributed sale recorded before explanations.
class ExplainCustomerSaleSerializer(serializers.Serializer[Any]):
    transaction_id = serializers.CharField(source="processor_event_id", allow_null=True)
    amount_cents = serializers.IntegerField()
    currency = serializers.CharField()
    sale_type = serializers.CharField()
    is_recurring = serializers.BooleanField()
    sale_date = _datetime()
    is_test = serializers.BooleanField()
    attributed_by = serializers.SerializerMethodField()
    commission = ExplainSaleCommissionSerializer(allow_null=True)
    no_commission_reason = serializers.CharField()
    explain = ExplainSaleSelectorSerializer(source="*", help_text="This sale's own explanation's selector")

    def get_attributed_by(self, sale: Any) -> str:
        return sale.attributed_by or (self.context["not_recorded"] if sale.customer_id else "")


# The Stripe event that recorded a sale (tracking.models.ProcessorEvent).
class ExplainProcessorEventSerializer(serializers.Serializer[Any]):
    event_id = serializers.CharField()
    event_type = serializers.CharField()
    outcome = serializers.CharField()


# A ledger entry of a commission (commissions.models.LedgerEntry) with the running total up to it: rendered from
# insight.explain's LedgerLine.
class ExplainLedgerEntrySerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="entry.pk")
    kind = serializers.CharField(source="entry.kind")
    amount_cents = serializers.IntegerField(source="entry.amount_cents")
    currency = serializers.CharField(source="entry.currency")
    memo = serializers.CharField(source="entry.memo")
    created_at = _datetime(source="entry.created_at")
    running_total_cents = serializers.IntegerField()


# A decision on a commission's hold (commissions.models.CommissionReview).
class ExplainReviewDecisionSerializer(serializers.Serializer[Any]):
    action = serializers.CharField()
    rule = serializers.CharField()
    reason = serializers.CharField()
    actor = serializers.CharField()
    created_at = _datetime()


_NAMED = ExplainPartnerSerializer(allow_null=True)
_LINK = ExplainLinkSerializer(allow_null=True)
_WINDOW_FIELDS: dict[str, AnyField] = {
    "window_days": serializers.IntegerField(help_text="The program's attribution window (cookie_duration)"),
    "click_age_days": serializers.FloatField(allow_null=True, help_text="Days from the click to the sale"),
    "within": serializers.BooleanField(),
    "text": serializers.CharField(),
}
_FRAUD_RULES = serializers.ListField(
    child=ExplainFraudRuleSerializer(), help_text="The fraud rules that decided something"
)
_REVIEW = inline_serializer(
    "ExplainReview",
    allow_null=True,
    fields={
        "held": serializers.BooleanField(help_text="On hold: neither approved nor credited until released"),
        "hold_rule": serializers.CharField(help_text="The rule that holds it; empty for an owner's hold"),
        "hold_reason": serializers.CharField(),
        "held_at": _time(),
        "flags": serializers.ListField(child=serializers.CharField(), help_text="Every rule that fired on the sale"),
        "rules": _FRAUD_RULES,
        "actions": serializers.CharField(help_text="What the owner can do while it is held (empty otherwise)"),
        "text": serializers.CharField(),
        "history": ExplainReviewDecisionSerializer(many=True, help_text="Decisions, oldest first"),
    },
)
EXPLAIN_SALE = inline_serializer(
    "SaleExplanation",
    fields={
        "kind": serializers.ChoiceField(choices=["sale"]),
        "transaction_id": serializers.CharField(),
        "recorded": serializers.BooleanField(help_text="False for a sale refused after the window (not stored)"),
        "outcome": serializers.ChoiceField(
            choices=[
                "commission",
                "no_commission",
                "commission_pending",
                "no_partner",
                "unattributed",
                "test",
                "attribution_window_expired",
            ]
        ),
        "summary": serializers.CharField(),
        "sale": ExplainedSaleSerializer(allow_null=True),
        "attribution": inline_serializer(
            "ExplainAttribution",
            fields={
                "path": serializers.ChoiceField(choices=["api", "stripe", "billing", "unknown"]),
                "matched_rule": serializers.CharField(
                    help_text="customer_key, click_id, coupon_code, stripe:<step>; or why none is known"
                ),
                "rules": serializers.ListField(
                    child=inline_serializer(
                        "ExplainRule",
                        fields={
                            "rule": serializers.CharField(),
                            "description": serializers.CharField(),
                            "status": serializers.ChoiceField(choices=["matched", "no_match", "not_tried", "unknown"]),
                        },
                    ),
                    help_text="The path's lookup order (the sale endpoint's two, or the Stripe steps, which a billing "
                    "platform's payment follows too), then, for a "
                    "program with coupon codes, the code rule (coupon_code, or promotion_code on Stripe's path)",
                ),
                "click": inline_serializer(
                    "ExplainClick",
                    allow_null=True,
                    fields={
                        "click_id": serializers.CharField(),
                        "link": _LINK,
                        "partner": _NAMED,
                        "first_clicked_at": serializers.DateTimeField(),
                        "clicked_at": serializers.DateTimeField(help_text="The click that counted for the sale"),
                        "rules": _FRAUD_RULES,
                    },
                ),
                "window": inline_serializer(
                    "ExplainSaleWindow",
                    allow_null=True,
                    fields={
                        **_WINDOW_FIELDS,
                        "applied": serializers.BooleanField(
                            help_text="False when the customer had converted before: the sale follows the customer"
                        ),
                    },
                ),
            },
        ),
        "partner": _NAMED,
        "processor_event": ExplainProcessorEventSerializer(allow_null=True),
        "commission": inline_serializer(
            "ExplainCommission",
            allow_null=True,
            fields={
                "policy": serializers.DictField(
                    help_text="source (program or product), product_id, commission_type, rate, recurring, "
                    "duration_months, hold_days; group {id (null: the default group), name} and recorded (true: "
                    "the type and rate the commission kept when it was computed, whatever the group's terms now)"
                ),
                "arithmetic": serializers.DictField(
                    help_text="sale_amount_cents, rate, computed_cents, matches_commission, text"
                ),
                "id": serializers.IntegerField(allow_null=True),
                "amount_cents": serializers.IntegerField(allow_null=True),
                "currency": serializers.CharField(),
                "status": serializers.CharField(allow_null=True),
                "credited": serializers.BooleanField(),
                "hold_until": _time(),
                "approved_at": _time(),
                "no_commission_reason": serializers.CharField(),
                "no_commission_text": serializers.CharField(),
                "payable_cents": serializers.IntegerField(
                    allow_null=True,
                    help_text="What the commission still pays in its state (0 once reversed, or when a refund "
                    "cancelled it pending); null with no commission",
                ),
                "payable_text": serializers.CharField(help_text='In words: "still pays 9.80 USD: credited"'),
            },
        ),
        "review": _REVIEW,
        "refunds": inline_serializer(
            "ExplainRefunds",
            fields={
                "count": serializers.IntegerField(),
                "sale_refunded_cents": serializers.IntegerField(),
                "deducted_cents": serializers.IntegerField(),
                "refund_ids": serializers.ListField(child=serializers.CharField()),
                "steps": ExplainRefundStepSerializer(many=True),
                "text": serializers.CharField(),
            },
        ),
        "ledger": inline_serializer(
            "ExplainLedger",
            fields={
                "entries": ExplainLedgerEntrySerializer(many=True),
                "total_cents": serializers.IntegerField(),
            },
        ),
    },
)
EXPLAIN_CUSTOMER = inline_serializer(
    "CustomerExplanation",
    fields={
        "kind": serializers.ChoiceField(choices=["customer"]),
        "customer": ExplainCustomerSerializer(),
        "partner": _NAMED,
        "link": _LINK,
        "clicks": inline_serializer(
            "ExplainCustomerClicks",
            fields={
                "count": serializers.IntegerField(),
                "counted": serializers.IntegerField(help_text="Not duplicates, bots or prefetches"),
                "recent": ExplainClickEventSerializer(many=True, help_text="The latest clicks, newest first"),
            },
        ),
        "rules": _FRAUD_RULES,
        "leads": ExplainLeadSerializer(many=True),
        "sales": ExplainCustomerSaleSerializer(many=True),
        "window": inline_serializer(
            "ExplainCustomerWindow",
            fields={
                "window_days": serializers.IntegerField(),
                "click_age_days": serializers.FloatField(help_text="Age of the latest click now"),
                "converted": serializers.BooleanField(),
                "open": serializers.BooleanField(help_text="A sale now would be attributed"),
                "text": serializers.CharField(),
            },
        ),
        "refused_sales": ExplainRefusedSaleSerializer(many=True, help_text="Sales refused after the window"),
    },
)
EXPLAIN_CLICK = inline_serializer(
    "ClickExplanation",
    fields={
        "kind": serializers.ChoiceField(choices=["click"]),
        "click_id": serializers.CharField(),
        "outcome": serializers.ChoiceField(choices=["bot", "prefetch", "no_customer"]),
        "attributed": serializers.BooleanField(help_text="Always false: no customer has this click id"),
        "summary": serializers.CharField(),
        "traffic": serializers.CharField(help_text="How the latest click counts (bot, prefetch, duplicate, or empty)"),
        "flags": serializers.ListField(child=serializers.CharField()),
        "rules": _FRAUD_RULES,
        "partner": _NAMED,
        "link": _LINK,
        "clicks": ExplainClickEventSerializer(many=True, help_text="The clicks, newest first"),
    },
)
EXPLAIN_OK = inline_serializer(
    "ExplainResult",
    fields={
        "data": PolymorphicProxySerializer(
            component_name="Explanation",
            serializers={"sale": EXPLAIN_SALE, "customer": EXPLAIN_CUSTOMER, "click": EXPLAIN_CLICK},
            resource_type_field_name="kind",
        )
    },
)
