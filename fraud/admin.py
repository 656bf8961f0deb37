from django.contrib import admin

from .models import RuleSetting
from .rules import SPECS


@admin.register(RuleSetting)
class RuleSettingAdmin(admin.ModelAdmin[RuleSetting]):
    """A program's choices for its fraud rules. A rule without a row runs on its defaults (fraud.rules.SPECS);
    deleting a row puts the rule back on them."""

    list_display = ["program", "rule", "enabled", "action", "threshold", "window_minutes", "updated_at"]
    list_filter = ["rule", "enabled", "action"]
    raw_id_fields = ["program"]
    readonly_fields = ["updated_at", "description"]
    fields = ["program", "rule", "description", "enabled", "action", "threshold", "window_minutes", "updated_at"]

    @admin.display(description="What the rule does")
    def description(self, setting: RuleSetting) -> str:
        spec = SPECS.get(setting.rule)
        return spec.description if spec else ""
