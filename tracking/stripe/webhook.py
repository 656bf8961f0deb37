"""The platform's one Stripe webhook: events of every connected account arrive here."""

import json

import stripe
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.stripe_signatures import stripe_signature_verify
from core.text import storable_copy

from .services import processor_event_store


def _refuse(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"received": False, "error": message}, status=status)


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> JsonResponse:
    """Verifies the signature, hands the event to `processor_event_store` (stored once, processed by a Celery
    task) and acknowledges. Unsigned, forged or stale payloads get 400 and nothing is stored."""
    secret = settings.STRIPE_WEBHOOK_SECRET
    if not secret:
        return _refuse("Stripe webhooks are not configured on this server (STRIPE_WEBHOOK_SECRET)", status=503)
    signature = request.META.get("HTTP_STRIPE_SIGNATURE", "")
    if not signature:
        return _refuse("Missing Stripe-Signature header")
    try:
        stripe_signature_verify(request.body, signature, secret)
    except ValueError:
        return _refuse("Invalid payload")
    except stripe.SignatureVerificationError:
        return _refuse("Invalid or expired signature")
    try:
        # Signed by Stripe, so kept whatever it holds; only what PostgreSQL cannot store is replaced.
        payload = storable_copy(json.loads(request.body))
    except (ValueError, RecursionError):
        return _refuse("Invalid payload")
    event_id = payload.get("id")
    if not isinstance(event_id, str) or not isinstance(payload.get("data"), dict):
        return _refuse("Invalid payload")

    stored = processor_event_store(event_id=event_id, payload=payload)
    if stored.duplicate:
        # A redelivery: acknowledged, never processed twice.
        return JsonResponse({"received": True, "duplicate": True})
    return JsonResponse({"received": True})
