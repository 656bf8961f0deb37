import stripe
from django.apps import AppConfig
from django.conf import settings


class PayoutsConfig(AppConfig):
    name = "payouts"
    verbose_name = "Payouts"

    def ready(self) -> None:
        from core.integrity import integrity_check_register

        from .integrity import CHECKS

        integrity_check_register(*CHECKS)
        if settings.STRIPE_API_BASE:
            stripe.api_base = settings.STRIPE_API_BASE  # every Stripe call of this process (config/settings.py)
