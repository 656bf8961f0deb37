"""Inputs of the dashboard API and the program-key report routes, and the shapes their answers take in the
OpenAPI description. Query strings are checked strictly ("2.0" is not a page number) and every failure
names the parameter; an empty parameter (`?eventType=`) counts as absent, as dashboard filter forms send."""

import re
from datetime import date, timedelta
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, inline_serializer
from rest_framework import serializers

from core.api.fields import LeanSerializer, StrictCharField, spec_messages
from core.api.query import (
    ID_MAX,
    DayField,
    Instant,
    InstantField,
    QueryIdAfterField,
    QueryIntegerField,
    TimeBounds,
)
from programs.api.serializers import PROGRAM_SETTINGS_FIELDS
from programs.calllog import LOGS_PAGE_SIZE_MAX, LogsFilter
from tracking.selectors.events import EVENT_TYPES
from tracking.services.verification import SYNTHETIC_EVENT_TYPES

PAGE_SIZE_MAX = 100
RANGE_DAYS_DEFAULT = 30
RANGE_DAYS_MAX = 366
TEST_EVENTS_DEFAULT_WINDOW = timedelta(hours=1)


class EventsQuerySerializer(LeanSerializer):
    page = QueryIntegerField(min_value=1, invalid="page must be a positive integer", required=False)
    pageSize = QueryIntegerField(
        min_value=1,
        max_value=PAGE_SIZE_MAX,
        invalid="pageSize must be a positive integer",
        too_big=f"pageSize must be at most {PAGE_SIZE_MAX}",
        required=False,
    )
    eventType = serializers.ChoiceField(
        choices=EVENT_TYPES,
        required=False,
        error_messages=spec_messages("eventType must be one of click, lead, conversion"),
    )
    dateFrom = InstantField(message="dateFrom must be an ISO 8601 date or date-time", required=False)
    dateTo = InstantField(message="dateTo must be an ISO 8601 date or date-time", required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start: Instant | None = attrs.get("dateFrom")
        end: Instant | None = attrs.get("dateTo")
        bounds = TimeBounds(start=start.value if start else None)
        if end is not None:
            # A date as the upper bound covers its whole day: up to the next midnight, exclusive.
            bounds = TimeBounds(
                start=bounds.start,
                end=end.value + timedelta(days=1) if end.is_date else end.value,
                end_exclusive=end.is_date,
            )
        if bounds.start is not None and bounds.end is not None:
            empty = bounds.start >= bounds.end if bounds.end_exclusive else bounds.start > bounds.end
            if empty:
                raise serializers.ValidationError("dateFrom must not be after dateTo")
        attrs["bounds"] = bounds
        attrs.setdefault("page", 1)
        attrs.setdefault("pageSize", 10)
        return attrs


class DayRangeQuerySerializer(LeanSerializer):
    """?dateFrom=YYYY-MM-DD&dateTo=YYYY-MM-DD, inclusive UTC days. Defaults: the last 30 days up to today;
    with only one end given, the other is 30 days away from it. At most 366 days."""

    dateFrom = DayField(message="dateFrom must be a date (YYYY-MM-DD)", required=False)
    dateTo = DayField(message="dateTo must be a date (YYYY-MM-DD)", required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        today: date = self.context["today"]
        span = timedelta(days=RANGE_DAYS_DEFAULT - 1)
        start: date | None = attrs.get("dateFrom")
        end: date | None = attrs.get("dateTo")
        if start is None:
            end = end or today
            start = end - span
        elif end is None:
            end = start + span
        if start > end:
            raise serializers.ValidationError("dateFrom must not be after dateTo")
        if (end - start).days + 1 > RANGE_DAYS_MAX:
            raise serializers.ValidationError(f"The date range must be at most {RANGE_DAYS_MAX} days")
        return {"date_from": start, "date_to": end}


class TestEventInputSerializer(LeanSerializer):
    program_id = serializers.JSONField(help_text="The program's id (integer or numeric string)")
    event_type = serializers.ChoiceField(
        choices=SYNTHETIC_EVENT_TYPES,
        error_messages={
            **spec_messages("event_type must be one of click, lead, sale"),
            "required": "event_type is required",
        },
    )
    click_id = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=255,
        error_messages=spec_messages("click_id must be a string of at most 255 characters"),
        help_text="lead: the test click to attach to (else one is made); sale: attribute to this test click",
    )
    customer_key = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=255,
        error_messages=spec_messages("customer_key must be a string of at most 255 characters"),
        help_text="lead: the user id to save (default generated); sale: attribute to this test customer",
    )


