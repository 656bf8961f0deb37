"""Input of a program's commercial settings: creation (`svc init`, POST /api/v1/cli/init) and update (PATCH
/api/v1/programs/:id/settings). The fields are declared in the spec's check order and the first failure is the
one answered, with the spec's message; the same classes are the OpenAPI description of these bodies."""

from decimal import Decimal, InvalidOperation
from typing import Any, cast

from django.db.models import TextChoices
from drf_spectacular.plumbing import build_choice_field
from drf_spectacular.utils import extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.fields import SkipField, empty
from rest_framework.settings import api_settings

from core import messages
from core.api.fields import AnyField
from core.ids import integer_parse

from .. import messages as program_messages
from ..link_aliases import LINK_ALIAS_PATTERN, MAX_LINK_ALIASES, link_aliases_problem
from ..models import (
    COMMISSION_RATE_MAX,
    DURATION_MONTHS_MAX,
    EDITABLE_SETTINGS,
    CommissionType,
    LeadAuth,
    Program,
)
from ..services import SettingsChanges, commission_rate_check

REQUIRED_ON_CREATION = ("name", "domain", "commission_type", "commission_rate")


def _refused(message: str) -> serializers.ValidationError:
    """A failure of the whole body, raised before the fields are checked (DRF wants it keyed)."""
    return serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]})


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


class _Setting(AnyField):
    """A setting checked by its own rule. Absence is the serializer's business (missing fields on creation,
    nothing to change on update); null is checked like any other value, so it gets the field's message."""

    # The field's OpenAPI schema (programs.api.schema.SettingFieldExtension reads it).
    schema: dict[str, Any] = {}

    def __init__(self, *, required: bool = False, **kwargs: Any) -> None:
        # `required` only documents the field: absence never reaches the field (see run_validation).
        super().__init__(required=required, **kwargs)

    def run_validation(self, data: Any = empty) -> Any:
        if data is empty:
            raise SkipField()
        return self.to_internal_value(data)

    def to_representation(self, value: Any) -> Any:
        return value


class _TextSetting(_Setting):
    def __init__(self, *, limit: int, **kwargs: Any) -> None:
        self.limit = limit
        self.schema = {"type": "string", "minLength": 1, "maxLength": limit}
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not data.strip() or len(data.strip()) > self.limit:
            raise serializers.ValidationError(
                messages.PROGRAM_TEXT_INVALID.format(field=self.field_name, limit=self.limit)
            )
        return data.strip()


class _ChoiceSetting(_Setting):
    def __init__(self, *, choices: type[TextChoices], message: str, **kwargs: Any) -> None:
        self.values, self.message = choices.values, message
        # Described as DRF describes a ChoiceField of the same choices, so both share one enum component.
        self.schema = build_choice_field(serializers.ChoiceField(choices=choices.choices))
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in self.values:
            raise serializers.ValidationError(self.message.format(value=data))
        return data


class _CommissionRateSetting(_Setting):
    schema = {"type": ["number", "string"], "exclusiveMinimum": 0}

    def to_internal_value(self, data: Any) -> Decimal:
        try:
            if isinstance(data, bool):
                raise InvalidOperation
            rate = Decimal(str(data).strip())
        except (InvalidOperation, ValueError):
            raise serializers.ValidationError(messages.PROGRAM_RATE_NOT_POSITIVE) from None
        if not rate.is_finite() or rate <= 0 or rate > COMMISSION_RATE_MAX:
            raise serializers.ValidationError(messages.PROGRAM_RATE_NOT_POSITIVE)
        rate = rate.quantize(Decimal("0.0001"))
        # Stored with 4 decimals: a positive rate below 0.00005 would be stored as 0 (and break a check constraint).
        if rate <= 0:
            raise serializers.ValidationError(messages.PROGRAM_RATE_NOT_POSITIVE)
        return rate


class _WholeNumberSetting(_Setting):
    """A whole number sent as a JSON number (5 or 5.0) or a string of digits. On creation an optional setting
    may be null (it keeps its default); on update null is refused."""

    def __init__(self, *, minimum: int, maximum: int, message: str, nullable: bool = False, **kwargs: Any) -> None:
        self.minimum, self.maximum, self.message, self.nullable = minimum, maximum, message, nullable
        self.schema = {
            "type": ["integer", "string", *(["null"] if nullable else [])],
            "minimum": minimum,
            "maximum": maximum,
            "pattern": r"^\s*[0-9]+\s*$",
        }
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int | None:
        if data is None and self.nullable:
            return None
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        number = integer_parse(data, minimum=self.minimum, maximum=self.maximum)
        if number is None:
            raise serializers.ValidationError(self.message)
        return number


class _LinkAliasesSetting(_Setting):
    schema = {
        "type": "array",
        "items": {"type": "string", "pattern": f"^{LINK_ALIAS_PATTERN.pattern}$"},
        "maxItems": MAX_LINK_ALIASES,
        "uniqueItems": True,
    }

    def to_internal_value(self, data: Any) -> list[str]:
        problem = link_aliases_problem(data)
        if problem:
            raise serializers.ValidationError(problem)
        return list(data)


