"""What the group routes read (body and query serializers) and answer (output serializers, which both render the
bodies and describe them in the OpenAPI document).

Input is strict, as the fraud rules' is: a wrong type, a value out of range or an unknown field is 400 saying
which, and nothing changes. A group's terms are checked together (group_fields_check) against what the group
already has, so a PATCH of one field is judged with the others."""

from decimal import Decimal, InvalidOperation
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import IsoDateTimeField, StrictBooleanField, StrictCharField, StrictIntegerField
from core.currency import Currency
from core.errors import BadRequestError
from core.ids import MAX_BIGINT
from groups.codes import CODE_PATTERN, code_normalized
from groups.models import (
    CouponCode,
    DiscountDuration,
    DiscountType,
    GroupChange,
    Metric,
    PartnerGroup,
    Period,
    TierRule,
)
from groups.terms import GroupTerms, program_terms
from programs.api.serializers import RateField
from programs.models import COMMISSION_RATE_MAX, DURATION_MONTHS_MAX, PERCENT_TYPES, CommissionType
from programs.selectors import rate_number

from ... import messages
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

NAME_LIMIT = 100
# Tiers are judged per calendar month or quarter (lifetime is for bonuses: groups.models.TierRule).
CALENDAR_PERIODS = [choice for choice in Period.choices if choice[0] != Period.LIFETIME]
HOLD_DAYS_MAX = 365
DISCOUNT_MONTHS_MAX = 120
QUESTIONS_MAX = 20
QUESTION_LABEL_LIMIT = 200

# --- input ----------------------------------------------------------------------------------------------------------


def _bad(message: str) -> dict[str, str]:
    return {key: message for key in ("required", "null", "invalid", "blank", "max_length", "min_value", "max_value")}


def _name(message: str, *, required: bool) -> StrictCharField:
    return StrictCharField(required=required, max_length=NAME_LIMIT, error_messages=_bad(message))


def _whole(
    field: str, low: int, high: int, help_text: str, *, nullable: bool = False, required: bool = False
) -> StrictIntegerField:
    message = messages.GROUP_WHOLE_NUMBER_INVALID.format(field=field, low=low, high=high)
    return StrictIntegerField(
        required=required,
        allow_null=nullable,
        min_value=low,
        max_value=high,
        help_text=help_text,
        error_messages={**_bad(message), "max_string_length": message},
    )


def _flag(field: str, help_text: str) -> StrictBooleanField:
    message = messages.GROUP_FLAG_INVALID.format(field=field)
    return StrictBooleanField(required=False, help_text=help_text, error_messages={"invalid": message, "null": message})


def _choice(
    field: str, choices: list[tuple[str, str]], help_text: str, *, required: bool = False
) -> serializers.ChoiceField:
    """A choice of the model's (its choices with their labels, so the OpenAPI names one enum per choice set)."""
    values = [value for value, _ in choices]
    message = messages.GROUP_CHOICE_INVALID.format(field=field, known=", ".join(value or '""' for value in values))
    return serializers.ChoiceField(
        choices=choices,
        required=required,
        allow_blank="" in values,
        help_text=help_text,
        error_messages={"invalid_choice": message, "null": message, "required": message},
    )


