"""Stripe webhook signatures, checked one way for every endpoint that takes Stripe's events (the owners' inbound
webhook in tracking.stripe, the payouts' in payouts.webhook)."""

import time

import stripe

# Stripe's own default: a signature older than five minutes is refused (replay protection). One dated more than that
# ahead is refused too: the stripe library checks only the past, so a signature dated an hour ahead would stay
# replayable for an hour.
SIGNATURE_TOLERANCE_SECONDS = 300


def _signed_at(header: str) -> int:
    """The header's `t=`, read as the stripe library reads it (the first one); only called once it verified."""
    return int(next(value for key, _, value in (item.partition("=") for item in header.split(",")) if key == "t"))


def stripe_signature_verify(payload: bytes, header: str, secret: str, *, now: float | None = None) -> None:
    """Raises stripe.SignatureVerificationError unless `header` signs `payload` with `secret` at a time within the
    tolerance either side of now; ValueError for a payload that is not UTF-8."""
    stripe.WebhookSignature.verify_header(payload, header, secret, tolerance=SIGNATURE_TOLERANCE_SECONDS)
    now = time.time() if now is None else now
    if _signed_at(header) > now + SIGNATURE_TOLERANCE_SECONDS:
        raise stripe.SignatureVerificationError("Timestamp outside the tolerance zone (in the future)", header)
