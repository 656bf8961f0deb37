"""Messages of the program settings routes that the spec does not give (its table covers `svc init`, whose
messages live in core.messages with the rest of the spec's)."""

from .models import EDITABLE_SETTINGS

SETTINGS_EMPTY_PATCH = "Send at least one setting to change. Editable: " + ", ".join(EDITABLE_SETTINGS)
SETTINGS_UNKNOWN_FIELDS = "Unknown or read-only field(s): {fields}. Editable: " + ", ".join(EDITABLE_SETTINGS)
HOLD_DAYS_INVALID = "hold_days must be a whole number of days from 0 to 365"
LEAD_AUTH_INVALID = "lead_auth must be browser_allowed or server_required"