@extend_schema_field({"type": ["number", "string"], "exclusiveMinimum": 0})
class DecimalInputField(serializers.Field[Decimal, Any, Any, Any]):
    """A positive decimal sent as a JSON number or a numeric string (never a boolean), at most `maximum`, kept
    to `places` decimals; a value that rounds to 0 is refused too (the columns hold `places` decimals)."""

    def __init__(self, *, maximum: Decimal, places: int, message: str, **kwargs: Any) -> None:
        self.maximum, self.quantum, self.message = maximum, Decimal(1).scaleb(-places), message
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Decimal:
        if isinstance(data, bool) or not isinstance(data, int | float | str) or len(str(data)) > 40:
            raise serializers.ValidationError(self.message)
        try:
            value = Decimal(str(data).strip())
        except (InvalidOperation, ValueError):
            raise serializers.ValidationError(self.message) from None
        if not value.is_finite() or value <= 0 or value > self.maximum:
            raise serializers.ValidationError(self.message)
        value = value.quantize(self.quantum)
        if value <= 0:
            raise serializers.ValidationError(self.message)
        return value

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(
    {
        "type": "array",
        "maxItems": QUESTIONS_MAX,
        "items": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "minLength": 1, "maxLength": QUESTION_LABEL_LIMIT},
                "required": {"type": "boolean"},
            },
            "required": ["label"],
            "additionalProperties": False,
        },
    }
)
class QuestionsField(serializers.Field[list[dict[str, Any]], Any, Any, Any]):
    """The extra questions of the group's application page: [{"label": ..., "required": false}, ...]."""

    def to_internal_value(self, data: Any) -> list[dict[str, Any]]:
        problem = messages.GROUP_QUESTIONS_INVALID.format(limit=QUESTIONS_MAX)
        if not isinstance(data, list) or len(data) > QUESTIONS_MAX:
            raise serializers.ValidationError(problem)
        questions = []
        for item in data:
            if not isinstance(item, dict) or not set(item) <= {"label", "required"}:
                raise serializers.ValidationError(problem)
            label, required = item.get("label"), item.get("required", False)
            if not isinstance(label, str) or not 1 <= len(label.strip()) <= QUESTION_LABEL_LIMIT:
                raise serializers.ValidationError(problem)
            if not isinstance(required, bool):
                raise serializers.ValidationError(problem)
            questions.append({"label": label.strip(), "required": required})
        return questions

    def to_representation(self, value: Any) -> Any:
        return value


class StrictBodySerializer(serializers.Serializer[Any]):
    """A body of known fields only: an unknown one is 400 naming it (a typo must not pass as a no-op)."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                messages.GROUP_UNKNOWN_FIELDS.format(fields=", ".join(unknown)[:300], known=", ".join(self.fields))
            )
        return attrs


class GroupUpdateSerializer(StrictBodySerializer):
    """Any of the group's settings; those not sent stay as they are. The default group's commission terms are the
    program's settings: sending them for it is refused."""

    name = _name(messages.GROUP_NAME_INVALID, required=False)
    commission_type = _choice(
        "commission_type",
        CommissionType.choices,
        "percent and recurring_percent: commission_rate is a percentage; fixed and recurring_fixed: an amount in "
        "the smallest currency unit",
    )
    commission_rate = DecimalInputField(
        required=False,
        maximum=COMMISSION_RATE_MAX,
        places=4,
        message=messages.GROUP_RATE_INVALID,
        help_text="A positive number (or numeric string); at most 100 for percent and recurring_percent",
    )
    duration_months = _whole(
        "duration_months", 0, DURATION_MONTHS_MAX, "Recurring commissions: months from the first sale (0 = lifetime)"
    )
    hold_days = _whole("hold_days", 0, HOLD_DAYS_MAX, "Days a commission is held before it is approved")
    discount_type = _choice(
        "discount_type",
        [("", "No discount"), *DiscountType.choices],
        'The discount the customers this group\'s partners bring get: "" (none), percent or amount',
    )
    discount_percent = DecimalInputField(
        required=False,
        allow_null=True,
        maximum=Decimal(100),
        places=2,
        message=messages.GROUP_DISCOUNT_PERCENT_INVALID,
        help_text="percent discounts: above 0, at most 100",
    )
    discount_amount_cents = _whole(
        "discount_amount_cents",
        1,
        MAX_BIGINT,
        "amount discounts: in the smallest unit of discount_currency",
        nullable=True,
    )
    discount_currency = _choice("discount_currency", Currency.choices, "The currency of an amount discount")
    discount_duration = _choice(
        "discount_duration",
        DiscountDuration.choices,
        "As Stripe's coupons: once (the first payment), repeating (discount_duration_months), forever",
    )
    discount_duration_months = _whole(
        "discount_duration_months", 1, DISCOUNT_MONTHS_MAX, "repeating discounts: how many months", nullable=True
    )
    applications_open = _flag("applications_open", "Anyone may apply to this group on its page")
    application_questions = QuestionsField(required=False, help_text="The extra questions its application page asks")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if not attrs:
            raise serializers.ValidationError(messages.GROUP_PATCH_EMPTY.format(known=", ".join(self.fields)))
        return attrs