def _settings_fields(*, creation: bool) -> dict[str, AnyField]:
    """The settings of creation and update, in the spec's check order. Creation requires the first four and
    lets the optional numbers be null (they keep their default); an update refuses null."""
    return {
        "name": _TextSetting(limit=200, required=creation, help_text="Surrounding spaces are trimmed"),
        "domain": _TextSetting(limit=253, required=creation, help_text="Surrounding spaces are trimmed"),
        "commission_type": _ChoiceSetting(
            choices=CommissionType, message=messages.PROGRAM_INVALID_COMMISSION_TYPE, required=creation
        ),
        "commission_rate": _CommissionRateSetting(
            required=creation,
            help_text="A positive number (or numeric string); at most 100 for percent and recurring_percent",
        ),
        "duration_months": _WholeNumberSetting(
            minimum=0,
            maximum=DURATION_MONTHS_MAX,
            message=messages.PROGRAM_DURATION_INVALID,
            nullable=creation,
            help_text="Recurring commissions: months from the first sale (0 = lifetime)",
        ),
        "cookie_duration": _WholeNumberSetting(
            minimum=1,
            maximum=365,
            message=messages.PROGRAM_COOKIE_INVALID,
            nullable=creation,
            help_text="Attribution window in days",
        ),
    }


class _ProgramSettingsSerializer(serializers.Serializer[Any]):
    creation: bool

    def get_fields(self) -> dict[str, AnyField]:
        # The settings first, then any field the subclass declares.
        return {**_settings_fields(creation=self.creation), **super().get_fields()}

    def validate_commission_rate(self, rate: Decimal) -> Decimal:
        # Checked against the type sent with the rate, else the program's; an update re-checks the locked row.
        sent_type = self.initial_data.get("commission_type")
        current: Program | None = self.context.get("program")
        commission_type = sent_type if isinstance(sent_type, str) else (current.commission_type if current else "")
        commission_rate_check(commission_type=commission_type, rate=rate)
        return rate


class ProgramCreateInputSerializer(_ProgramSettingsSerializer):
    """A new program's settings. name, domain, commission_type and commission_rate are required; the others
    keep their defaults when left out or null."""

    creation = True

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict) and any(_blank(data.get(field)) for field in REQUIRED_ON_CREATION):
            raise _refused(messages.PROGRAM_MISSING_FIELDS)
        validated: dict[str, Any] = super().to_internal_value(data)
        return validated

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {field: value for field, value in attrs.items() if value is not None}


class _AdvertiserIdField(_Setting):
    """Any value: cli_api.services.advertiser_resolve decides (403 for one that is not the account's)."""

    schema = {"type": ["integer", "string", "null"]}

    def to_internal_value(self, data: Any) -> Any:
        return data


@extend_schema_serializer(component_name="CliInitInput")
class CliInitInputSerializer(ProgramCreateInputSerializer):
    """A new program: its settings, and the advertiser to create it in (checked first: 403 before 400)."""

    advertiser_id = _AdvertiserIdField(
        help_text="The advertiser to create the program in (default: the account's first)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.pop("advertiser_id", None)
        return super().validate(attrs)


@extend_schema_serializer(component_name="SettingsPatch")
class ProgramSettingsPatchSerializer(_ProgramSettingsSerializer):
    """The settings to change; send at least one. Fields left out keep their value. Checked in this order,
    the first failure answers 400 and nothing is saved."""

    # Needs the program in the context ("program"): the rate is checked against its type.

    creation = False
    min_properties = 1  # an empty patch is refused

    def get_fields(self) -> dict[str, AnyField]:
        return {
            **super().get_fields(),
            "hold_days": _WholeNumberSetting(
                minimum=0,
                maximum=365,
                message=program_messages.HOLD_DAYS_INVALID,
                help_text="Days a new commission stays pending before it can be paid",
            ),
            "lead_auth": _ChoiceSetting(choices=LeadAuth, message=program_messages.LEAD_AUTH_INVALID),
            "link_aliases": _LinkAliasesSetting(
                help_text=(
                    "Query parameters the program's links may carry the code in besides aff and via (an old "
                    "platform's fpr, ref...), in order after them; [] turns them off"
                ),
            ),
        }

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not data:
            # An empty patch is a caller mistake (a dropped body, a misspelt client), not a successful no-op.
            raise _refused(program_messages.SETTINGS_EMPTY_PATCH)
        unknown = sorted(set(data) - set(EDITABLE_SETTINGS))
        if unknown:
            fields = ", ".join(unknown)
            raise _refused(program_messages.SETTINGS_UNKNOWN_FIELDS.format(fields=fields))
        validated: dict[str, Any] = super().to_internal_value(data)
        return validated

    def changes(self) -> SettingsChanges:
        self.is_valid(raise_exception=True)
        # validated_data holds the editable settings sent, with the types their fields return.
        return cast(SettingsChanges, dict(self.validated_data))


# --- Response shapes (OpenAPI) -----------------------------------------------------------------------------


class RateField(serializers.FloatField):
    """A rate as programs.selectors.rate_number gives it, rendered as it is: 20 stays 20 (FloatField says 20.0)."""

    def to_representation(self, value: Any) -> Any:
        return value


PROGRAM_SETTINGS_FIELDS: dict[str, AnyField] = {
    "id": serializers.IntegerField(),
    "name": serializers.CharField(),
    "domain": serializers.CharField(),
    "commission_type": serializers.ChoiceField(choices=CommissionType.choices),
    "commission_rate": RateField(),
    "duration_months": serializers.IntegerField(),
    "hold_days": serializers.IntegerField(),
    "lead_auth": serializers.ChoiceField(choices=LeadAuth.choices),
    "api_token_masked": serializers.CharField(),
}

SETTINGS_OK = inline_serializer(
    "ProgramSettingsResult",
    fields={
        "data": inline_serializer(
            "ProgramSettings",
            fields={
                **PROGRAM_SETTINGS_FIELDS,
                "cookie_duration": serializers.IntegerField(),
                "link_aliases": serializers.ListField(
                    child=serializers.CharField(), help_text="Query parameters read like via, in order (off: [])"
                ),
            },
        )
    },
)
