"""Dodo: verification and events (being written; see docs/billing/dodo.md)."""

from typing import Any

from tracking.payments import Outcome, ignored

from ..models import BillingConnection, BillingEvent, Platform
from .base import Delivery, Refused, SetupGuide, Verified


class DodoReader:
    platform = Platform.DODO
    guide = SetupGuide(where="", secret_label="Signing secret", events=(), docs="docs/billing/dodo.md")

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        raise Refused("Dodo webhooks are not supported yet", signature=False)

    def handle(self, event: BillingEvent) -> Outcome:
        return ignored(f"{event.event_type} is not used")

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        return None


reader = DodoReader()
