"""Request bodies of the tracking API. Field order is validation order: the first failing field's
message is the one the caller sees, so fields are declared in the order the spec checks them."""

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar, cast, get_args

from django.utils import timezone
from rest_framework import serializers

from core import messages
from core.api.fields import (
    IdField,
    JsonObjectField,
    LeanSerializer,
    SharedFieldsSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    spec_messages,
)
from tracking.amounts import MAX_AMOUNT_CENTS
from tracking.services.click import ClickInput
from tracking.services.lead import LeadInput
from tracking.services.refund import RefundInput, RefundReason
from tracking.services.sale import IntervalValue, SaleInput, SaleProvider, SaleTypeValue

# The choices are the services' own input types, so the two cannot drift apart.
PROVIDERS: tuple[str, ...] = get_args(SaleProvider)
SALE_TYPES: tuple[str, ...] = get_args(SaleTypeValue)
SUBSCRIPTION_INTERVALS: tuple[str, ...] = get_args(IntervalValue)
REFUND_REASONS: tuple[str, ...] = get_args(RefundReason)
OCCURRED_AT_MAX_AGE = timedelta(days=30)
OCCURRED_AT_MAX_AHEAD = timedelta(minutes=5)


InputT = TypeVar("InputT", bound=Mapping[str, object])


# A request body validated into its service's typed input InputT. (A comment, not a docstring: the
# OpenAPI description would show it on every body without one of its own.)
class TypedInputSerializer(serializers.Serializer[Any], Generic[InputT]):
    def validated_input(self) -> InputT:
        self.is_valid(raise_exception=True)
        # validated_data holds, for every field the body sent (every required one is sent), what its
        # to_internal_value and validate_<field> return: the keys and value types InputT declares.
        return cast(InputT, self.validated_data)


def optional_text(name: str, max_length: int | None = None) -> StrictCharField:
    return StrictCharField(
        required=False,
        allow_blank=True,
        max_length=max_length,
        error_messages=spec_messages(
            f"{name} must be a string" + (f" of at most {max_length} characters" if max_length else "")
        ),
    )


class AdditionalDataSerializer(serializers.Serializer[Any]):
    test_mode = StrictBooleanField(
        required=False, error_messages=spec_messages("additional_data.test_mode must be a boolean")
    )
    program_id = IdField(required=False, error_messages=spec_messages("additional_data.program_id must be an integer"))


def additional_data_field() -> JsonObjectField:
    return JsonObjectField(
        required=False,
        error_messages={
            "not_a_dict": "additional_data must be an object",
            "null": "additional_data must be an object",
        },
    )


def validate_additional_data(value: dict[str, Any]) -> dict[str, Any]:
    inner = AdditionalDataSerializer(data=value)
    inner.is_valid(raise_exception=True)
    return {**value, **inner.validated_data}


class ClickInputSerializer(SharedFieldsSerializer, TypedInputSerializer[ClickInput]):
    """A click on a referral link, as the tracker script sends it: `affiliate_url` carries the partner's
    `?aff=` (or `?via=`, or one of the program's link aliases) code; the other fields describe the visit."""

    affiliate_url = StrictCharField(
        max_length=4096,
        help_text=(
            "The landing URL with ?aff= or ?via= (aff wins). With neither, a program's link aliases (an old "
            "platform's ?fpr=, ?ref=..., GET /api/v1/track/config's link_aliases) are read in their order when the "
            "call names the program (program_id or additional_data.program_id)"
        ),
        error_messages={
            **spec_messages(messages.INVALID_AFFILIATE_URL),
            "required": messages.AFFILIATE_URL_REQUIRED,
            "null": messages.AFFILIATE_URL_REQUIRED,
            "blank": messages.AFFILIATE_URL_REQUIRED,
        },
    )
    page_url = optional_text("page_url", 4096)
    page_title = optional_text("page_title", 1024)
    referrer_url = optional_text("referrer_url", 4096)
    session_id = optional_text("session_id", 255)
    user_agent = optional_text("user_agent", 2048)
    screen_resolution = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=32,
        error_messages=spec_messages("screen_resolution must look like 1920x1080"),
    )
    viewport_size = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=32,
        error_messages=spec_messages("viewport_size must look like 1280x720"),
    )
    language = optional_text("language", 35)
    timezone = optional_text("timezone", 64)
    existing_click_id = optional_text("existing_click_id", 255)
    program_id = IdField(required=False, allow_null=True, error_messages=spec_messages(messages.UNKNOWN_PROGRAM_ID))
    visitor_ip = serializers.JSONField(required=False, allow_null=True)  # never refuses: used only when a valid IP
    additional_data = additional_data_field()

    def validate_screen_resolution(self, value: str) -> str:
        return _dimensions(value, "screen_resolution must look like 1920x1080")

    def validate_viewport_size(self, value: str) -> str:
        return _dimensions(value, "viewport_size must look like 1280x720")

    def validate_additional_data(self, value: dict[str, Any]) -> dict[str, Any]:
        return validate_additional_data(value)


