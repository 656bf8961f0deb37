"""The payouts' Stripe webhook: `account.updated` of partners' Express accounts (a Connect endpoint) and
`transfer.*` of the platform's own transfers (an Account endpoint), both pointed at this URL, each with its own
signing secret (STRIPE_PAYOUTS_WEBHOOK_SECRETS). The owners' inbound payments webhook is separate and unchanged."""

import json
import logging

import stripe
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.stripe_signatures import stripe_signature_verify

from .stripe_rail import connect_event_apply

logger = logging.getLogger("svc.payouts")


def _refuse(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"received": False, "error": message}, status=status)


def _verified(body: bytes, signature: str, secrets: list[str]) -> bool:
    for secret in secrets:
        try:
            stripe_signature_verify(body, signature, secret)
        except stripe.SignatureVerificationError:
            continue
        return True
    return False


@csrf_exempt
@require_POST
def payouts_stripe_webhook(request: HttpRequest) -> JsonResponse:
    """Verifies the signature against each configured secret and applies the event at once (each is idempotent:
    a redelivered or late event changes nothing already settled). Unsigned or forged payloads get 400."""
    secrets = list(settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS)
    if not secrets:
        return _refuse(
            "Stripe payout webhooks are not configured on this server (STRIPE_PAYOUTS_WEBHOOK_SECRETS)", status=503
        )
    signature = request.META.get("HTTP_STRIPE_SIGNATURE", "")
    if not signature:
        return _refuse("Missing Stripe-Signature header")
    try:
        payload = json.loads(request.body)
    except (ValueError, RecursionError):
        return _refuse("Invalid payload")
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
        return _refuse("Invalid payload")
    try:
        if not _verified(request.body, signature, secrets):
            return _refuse("Invalid or expired signature")
    except ValueError:
        return _refuse("Invalid payload")
    if not isinstance(payload["data"].get("object"), dict):
        return _refuse("Invalid payload")
    done = connect_event_apply(payload)
    logger.info("payouts.stripe_event", extra={"stripe_event_type": str(payload.get("type", ""))[:64], "done": done})
    return JsonResponse({"received": True, "applied": done or None})