class GroupCreateSerializer(GroupUpdateSerializer):
    """A new group: name is required; the other settings keep the model's defaults (20 percent, lifetime, 30
    days' hold, no discount) when left out."""

    name = _name(messages.GROUP_NAME_INVALID, required=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return StrictBodySerializer.validate(self, attrs)


# What a terms or discount check reads when a field is not sent: the group's own value, or the model's default.
_CHECKED = (
    "commission_type",
    "commission_rate",
    "discount_type",
    "discount_percent",
    "discount_amount_cents",
    "discount_duration",
    "discount_duration_months",
)


def group_fields_check(fields: dict[str, Any], group: PartnerGroup | None) -> None:
    """Refuses (400) terms and a discount that do not hold together once `fields` are applied to `group` (None:
    a new group): a percentage rate over 100, a discount without its amount, a repeating one without months. The
    model's constraints say the same; this says it in words before the database is asked."""
    current = group or PartnerGroup()
    merged = {name: fields.get(name, getattr(current, name)) for name in _CHECKED}
    problem = None
    terms_sent = "commission_type" in fields or "commission_rate" in fields
    if terms_sent and merged["commission_type"] in PERCENT_TYPES and merged["commission_rate"] > 100:
        problem = messages.GROUP_RATE_OVER_100
    elif merged["discount_type"] == DiscountType.PERCENT and merged["discount_percent"] is None:
        problem = messages.GROUP_DISCOUNT_PERCENT_REQUIRED
    elif merged["discount_type"] == DiscountType.AMOUNT and merged["discount_amount_cents"] is None:
        problem = messages.GROUP_DISCOUNT_AMOUNT_REQUIRED
    elif merged["discount_duration"] == DiscountDuration.REPEATING and merged["discount_duration_months"] is None:
        problem = messages.GROUP_DISCOUNT_MONTHS_REQUIRED
    if problem is not None:
        raise BadRequestError(problem, code=messages.CODE_BAD_REQUEST)


def _group_id(field: str, message: str, help_text: str) -> StrictIntegerField:
    return StrictIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        help_text=help_text,
        error_messages={**_bad(message), "max_string_length": message},
    )


class TierRuleCreateSerializer(StrictBodySerializer):
    target_group_id = _group_id(
        "target_group_id", messages.TIER_TARGET_INVALID, "The group the partner is moved to (of this program)"
    )
    direction = _choice(
        "direction",
        TierRule.Direction.choices,
        "promote: when the partner's figure in the current period reaches threshold; demote: when it stayed below "
        "it in the last complete period (default promote)",
    )
    metric = _choice(
        "metric", Metric.choices, "sales: a count of sales; revenue: in the smallest currency unit", required=True
    )
    period = _choice("period", CALENDAR_PERIODS, "Calendar month or quarter (default month)")
    threshold = _whole("threshold", 1, MAX_BIGINT, "The figure (a count of sales or revenue in cents)", required=True)
    is_active = _flag("is_active", "false: the rule is kept but not evaluated (default true)")


class ActiveUpdateSerializer(StrictBodySerializer):
    is_active = _flag("is_active", "false: kept, but no longer evaluated")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if not attrs:
            raise serializers.ValidationError(messages.TIER_PATCH_EMPTY)
        return attrs


class BonusCreateSerializer(StrictBodySerializer):
    name = _name(messages.BONUS_NAME_INVALID, required=True)
    metric = _choice(
        "metric", Metric.choices, "sales: a count of sales; revenue: in the smallest currency unit", required=True
    )
    period = _choice(
        "period",
        Period.choices,
        "The period the figure is counted in: month, quarter or lifetime (default lifetime: the first N sales ever)",
    )
    threshold = _whole(
        "threshold", 1, MAX_BIGINT, "The milestone (a count of sales or revenue in cents)", required=True
    )
    amount_cents = _whole("amount_cents", 1, MAX_BIGINT, "The bonus, in the smallest unit of currency", required=True)
    currency = _choice("currency", Currency.choices, "The bonus's currency (default USD)")
    is_active = _flag("is_active", "false: kept, but never paid (default true)")


class MoveSerializer(StrictBodySerializer):
    group_id = _group_id("group_id", messages.GROUP_ID_INVALID, "The group of this program to put the partner in")


class CouponCodesQuerySerializer(PageQuerySerializer):
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner's codes")
    active = serializers.ChoiceField(
        choices=("true", "false"),
        required=False,
        error_messages={key: messages.COUPON_ACTIVE_INVALID for key in ("invalid_choice", "null", "blank")},
        help_text="true: only codes that attribute sales; false: only deactivated ones",
    )