# ASCII digits only: str.isdigit() also takes "²", which int() then refuses.
_DIMENSIONS = re.compile(r"([0-9]+)x([0-9]+)")


def _dimensions(value: str, message: str) -> str:
    if not value:
        return value
    match = _DIMENSIONS.fullmatch(value.lower())
    if match is None:
        raise serializers.ValidationError(message)
    return f"{int(match[1])}x{int(match[2])}"


class LeadInputSerializer(SharedFieldsSerializer, TypedInputSerializer[LeadInput]):
    """A signup. Browser mode (no key) proves attribution with `click_id`; server mode (program key) sends
    `click_id` with `customer_key` so later sales can use `customer_key` alone."""

    click_id = optional_text("click_id", 255)
    customer_key = optional_text("customer_key", 255)
    email = serializers.EmailField(
        required=False,
        allow_blank=True,
        max_length=254,  # the column's length; Django's validator alone lets 320 characters through
        error_messages=spec_messages("email must be a valid email address"),
    )
    session_id = optional_text("session_id", 255)
    page_url = optional_text("page_url", 4096)
    additional_data = additional_data_field()

    def validate_additional_data(self, value: dict[str, Any]) -> dict[str, Any]:
        return validate_additional_data(value)


class SaleInputSerializer(SharedFieldsSerializer, TypedInputSerializer[SaleInput]):
    """A payment to record. `transaction_id` is your unique payment id: a second call with it answers 409,
    so retry a failed call with the same id. The sale is attributed through `customer_key` or `click_id`.
    Amounts are integers in the smallest currency unit. Test mode (test key, `livemode: false` or
    `additional_data.test_mode: true`) records a test sale and may leave out `transaction_id` and
    `amount_cents`."""

    transaction_id = StrictCharField(
        max_length=255, error_messages=spec_messages(messages.SALE_TRANSACTION_ID_REQUIRED)
    )
    amount_cents = StrictIntegerField(
        min_value=1,
        max_value=MAX_AMOUNT_CENTS,
        error_messages={
            **spec_messages(messages.SALE_AMOUNT_REQUIRED),
            "max_value": messages.SALE_AMOUNT_REQUIRED,
        },
    )
    occurred_at = StrictCharField(
        required=False, allow_null=True, error_messages=spec_messages(messages.SALE_OCCURRED_AT_INVALID)
    )
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        required=False,
        allow_null=True,
        error_messages=spec_messages(f"{messages.SALE_PROVIDER_INVALID}: {', '.join(PROVIDERS)}"),
    )
    provider_payment_id = StrictCharField(
        required=False,
        allow_null=True,
        min_length=1,
        max_length=255,
        error_messages={
            **spec_messages(messages.SALE_PROVIDER_PAYMENT_ID_INVALID),
            "min_length": messages.SALE_PROVIDER_PAYMENT_ID_INVALID,
        },
    )
    livemode = StrictBooleanField(
        required=False, allow_null=True, error_messages=spec_messages(messages.SALE_LIVEMODE_INVALID)
    )
    currency = StrictCharField(
        required=False,
        allow_null=True,
        max_length=16,
        error_messages=spec_messages("currency must be a string"),
    )
    customer_key = optional_text("customer_key", 255)
    click_id = optional_text("click_id", 255)
    tax_cents = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_AMOUNT_CENTS,
        error_messages={
            **spec_messages("tax_cents must be a non-negative integer"),
            "max_value": "tax_cents is too large",
        },
    )
    sale_type = serializers.ChoiceField(
        choices=SALE_TYPES,
        required=False,
        allow_null=True,
        error_messages=spec_messages("sale_type must be payment or subscription"),
    )
    line_items = serializers.JSONField(required=False, allow_null=True)
    is_recurring = StrictBooleanField(
        required=False, allow_null=True, error_messages=spec_messages("is_recurring must be a boolean")
    )
    subscription_id = optional_text("subscription_id", 255)
    subscription_interval = serializers.ChoiceField(
        choices=SUBSCRIPTION_INTERVALS,
        required=False,
        allow_null=True,
        allow_blank=True,
        error_messages=spec_messages("subscription_interval must be monthly, quarterly or annual"),
    )
    product_id = optional_text("product_id", 255)
    additional_data = additional_data_field()
    # An extension (not in the spec): the coupon code the customer paid with. Read only when neither click_id nor
    # customer_key attributes the sale; then the code's partner gets the customer and the sale.
    coupon_code = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text=(
            "Extension. The coupon code the customer used (case-insensitive). Ignored when click_id or customer_key "
            "attributes the sale; otherwise the code's partner gets the customer (with customer_key, when sent) and "
            "the sale, instead of 400 no_attribution."
        ),
        error_messages=spec_messages("coupon_code must be a string of at most 100 characters"),
    )

    def __init__(self, *args: Any, test_mode: bool = False, **kwargs: Any) -> None:
        self.test_mode = test_mode
        super().__init__(*args, **kwargs)

    def shared_fields_variant(self) -> bool:
        return self.test_mode

    def shared_fields_adjust(self, fields: Any) -> None:
        if self.test_mode:
            # Test sales may leave out the id and amount.
            fields["transaction_id"].required = False
            fields["transaction_id"].allow_null = True
            fields["amount_cents"].required = False
            fields["amount_cents"].allow_null = True

    def validate_occurred_at(self, value: str | None) -> datetime | None:
        if value is None:
            return None
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise serializers.ValidationError(messages.SALE_OCCURRED_AT_INVALID) from None
        now = timezone.now()
        if when.tzinfo is None or not (now - OCCURRED_AT_MAX_AGE <= when <= now + OCCURRED_AT_MAX_AHEAD):
            raise serializers.ValidationError(messages.SALE_OCCURRED_AT_INVALID)
        return when

    def validate_currency(self, value: str | None) -> str | None:
        return value.strip().upper() if value else None

    def validate_line_items(self, value: Any) -> Any:
        if value is not None and not isinstance(value, dict | list):
            raise serializers.ValidationError("line_items must be an object or a list")
        return value

    def validate_additional_data(self, value: dict[str, Any]) -> dict[str, Any]:
        return validate_additional_data(value)


class RefundInputSerializer(LeanSerializer, TypedInputSerializer[RefundInput]):
    """A refund of a sale recorded with `transaction_id`. Leave out `refund_amount_cents` (or send 0) to
    refund the rest; a partial amount is added to what was already refunded, capped at the sale amount.
    Send `refund_id` so a retried partial refund is applied once."""

    transaction_id = StrictCharField(
        max_length=255, error_messages=spec_messages(messages.REFUND_TRANSACTION_ID_REQUIRED)
    )
    reason = serializers.ChoiceField(
        choices=REFUND_REASONS,
        required=False,
        allow_null=True,
        allow_blank=True,
        error_messages=spec_messages(messages.REFUND_REASON_INVALID),
    )
    refund_amount_cents = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_AMOUNT_CENTS,
        error_messages={
            **spec_messages("refund_amount_cents must be a positive integer (0 or omitted refunds the rest)"),
            "max_value": "refund_amount_cents must be a positive integer (0 or omitted refunds the rest)",
        },
    )
    refund_id = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=255,
        error_messages=spec_messages("refund_id must be a string of at most 255 characters"),
    )
    refund_reason = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=2000,
        error_messages=spec_messages("refund_reason must be a string"),
    )
