import stripe
from django.apps import AppConfig
from django.conf import settings


class PayoutsConfig(AppConfig):
    name = "payouts"
    verbose_name = "Payouts"

    def ready(self) -> None:
        from commissions.services import balance_fitters, paid_out_checks
        from core.integrity import integrity_check_register

        from .integrity import CHECKS
        from .ledger import commission_paid_out, payouts_fit_balance

        integrity_check_register(*CHECKS)

        # A clawback reduces the partner's payouts not sent yet before their open withdrawals (docs/payouts.md).
        if payouts_fit_balance not in balance_fitters:
            balance_fitters.insert(0, payouts_fit_balance)
        # A refund after the payout covering its commission left warns the advertiser, as for a paid commission.
        if commission_paid_out not in paid_out_checks:
            paid_out_checks.append(commission_paid_out)
        if settings.STRIPE_API_BASE:
            stripe.api_base = settings.STRIPE_API_BASE  # every Stripe call of this process (config/settings.py)
