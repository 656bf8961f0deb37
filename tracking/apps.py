from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class TrackingConfig(AppConfig):
    name = "tracking"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.integrity import integrity_check_register
        from groups.models import PartnerGroup
        from programs.models import Partner, PartnerProgram, Program, ReferralLink

        from .integrity import CHECKS
        from .link_cache import link_cache_clear

        integrity_check_register(*CHECKS)

        for model in (ReferralLink, Program, PartnerProgram, Partner, PartnerGroup):
            post_save.connect(link_cache_clear, sender=model, dispatch_uid=f"link-cache-{model.__name__}-save")
            post_delete.connect(link_cache_clear, sender=model, dispatch_uid=f"link-cache-{model.__name__}-delete")
