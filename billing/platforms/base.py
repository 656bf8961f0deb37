"""What every platform's reader does, and the shapes it hands back. A reader verifies a delivery the way its platform
documents it (raising `Refused`), names the event (`Verified`), and turns a stored event into a sale or a refund
through tracking.payments (`handle`, answering an `Outcome`)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..models import BillingConnection, BillingEvent

# How far a signed timestamp may be from now, either way (Paddle's ts, Standard Webhooks' webhook-timestamp):
# Standard Webhooks' own tolerance, and long enough for a self-hosted server's clock to drift a little.
TIMESTAMP_TOLERANCE_SECONDS = 300


@dataclass(frozen=True)
class Delivery:
    """A webhook request as it arrived: the raw body (signatures are over its bytes) and the headers, with names
    lower-cased."""

    body: bytes
    headers: Mapping[str, str]
    received_at: datetime


@dataclass(frozen=True)
class Verified:
    """A delivery whose signature held. `event_id` is the platform's event id (the key a redelivery or a replay is
    known by); `livemode` is what the event says of itself, None when it says nothing (the connection's environment
    then decides)."""

    event_id: str
    event_type: str
    payload: dict[str, Any]
    livemode: bool | None = None


class Refused(Exception):
    """A delivery that is not processed, and why (the answer's `error`). `signature`: the failure was the signature,
    the secret or the credentials (counted on the connection for readiness) rather than a malformed body."""

    def __init__(self, message: str, *, signature: bool = True, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.signature = signature
        self.status = status


@dataclass(frozen=True)
class EventGuide:
    """What the owner enables in the platform: the event names, each with what it records here."""

    name: str
    records: str


@dataclass(frozen=True)
class SetupGuide:
    """The connection page's platform-specific text: where the webhook is made, what the secret is called there,
    the events to enable and the docs page."""

    where: str
    secret_label: str
    events: tuple[EventGuide, ...]
    docs: str
    secret_help: str = ""
    needs_username: bool = False
    needs_site: bool = False
    needs_api_key: bool = False
    extra: tuple[str, ...] = field(default_factory=tuple)


class PlatformReader(Protocol):
    guide: SetupGuide

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        """The verified event, or raises Refused. `secrets`: the current secret first, then the previous one while
        its overlap lasts."""
        ...

    def handle(self, event: BillingEvent) -> Any:
        """What the stored event did (a tracking.payments.Outcome). Raises on anything unexpected: the event rolls
        back whole and is retried."""
        ...

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        """Whether a payment event carried the checkout's svc_click_id or svc_customer_key (None: not a payment)."""
        ...
