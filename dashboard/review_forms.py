"""The review tab's forms. They read the posted fields into types; whether a threshold or window is in range is
decided by fraud.config.rule_update, whose message the page shows next to the rule."""

from collections.abc import Mapping
from typing import Any, cast

from django import forms

from fraud.config import RuleChanges, RuleConfig
from fraud.rules import SPECS, THRESHOLD_RANGE, WINDOW_RANGE
from fraud.rules import Action as RuleAction

from . import messages
from .form_errors import FieldErrorsForm

# As the agent API's void and hold: a reason fits the ledger memo and an owner's sentence.
REASON_MAX_LENGTH = 500
_REASON_ERRORS = {"max_length": messages.REASON_TOO_LONG.format(limit=REASON_MAX_LENGTH)}


class ReleaseForm(forms.Form):
    reason = forms.CharField(max_length=REASON_MAX_LENGTH, required=False, strip=True, error_messages=_REASON_ERRORS)


class VoidForm(forms.Form):
    reason = forms.CharField(
        max_length=REASON_MAX_LENGTH,
        strip=True,
        error_messages={**_REASON_ERRORS, "required": messages.VOID_REASON_REQUIRED},
    )


class RuleForm(FieldErrorsForm):
    """One rule's settings, prefixed with the rule's name; threshold and window only where the rule has them.
    The labels are the page's column headings: each control is named by its rule and its column."""

    enabled = forms.BooleanField(required=False, label="On")
    action = forms.ChoiceField(
        label="When it fires",
        choices=[(RuleAction.FLAG, "Flag only"), (RuleAction.HOLD, "Flag and hold")],
        error_messages={"invalid_choice": messages.RULE_ACTION_INVALID},
    )
    threshold = forms.IntegerField(
        label="Threshold",
        error_messages={"required": messages.RULE_THRESHOLD_REQUIRED, "invalid": messages.RULE_NUMBER_INVALID},
    )
    window_minutes = forms.IntegerField(
        label="Window (minutes)",
        error_messages={"required": messages.RULE_WINDOW_REQUIRED, "invalid": messages.RULE_NUMBER_INVALID},
    )

    def __init__(self, data: Mapping[str, Any] | None = None, *, rule: str, config: RuleConfig) -> None:
        initial = {
            "enabled": config.enabled,
            "action": config.action,
            "threshold": config.threshold,
            "window_minutes": config.window_minutes,
        }
        super().__init__(data, prefix=rule, initial=initial)
        self.rule = rule
        self.spec = SPECS[rule]
        self.config = config
        # The service's bounds, for the browser to help with; rule_update is the rule (and its message).
        self.threshold_range, self.window_range = THRESHOLD_RANGE, WINDOW_RANGE
        if self.spec.threshold is None:
            del self.fields["threshold"]
        if self.spec.window_minutes is None:
            del self.fields["window_minutes"]

    def changes(self) -> RuleChanges:
        """The cleaned settings that differ from the rule's current ones (call after is_valid)."""
        current = {
            "enabled": self.config.enabled,
            "action": self.config.action,
            "threshold": self.config.threshold,
            "window_minutes": self.config.window_minutes,
        }
        # The form's fields are RuleChanges' keys, cleaned to their types.
        return cast(RuleChanges, {name: value for name, value in self.cleaned_data.items() if current[name] != value})