class CouponCodeCreateSerializer(StrictBodySerializer):
    partner_id = StrictIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        help_text="A partner of the workspace enrolled in the program",
        error_messages={
            **_bad(messages.COUPON_CODE_PARTNER_ID_INVALID),
            "max_string_length": messages.COUPON_CODE_PARTNER_ID_INVALID,
        },
    )
    code = StrictCharField(
        max_length=NAME_LIMIT,
        help_text="1 to 100 letters, digits, - or _, case-insensitive (stored upper-cased). With Stripe connected, "
        "a promotion code of the partner's group's coupon is made on the program's account (letters, digits and - "
        "only; the group needs a discount)",
        error_messages=_bad(messages.COUPON_CODE_INVALID),
    )

    def validate_code(self, value: str) -> str:
        # Said here with this body's field name; groups.codes.code_valid decides the same again.
        if not CODE_PATTERN.match(code_normalized(value)):
            raise serializers.ValidationError(messages.COUPON_CODE_INVALID)
        return value


# --- output ---------------------------------------------------------------------------------------------------------


def group_terms(group: PartnerGroup) -> GroupTerms:
    """The terms the group's partners earn under: the default group's are its program's columns."""
    if group.is_default:
        return program_terms(group.program)
    return GroupTerms(
        group_id=group.pk,
        group_name=group.name,
        commission_type=group.commission_type,
        rate=group.commission_rate,
        duration_months=group.duration_months,
        hold_days=group.hold_days,
    )


class NumberOrNullField(serializers.FloatField):
    """A decimal column as a JSON number (20 stays 20, 12.5 stays 12.5), or null."""

    def to_representation(self, value: Any) -> Any:
        return None if value is None else rate_number(value)


# A group (with its program, select_related): the default group's commission terms are the program's.
class AgentGroupSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField(help_text="Its application page: /join/<program_id>/<slug>")
    is_default = serializers.BooleanField(
        help_text="The program's default group: partners without another group are in it; its commission terms "
        "are the program's settings (changed there), and it cannot be deleted"
    )
    commission_type = serializers.SerializerMethodField(help_text="percent, fixed, recurring_percent, recurring_fixed")
    commission_rate = serializers.SerializerMethodField(
        help_text="A percentage for the percent types, an amount in the smallest currency unit otherwise"
    )
    duration_months = serializers.SerializerMethodField(help_text="Recurring commissions: 0 = lifetime")
    hold_days = serializers.SerializerMethodField(help_text="Days a commission is held before it is approved")
    discount_type = serializers.ChoiceField(
        choices=[("", "No discount"), *DiscountType.choices], help_text='"" (no discount), percent or amount'
    )
    discount_percent = NumberOrNullField(allow_null=True, help_text="percent discounts")
    discount_amount_cents = serializers.IntegerField(allow_null=True, help_text="amount discounts")
    discount_currency = serializers.ChoiceField(choices=Currency.choices)
    discount_duration = serializers.ChoiceField(choices=DiscountDuration.choices)
    discount_duration_months = serializers.IntegerField(allow_null=True)
    stripe_coupon_id = serializers.CharField(
        help_text="The coupon of its promotion codes on the program's connected Stripe account; empty until the "
        "first code is made"
    )
    applications_open = serializers.BooleanField()
    application_questions = serializers.JSONField(help_text='[{"label": ..., "required": true|false}, ...]')
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()

    def get_commission_type(self, group: PartnerGroup) -> str:
        return group_terms(group).commission_type

    @extend_schema_field(RateField())
    def get_commission_rate(self, group: PartnerGroup) -> int | float:
        return rate_number(group_terms(group).rate)

    def get_duration_months(self, group: PartnerGroup) -> int:
        return group_terms(group).duration_months

    def get_hold_days(self, group: PartnerGroup) -> int:
        return group_terms(group).hold_days


class AgentDeletionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    deleted = serializers.BooleanField()


class AgentTierRuleSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    group_id = serializers.IntegerField()
    target_group_id = serializers.IntegerField(source="target_id")
    direction = serializers.ChoiceField(choices=TierRule.Direction.choices)
    metric = serializers.ChoiceField(choices=Metric.choices)
    period = serializers.ChoiceField(choices=CALENDAR_PERIODS)
    threshold = serializers.IntegerField(help_text="A count of sales, or revenue in the smallest currency unit")
    is_active = serializers.BooleanField()
    created_at = IsoDateTimeField()


class AgentBonusSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    group_id = serializers.IntegerField()
    name = serializers.CharField()
    metric = serializers.ChoiceField(choices=Metric.choices)
    period = serializers.ChoiceField(choices=Period.choices)
    threshold = serializers.IntegerField(help_text="A count of sales, or revenue in the smallest currency unit")
    amount_cents = serializers.IntegerField()
    currency = serializers.ChoiceField(choices=Currency.choices)
    is_active = serializers.BooleanField()
    created_at = IsoDateTimeField()


# A group change, with its groups (select_related).
class AgentGroupChangeSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    partner_id = serializers.IntegerField()
    from_group_id = serializers.IntegerField(allow_null=True, help_text="null: the group was deleted since")
    from_group = serializers.SerializerMethodField(allow_null=True)
    to_group_id = serializers.IntegerField(allow_null=True, help_text="null: the group was deleted since")
    to_group = serializers.SerializerMethodField(allow_null=True)
    reason = serializers.ChoiceField(choices=GroupChange.Reason.choices)
    rule_id = serializers.IntegerField(allow_null=True, help_text="The tier rule that moved the partner")
    period_key = serializers.CharField(help_text='A tier move\'s period ("2026-12", "2026-Q4"); empty otherwise')
    figure = serializers.IntegerField(allow_null=True, help_text="The figure that triggered a tier move")
    actor = serializers.CharField(help_text='Who moved the partner: "user:<username>", "agent key <masked>", ...')
    created_at = IsoDateTimeField()

    @extend_schema_field(OpenApiTypes.STR)
    def get_from_group(self, change: GroupChange) -> str | None:
        return change.from_group.name if change.from_group else None

    @extend_schema_field(OpenApiTypes.STR)
    def get_to_group(self, change: GroupChange) -> str | None:
        return change.to_group.name if change.to_group else None


class AgentGroupMoveSerializer(serializers.Serializer[Any]):
    partner_id = serializers.IntegerField()
    program_id = serializers.IntegerField()
    group_id = serializers.IntegerField(help_text="The group the partner is in now")
    moved = serializers.BooleanField(help_text="false: the partner was in that group already")
    change = AgentGroupChangeSerializer(allow_null=True, help_text="The change recorded; null when not moved")


class AgentCouponCodeSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    partner_id = serializers.IntegerField()
    code = serializers.CharField(help_text="Upper-cased; matched case-insensitively")
    # A field named as Field's own attribute: DRF's metaclass takes it off the class, mypy sees the attribute.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=CouponCode.Source.choices,
        help_text="stripe: a promotion code made on the program's connected account; manual: registered as it is; "
        "import: from another platform",
    )
    stripe_promotion_code_id = serializers.CharField(help_text="promo_…; empty unless source is stripe")
    is_active = serializers.BooleanField(help_text="false: sales carrying it are no longer attributed by it")
    created_at = IsoDateTimeField()


AgentGroupListSerializer = page_serializer("AgentGroupList", AgentGroupSerializer)
AgentGroupResultSerializer = result_serializer("AgentGroupResult", AgentGroupSerializer())
AgentDeletedSerializer = result_serializer("AgentGroupObjectDeleted", AgentDeletionSerializer())
AgentTierRuleListSerializer = page_serializer("AgentTierRuleList", AgentTierRuleSerializer)
AgentTierRuleResultSerializer = result_serializer("AgentTierRuleResult", AgentTierRuleSerializer())
AgentBonusListSerializer = page_serializer("AgentBonusList", AgentBonusSerializer)
AgentBonusResultSerializer = result_serializer("AgentBonusResult", AgentBonusSerializer())
AgentGroupChangeListSerializer = page_serializer("AgentGroupChangeList", AgentGroupChangeSerializer)
AgentGroupMoveResultSerializer = result_serializer("AgentGroupMoveResult", AgentGroupMoveSerializer())
AgentCouponCodeListSerializer = page_serializer("AgentCouponCodeList", AgentCouponCodeSerializer)
AgentCouponCodeResultSerializer = result_serializer("AgentCouponCodeResult", AgentCouponCodeSerializer())