class CheckTestEventsInputSerializer(LeanSerializer):
    program_id = serializers.JSONField(help_text="The program's id (integer or numeric string)")
    since = InstantField(
        message="since must be an ISO 8601 date or date-time",
        required=False,
        allow_null=True,
        help_text="Default: one hour ago",
    )


EXPLAIN_SELECTORS = ("transaction_id", "click_id", "customer_key")
EXPLAIN_ONE_SELECTOR = "Give exactly one of transaction_id, click_id or customer_key"


class ExplainQuerySerializer(LeanSerializer):
    """Exactly one of ?transaction_id= (a sale), ?click_id= or ?customer_key= (a customer)."""

    transaction_id = serializers.CharField(
        required=False,
        max_length=255,
        error_messages=spec_messages("transaction_id must be a string of at most 255 characters"),
        help_text="Explain the sale with this transaction_id",
    )
    click_id = serializers.CharField(
        required=False,
        max_length=255,
        error_messages=spec_messages("click_id must be a string of at most 255 characters"),
        help_text="Explain the customer of this click (a bot's or a prefetch's click has none: the click alone)",
    )
    customer_key = serializers.CharField(
        required=False,
        max_length=255,
        error_messages=spec_messages("customer_key must be a string of at most 255 characters"),
        help_text="Explain the customer with this key (the one a sale with it would be credited to)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if len([name for name in EXPLAIN_SELECTORS if attrs.get(name)]) != 1:
            raise serializers.ValidationError(EXPLAIN_ONE_SELECTOR)
        return attrs


LOGS_STATUS = re.compile(r"^[1-5](?:xx|[0-9]{2})$")
LOGS_PAGE_SIZE_DEFAULT = 50


class LogsQuerySerializer(LeanSerializer):
    """Filters and page of the request log: ?status=4xx|404&route=&error_code=&since=&until=&cursor=&limit=,
    or ?after=<id> for the rows newer than one already seen (oldest first)."""

    status = serializers.RegexField(
        LOGS_STATUS,
        required=False,
        error_messages=spec_messages("status must be a class such as 4xx or a status code such as 404"),
        help_text="A status class (2xx, 4xx, 5xx…) or an exact status code",
    )
    route = serializers.CharField(
        required=False,
        max_length=64,
        error_messages=spec_messages("route must be a string of at most 64 characters"),
        help_text="The route's name as logged (e.g. track-sale)",
    )
    error_code = serializers.CharField(
        required=False,
        max_length=64,
        error_messages=spec_messages("error_code must be a string of at most 64 characters"),
        help_text="The error.code answered (e.g. no_attribution)",
    )
    since = InstantField(message="since must be an ISO 8601 date or date-time", required=False)
    until = InstantField(message="until must be an ISO 8601 date or date-time", required=False)
    cursor = QueryIntegerField(
        min_value=1,
        max_value=ID_MAX,
        invalid="cursor must be a positive integer",
        too_big="cursor must be a positive integer",
        required=False,
        help_text="meta.next_cursor of the previous page",
    )
    after = QueryIdAfterField(
        min_value=0,
        max_value=ID_MAX,
        invalid="after must be a non-negative integer",
        too_big="after must be a non-negative integer",
        required=False,
        help_text="Only rows with a greater id, oldest first (to follow the log)",
    )
    limit = QueryIntegerField(
        min_value=1,
        max_value=LOGS_PAGE_SIZE_MAX,
        invalid="limit must be a positive integer",
        too_big=f"limit must be at most {LOGS_PAGE_SIZE_MAX}",
        required=False,
        help_text=f"Rows per page (default {LOGS_PAGE_SIZE_DEFAULT})",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        since: Instant | None = attrs.get("since")
        until: Instant | None = attrs.get("until")
        end = None
        if until is not None:
            # A date as the upper bound covers its whole day.
            end = until.value + timedelta(days=1) - timedelta(microseconds=1) if until.is_date else until.value
        if since is not None and end is not None and since.value > end:
            raise serializers.ValidationError("since must not be after until")
        if attrs.get("cursor") is not None and attrs.get("after") is not None:
            raise serializers.ValidationError("Give cursor or after, not both")
        return {
            "filters": LogsFilter(
                status=attrs.get("status", ""),
                route=attrs.get("route", ""),
                error_code=attrs.get("error_code", ""),
                since=since.value if since else None,
                until=end,
            ),
            "cursor": attrs.get("cursor"),
            "after": attrs.get("after"),
            "limit": attrs.get("limit", LOGS_PAGE_SIZE_DEFAULT),
        }


# --- Response shapes (OpenAPI) -----------------------------------------------------------------------------

_TIME = serializers.DateTimeField(allow_null=True)

STATUS_OK = inline_serializer(
    "TrackingStatusResult",
    fields={
        "data": inline_serializer(
            "TrackingStatus",
            fields={
                "program": inline_serializer(
                    "TrackingStatusProgram",
                    fields={
                        **PROGRAM_SETTINGS_FIELDS,
                        "cookie_window_days": serializers.IntegerField(),
                        "key_rotation": inline_serializer(
                            "KeyRotation",
                            fields={
                                "flagged": serializers.BooleanField(),
                                "marked_at": _TIME,
                                "deadline": _TIME,
                                "retired": serializers.BooleanField(),
                            },
                        ),
                        "stripe": inline_serializer(
                            "StripeState",
                            fields={
                                "connected": serializers.BooleanField(),
                                "account_id": serializers.CharField(),
                                "connected_at": _TIME,
                                "last_event_at": _TIME,
                                "last_event_type": serializers.CharField(allow_null=True),
                            },
                        ),
                    },
                ),
                "role": serializers.ChoiceField(choices=["owner", "admin", "member"]),
                "actions": serializers.ListField(child=serializers.CharField()),
                "last_event_at": inline_serializer(
                    "LastEventAt", fields={"click": _TIME, "lead": _TIME, "sale": _TIME}
                ),
            },
        )
    },
)

EVENTS_OK = inline_serializer(
    "TrackingEventsResult",
    fields={
        "data": serializers.ListField(
            child=inline_serializer(
                "TrackingEvent",
                fields={
                    "id": serializers.IntegerField(),
                    "event_type": serializers.CharField(help_text="click, lead or conversion"),
                    "timestamp": serializers.DateTimeField(),
                    "click_id": serializers.CharField(),
                    "createdAt": serializers.DateTimeField(),
                    "session_id": serializers.CharField(required=False, help_text="click, lead"),
                    "page_url": serializers.CharField(required=False, help_text="click, lead"),
                    "converted": serializers.BooleanField(required=False, help_text="click, lead"),
                    "referrer_url": serializers.CharField(required=False, help_text="click"),
                    "geo_country": serializers.CharField(required=False, help_text="click"),
                    "geo_region": serializers.CharField(required=False, help_text="click"),
                    "geo_city": serializers.CharField(required=False, help_text="click"),
                    "device_type": serializers.CharField(required=False, help_text="click"),
                    "device_os": serializers.CharField(required=False, help_text="click"),
                    "browser_name": serializers.CharField(required=False, help_text="click"),
                    "customer_key": serializers.CharField(required=False, help_text="lead"),
                    "amount_cents": serializers.IntegerField(required=False, help_text="conversion"),
                    "currency": serializers.CharField(required=False, help_text="conversion"),
                    "sale_type": serializers.CharField(required=False, help_text="conversion"),
                    "payment_status": serializers.CharField(required=False, help_text="conversion"),
                    "processor_event_id": serializers.CharField(
                        required=False, allow_null=True, help_text="conversion: the transaction_id"
                    ),
                    "is_recurring": serializers.BooleanField(required=False, help_text="conversion"),
                },
            )
        ),
        "meta": inline_serializer(
            "TrackingEventsMeta",
            fields={
                "pagination": inline_serializer(
                    "Pagination",
                    fields={
                        "page": serializers.IntegerField(),
                        "pageSize": serializers.IntegerField(),
                        "pageCount": serializers.IntegerField(),
                        "total": serializers.IntegerField(),
                    },
                )
            },
        ),
    },
)

_RANGE = inline_serializer("DayRange", fields={"from": serializers.DateField(), "to": serializers.DateField()})
_NUMBERS: dict[str, serializers.Field] = {
    "clicks": serializers.IntegerField(),
    "leads": serializers.IntegerField(),
    "sales": serializers.IntegerField(),
    "revenue_cents": serializers.IntegerField(),
    "commission_cents": serializers.IntegerField(),
}

PERFORMANCE_OK = inline_serializer(
    "TrackingPerformanceResult",
    fields={
        "data": inline_serializer(
            "TrackingPerformance",
            fields={
                "range": _RANGE,
                "totals": inline_serializer("PerformanceTotals", fields=_NUMBERS),
                "by_day": serializers.ListField(
                    child=inline_serializer("PerformanceDay", fields={"date": serializers.DateField(), **_NUMBERS})
                ),
                "by_partner": serializers.ListField(
                    child=inline_serializer(
                        "PerformancePartner",
                        fields={
                            "partner_id": serializers.IntegerField(allow_null=True),
                            "partner_name": serializers.CharField(),
                            **_NUMBERS,
                        },
                    )
                ),
            },
        )
    },
)

READINESS_VERDICT = inline_serializer(
    "ReadinessVerdict",
    fields={
        "program_id": serializers.IntegerField(),
        "ready": serializers.BooleanField(help_text="No check fails"),
        "status": serializers.ChoiceField(choices=["ready", "ready_with_warnings", "incomplete"]),
        "next_step": serializers.CharField(
            help_text="The most recent mistake's fix, else the first failing (else warning) check's next step"
        ),
        "checked_at": serializers.DateTimeField(),
        "counts": serializers.DictField(child=serializers.IntegerField()),
        "last_event_at": inline_serializer(
            "ReadinessLastEventAt", fields={"click": _TIME, "lead": _TIME, "sale": _TIME}
        ),
        "checks": serializers.ListField(
            child=inline_serializer(
                "ReadinessCheck",
                fields={
                    "id": serializers.CharField(),
                    "status": serializers.ChoiceField(choices=["pass", "warn", "fail"]),
                    "title": serializers.CharField(),
                    "detail": serializers.CharField(),
                    "next_step": serializers.CharField(),
                },
            )
        ),
        "mistakes": serializers.ListField(
            help_text="Integration mistakes seen in the last 7 days of calls, most recent first",
            child=inline_serializer(
                "ReadinessMistake",
                fields={
                    "code": serializers.CharField(help_text="Stable, e.g. sale_customer_key_without_lead"),
                    "title": serializers.CharField(),
                    "count": serializers.IntegerField(help_text="How often in the window"),
                    "last_seen_at": serializers.DateTimeField(allow_null=True),
                    "fix": serializers.CharField(),
                    "docs": serializers.CharField(help_text="A docs path, or empty"),
                },
            ),
        ),
    },
)
READINESS_OK = inline_serializer("TrackingReadinessResult", fields={"data": READINESS_VERDICT})

VERIFICATION_OK = inline_serializer(
    "VerificationResult",
    fields={
        "data": inline_serializer(
            "VerificationRun",
            fields={
                "success": serializers.BooleanField(help_text="Every step passed"),
                "run_id": serializers.CharField(),
                "program_id": serializers.IntegerField(),
                "steps": serializers.ListField(
                    child=inline_serializer(
                        "VerificationStep",
                        fields={
                            "step": serializers.CharField(help_text="click, lead or sale"),
                            "ok": serializers.BooleanField(),
                            "event_id": serializers.IntegerField(required=False),
                            "status": serializers.IntegerField(required=False),
                            "message": serializers.CharField(required=False),
                        },
                    )
                ),
                "click_id": serializers.CharField(required=False),
                "customer_key": serializers.CharField(required=False),
                "duration_ms": serializers.FloatField(),
            },
        )
    },
)

TEST_EVENT_OK = inline_serializer(
    "TestEventResult",
    fields={
        "data": inline_serializer(
            "TestEvent",
            fields={
                "event_type": serializers.CharField(help_text="click, lead or sale"),
                "event_id": serializers.IntegerField(),
                "program_id": serializers.IntegerField(),
                "test_mode": serializers.BooleanField(),
                "message": serializers.CharField(),
                "click_id": serializers.CharField(allow_null=True, required=False),
                "click_event_id": serializers.IntegerField(required=False, help_text="lead: the click made for it"),
                "customer_key": serializers.CharField(required=False, help_text="lead"),
                "transaction_id": serializers.CharField(required=False, help_text="sale"),
                "amount_cents": serializers.IntegerField(required=False, help_text="sale"),
                "attributed": serializers.BooleanField(required=False, help_text="sale"),
            },
        )
    },
)

_ARRIVALS = inline_serializer(
    "TestEventArrivals",
    fields={
        "count": serializers.IntegerField(),
        "last_at": _TIME,
        "last_event_id": serializers.IntegerField(allow_null=True),
    },
)
CHECK_TEST_EVENTS_OK = inline_serializer(
    "CheckTestEventsResult",
    fields={
        "data": inline_serializer(
            "CheckTestEvents",
            fields={
                "program_id": serializers.IntegerField(),
                "since": serializers.DateTimeField(),
                "checked_at": serializers.DateTimeField(),
                "events": inline_serializer(
                    "TestEventsByType", fields={"click": _ARRIVALS, "lead": _ARRIVALS, "sale": _ARRIVALS}
                ),
                "received": serializers.ListField(child=serializers.CharField()),
                "missing": serializers.ListField(child=serializers.CharField()),
            },
        )
    },
)

SOURCES_OK = inline_serializer(
    "ClickSourcesResult",
    fields={
        "data": inline_serializer(
            "ClickSources",
            fields={
                "range": _RANGE,
                "referrer_domains": serializers.ListField(
                    child=inline_serializer(
                        "ReferrerDomain",
                        fields={"domain": serializers.CharField(), "clicks": serializers.IntegerField()},
                    )
                ),
                "utm_sources": serializers.ListField(
                    child=inline_serializer(
                        "UtmSource",
                        fields={"utm_source": serializers.CharField(), "clicks": serializers.IntegerField()},
                    )
                ),
                "sample": inline_serializer(
                    "ClickSourcesSample",
                    fields={
                        "clicks": serializers.IntegerField(help_text="Clicks counted"),
                        "limit": serializers.IntegerField(),
                        "truncated": serializers.BooleanField(help_text="More clicks in range than the limit"),
                    },
                ),
            },
        )
    },
)

_NAMED = inline_serializer("ExplainPartner", fields={"id": serializers.IntegerField(), "name": serializers.CharField()})
_LINK = inline_serializer(
    "ExplainLink", fields={"id": serializers.IntegerField(), "short_link": serializers.CharField()}
)
_WINDOW_FIELDS: dict[str, serializers.Field] = {
    "window_days": serializers.IntegerField(help_text="The program's attribution window (cookie_duration)"),
    "click_age_days": serializers.FloatField(allow_null=True, help_text="Days from the click to the sale"),
    "within": serializers.BooleanField(),
    "text": serializers.CharField(),
}
_FRAUD_RULE = inline_serializer(
    "ExplainFraudRule",
    fields={
        "rule": serializers.CharField(help_text="The fraud rule (duplicate_click, bot, paid_ads, self_referral, ...)"),
        "description": serializers.CharField(help_text="What the rule checks"),
        "status": serializers.ChoiceField(
            choices=["not_counted", "never_attributed", "flagged", "held", "released", "voided", "ended"],
            help_text="held: it holds the commission now; released, voided or ended (by a refund): its hold's last "
            "decision",
        ),
        "text": serializers.CharField(help_text="<rule>: what it found, in one line"),
    },
)
_FRAUD_RULES = serializers.ListField(child=_FRAUD_RULE, help_text="The fraud rules that decided something")
_REVIEW = inline_serializer(
    "ExplainReview",
    allow_null=True,
    fields={
        "held": serializers.BooleanField(help_text="On hold: neither approved nor credited until released"),
        "hold_rule": serializers.CharField(help_text="The rule that holds it; empty for an owner's hold"),
        "hold_reason": serializers.CharField(),
        "held_at": _TIME,
        "flags": serializers.ListField(child=serializers.CharField(), help_text="Every rule that fired on the sale"),
        "rules": _FRAUD_RULES,
        "actions": serializers.CharField(help_text="What the owner can do while it is held (empty otherwise)"),
        "text": serializers.CharField(),
        "history": serializers.ListField(
            child=serializers.DictField(), help_text="Decisions, oldest first: action, rule, reason, actor, created_at"
        ),
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
        "sale": inline_serializer(
            "ExplainedSale",
            allow_null=True,
            fields={
                "id": serializers.IntegerField(),
                "transaction_id": serializers.CharField(allow_null=True),
                "amount_cents": serializers.IntegerField(),
                "currency": serializers.CharField(),
                "sale_type": serializers.CharField(),
                "is_recurring": serializers.BooleanField(),
                "product_id": serializers.CharField(),
                "provider": serializers.CharField(),
                "sale_date": serializers.DateTimeField(),
                "is_test": serializers.BooleanField(),
            },
        ),
        "attribution": inline_serializer(
            "ExplainAttribution",
            fields={
                "path": serializers.ChoiceField(choices=["api", "stripe", "unknown"]),
                "matched_rule": serializers.CharField(
                    help_text="customer_key, click_id, stripe:<step>; or why none is known"
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
                    help_text="The path's lookup order (the sale endpoint's two, or the five Stripe steps)",
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
        "processor_event": serializers.DictField(allow_null=True, help_text="event_id, event_type, outcome"),
        "commission": inline_serializer(
            "ExplainCommission",
            allow_null=True,
            fields={
                "policy": serializers.DictField(
                    help_text="source (program or product), product_id, commission_type, rate, recurring, "
                    "duration_months, hold_days"
                ),
                "arithmetic": serializers.DictField(
                    help_text="sale_amount_cents, rate, computed_cents, matches_commission, text"
                ),
                "id": serializers.IntegerField(allow_null=True),
                "amount_cents": serializers.IntegerField(allow_null=True),
                "currency": serializers.CharField(),
                "status": serializers.CharField(allow_null=True),
                "credited": serializers.BooleanField(),
                "hold_until": _TIME,
                "approved_at": _TIME,
                "no_commission_reason": serializers.CharField(),
                "no_commission_text": serializers.CharField(),
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
                "steps": serializers.ListField(
                    child=serializers.DictField(), help_text="step, reason, reversed, was_paid_out, created_at"
                ),
                "text": serializers.CharField(),
            },
        ),
        "ledger": inline_serializer(
            "ExplainLedger",
            fields={
                "entries": serializers.ListField(
                    child=serializers.DictField(),
                    help_text="id, kind, amount_cents, currency, memo, created_at, running_total_cents",
                ),
                "total_cents": serializers.IntegerField(),
            },
        ),
    },
)
EXPLAIN_CUSTOMER = inline_serializer(
    "CustomerExplanation",
    fields={
        "kind": serializers.ChoiceField(choices=["customer"]),
        "customer": serializers.DictField(
            help_text="id, click_id, customer_key, status, is_test, first_clicked_at, last_clicked_at, "
            "first_sale_at, stripe_customer_id"
        ),
        "partner": _NAMED,
        "link": _LINK,
        "clicks": serializers.DictField(
            help_text="count, counted (not duplicates, bots or prefetches), and the recent ones (clicked_at, link, "
            "page_url, traffic, flags, rules)"
        ),
        "rules": _FRAUD_RULES,
        "leads": serializers.ListField(child=serializers.DictField()),
        "sales": serializers.ListField(
            child=serializers.DictField(),
            help_text="Each sale summarised; explain.transaction_id is its own explanation's selector",
        ),
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
        "refused_sales": serializers.ListField(
            child=serializers.DictField(),
            help_text="Sales refused after the window (transaction_id, refused_at, click_age_days, window_days)",
        ),
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
        "clicks": serializers.ListField(
            child=serializers.DictField(), help_text="The clicks, newest first: clicked_at, link, page_url, traffic"
        ),
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


LOG_ENTRY = inline_serializer(
    "ApiCallLogged",
    fields={
        "id": serializers.IntegerField(),
        "created_at": serializers.DateTimeField(),
        "method": serializers.CharField(),
        "route": serializers.CharField(help_text="The route's name, e.g. track-sale"),
        "status": serializers.IntegerField(),
        "error_code": serializers.CharField(help_text="error.code of an error answer, else empty"),
        "message": serializers.CharField(help_text="error.message of an error answer, else empty"),
        "request_id": serializers.CharField(),
        "key_masked": serializers.CharField(help_text="The key's mask only; empty when none was accepted"),
        "key_mode": serializers.CharField(help_text="live, test or empty"),
        "latency_ms": serializers.IntegerField(),
        "excerpt": serializers.DictField(help_text="Allow-listed body fields; an email is masked, never a key"),
    },
)
LOGS_OK = inline_serializer(
    "ApiCallLogResult",
    fields={
        "data": serializers.ListField(child=LOG_ENTRY),
        "meta": inline_serializer(
            "ApiCallLogMeta",
            fields={"next_cursor": serializers.CharField(allow_null=True, help_text="null on the last page")},
        ),
    },
)
