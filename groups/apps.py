from django.apps import AppConfig


class GroupsConfig(AppConfig):
    name = "groups"
    verbose_name = "Partner groups, tiers, bonuses and coupon codes"

    def ready(self) -> None:
        from . import signals  # noqa: F401
