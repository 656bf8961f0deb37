"""Inputs of the dashboard API's own routes, and the shapes their answers take in the OpenAPI description. The
query strings and answers it shares with other surfaces are tracking's (tracking.api.queries, tracking.api.schema)
and the request log's (programs.api.calllog)."""

from datetime import timedelta

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from core.api.fields import LeanSerializer, StrictCharField, spec_messages
from core.api.query import InstantField
from programs.api.serializers import PROGRAM_SETTINGS_FIELDS
from tracking.api.schema import READINESS_VERDICT
from tracking.services.verification import SYNTHETIC_EVENT_TYPES

TEST_EVENTS_DEFAULT_WINDOW = timedelta(hours=1)


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
