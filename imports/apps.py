from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "imports"
    verbose_name = "Imports from other platforms"

    def ready(self) -> None:
        from tracking.insight.readiness import program_check_providers
        from tracking.stripe.old_platforms import old_platform_finders

        from .readiness import import_check
        from .stripe_attribution import old_platform_customer

        # tracking builds on no import: the readiness check and the Stripe step are registered here.
        if import_check not in program_check_providers:
            program_check_providers.append(import_check)
        if old_platform_customer not in old_platform_finders:
            old_platform_finders.append(old_platform_customer)
