from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from programs.models import Program

from .rules import THRESHOLD_RANGE, WINDOW_RANGE, Action, Rule


class RuleSetting(models.Model):
    """A program's choice for one rule. A rule without a row runs with its defaults (fraud.rules.SPECS)."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="rule_settings")
    rule = models.CharField(max_length=32, choices=Rule.choices)
    enabled = models.BooleanField()
    action = models.CharField(max_length=8, choices=Action.choices)
    threshold = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(THRESHOLD_RANGE[0]), MaxValueValidator(THRESHOLD_RANGE[1])],
        help_text="Velocity rules: the rule fires on more than this many",
    )
    window_minutes = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(WINDOW_RANGE[0]), MaxValueValidator(WINDOW_RANGE[1])],
        help_text="Duplicate and velocity rules: the window counted back from the event",
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["program", "rule"], name="rule_setting_unique"),
            models.CheckConstraint(condition=Q(rule__in=Rule.values), name="rule_setting_known_rule"),
            models.CheckConstraint(condition=Q(action__in=Action.values), name="rule_setting_known_action"),
        ]

    def __str__(self) -> str:
        state = self.action if self.enabled else "off"
        return f"{self.rule} ({state}) on program #{self.program_id}"
