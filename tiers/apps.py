from django.apps import AppConfig


class TiersConfig(AppConfig):
    """No models (they are groups'): a partner's figures, tier rules applied and milestone bonuses paid and clawed
    back, by beat jobs. Above commissions and tracking, whose rows it reads and writes; groups sits below both."""

    name = "tiers"
    verbose_name = "Tier rules and bonuses applied"
