from django.apps import AppConfig


class PayoutsConfig(AppConfig):
    name = "payouts"
    verbose_name = "Payouts"

    def ready(self) -> None:
        from commissions.services import balance_fitters

        from .ledger import payouts_fit_balance

        # A clawback reduces the partner's payouts not sent yet before their open withdrawals (docs/payouts.md).
        if payouts_fit_balance not in balance_fitters:
            balance_fitters.insert(0, payouts_fit_balance)
