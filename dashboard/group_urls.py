"""The Groups tab's routes (dashboard.group_views), included by dashboard.urls: a program's groups with their tier
rules and bonuses, and each partner's group and coupon codes."""

from django.urls import path

from . import group_views

GROUP = "programs/<int:program_id>/groups/<int:group_id>"
PARTNER = "programs/<int:program_id>/partners/<int:partner_id>"

urlpatterns = [
    path("programs/<int:program_id>/groups", group_views.groups_list, name="dashboard-groups"),
    path("programs/<int:program_id>/groups/new", group_views.group_new, name="dashboard-group-new"),
    path(GROUP, group_views.group_detail, name="dashboard-group"),
    path(f"{GROUP}/edit", group_views.group_edit, name="dashboard-group-edit"),
    path(f"{GROUP}/delete", group_views.group_remove, name="dashboard-group-delete"),
    path(f"{GROUP}/tier-rules", group_views.tier_rule_add, name="dashboard-group-rule-add"),
    path(f"{GROUP}/tier-rules/<int:rule_id>/delete", group_views.tier_rule_remove, name="dashboard-group-rule-delete"),
    path(f"{GROUP}/bonuses", group_views.bonus_add, name="dashboard-group-bonus-add"),
    path(f"{GROUP}/bonuses/<int:bonus_id>/delete", group_views.bonus_remove, name="dashboard-group-bonus-delete"),
    path(f"{PARTNER}/group", group_views.partner_group, name="dashboard-partner-group"),
    path(f"{PARTNER}/group/move", group_views.partner_group_move, name="dashboard-partner-move"),
    path(f"{PARTNER}/codes", group_views.partner_code_add, name="dashboard-partner-code-add"),
    path(
        "programs/<int:program_id>/codes/<int:code_id>/deactivate",
        group_views.partner_code_deactivate,
        name="dashboard-code-deactivate",
    ),
]
