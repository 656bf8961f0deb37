from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "imports"
    verbose_name = "Imports from other platforms"

    def ready(self) -> None:
        from tracking.stripe.old_platforms import old_platform_finders

        from .stripe_attribution import old_platform_customer

        # tracking builds on no import: the Stripe step is registered here.
        if old_platform_customer not in old_platform_finders:
            old_platform_finders.append(old_platform_customer)
