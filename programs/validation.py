"""Validation of a program's commercial settings, shared by `svc init` (POST /api/v1/cli/init) and the
settings route (PATCH /api/v1/programs/:id/settings). Checks run in the spec's order; the first failure
is raised with the spec's message."""

from decimal import Decimal, InvalidOperation
from typing import Any

from core import messages
from core.errors import BadRequestError
from core.ids import integer_parse

from .models import PERCENT_TYPES, CommissionType, LeadAuth, Program

REQUIRED_FIELDS = ("name", "domain", "commission_type", "commission_rate")
EDITABLE_SETTINGS = (
    "name",
    "domain",
    "commission_type",
    "commission_rate",
    "duration_months",
    "cookie_duration",
    "hold_days",
    "lead_auth",
)
SETTINGS_UNKNOWN_FIELDS = "Unknown or read-only field(s): {fields}. Editable: " + ", ".join(EDITABLE_SETTINGS)
HOLD_DAYS_INVALID = "hold_days must be a whole number of days from 0 to 365"
# The column holds 14 digits, 4 after the point; a larger rate would fail in the database, not here.
COMMISSION_RATE_MAX = Decimal("9999999999.9999")
# A hundred years. Larger values would overflow the date arithmetic of the recurring period.
DURATION_MONTHS_MAX = 1200
LEAD_AUTH_INVALID = "lead_auth must be browser_allowed or server_required"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return integer_parse(value)


def program_settings_validate(data: dict[str, Any], *, current: Program | None = None) -> dict[str, Any]:
    """Returns the cleaned subset of name, domain, commission_type, commission_rate, duration_months and
    cookie_duration. Without `current` (creation) the four required fields must be there; with it (an
    update) only what is sent is checked, and the rate against the type the program will have."""
    partial = current is not None
    if not partial and any(_blank(data.get(field)) for field in REQUIRED_FIELDS):
        raise BadRequestError(messages.PROGRAM_MISSING_FIELDS)
    clean: dict[str, Any] = {}
    for field, limit in (("name", 200), ("domain", 253)):
        if field in data:
            value = data[field]
            if not isinstance(value, str) or not value.strip() or len(value.strip()) > limit:
                raise BadRequestError(messages.PROGRAM_TEXT_INVALID.format(field=field, limit=limit))
            clean[field] = value.strip()
    if "commission_type" in data:
        value = data["commission_type"]
        if value not in CommissionType.values:
            raise BadRequestError(messages.PROGRAM_INVALID_COMMISSION_TYPE.format(value=value))
        clean["commission_type"] = value
    if "commission_rate" in data:
        raw = data["commission_rate"]
        try:
            if isinstance(raw, bool):
                raise InvalidOperation
            rate = Decimal(str(raw).strip())
        except (InvalidOperation, ValueError):
            raise BadRequestError(messages.PROGRAM_RATE_NOT_POSITIVE) from None
        if not rate.is_finite() or rate <= 0 or rate > COMMISSION_RATE_MAX:
            raise BadRequestError(messages.PROGRAM_RATE_NOT_POSITIVE)
        rate = rate.quantize(Decimal("0.0001"))
        # Stored with 4 decimals: a positive rate below 0.00005 would be stored as 0 (and break a check constraint).
        if rate <= 0:
            raise BadRequestError(messages.PROGRAM_RATE_NOT_POSITIVE)
        clean["commission_rate"] = rate
    kind = clean.get("commission_type", current.commission_type if current else None)
    rate_after = clean.get("commission_rate", current.commission_rate if current else None)
    if kind in PERCENT_TYPES and rate_after is not None and rate_after > 100:
        raise BadRequestError(messages.PROGRAM_RATE_OVER_100)
    if "duration_months" in data and data["duration_months"] is not None:
        months = _whole(data["duration_months"])
        if months is None or not 0 <= months <= DURATION_MONTHS_MAX:
            raise BadRequestError(messages.PROGRAM_DURATION_INVALID)
        clean["duration_months"] = months
    if "cookie_duration" in data and data["cookie_duration"] is not None:
        days = _whole(data["cookie_duration"])
        if days is None or not 1 <= days <= 365:
            raise BadRequestError(messages.PROGRAM_COOKIE_INVALID)
        clean["cookie_duration"] = days
    return clean


def program_settings_changes_validate(data: dict[str, Any], *, current: Program) -> dict[str, Any]:
    """An update's fields to change: the creation checks in their order (program_settings_validate), then
    hold_days and lead_auth. Unknown fields and nulls are refused; the first failure is raised."""
    unknown = sorted(set(data) - set(EDITABLE_SETTINGS))
    if unknown:
        raise BadRequestError(SETTINGS_UNKNOWN_FIELDS.format(fields=", ".join(unknown)))
    clean = program_settings_validate(data, current=current)
    # The creation checks skip a null duration (optional there); in an update it is a mistake.
    if "duration_months" in data and data["duration_months"] is None:
        raise BadRequestError(messages.PROGRAM_DURATION_INVALID)
    if "cookie_duration" in data and data["cookie_duration"] is None:
        raise BadRequestError(messages.PROGRAM_COOKIE_INVALID)
    if "hold_days" in data:
        days = _whole(data["hold_days"])
        if days is None or not 0 <= days <= 365:
            raise BadRequestError(HOLD_DAYS_INVALID)
        clean["hold_days"] = days
    if "lead_auth" in data:
        if data["lead_auth"] not in LeadAuth.values:
            raise BadRequestError(LEAD_AUTH_INVALID)
        clean["lead_auth"] = data["lead_auth"]
    return clean
