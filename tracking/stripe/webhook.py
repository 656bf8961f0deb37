"""The platform's one Stripe webhook: events of every connected account arrive here."""

import json
import logging

import stripe
from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.tasks import enqueue
from core.text import storable_copy
from programs.models import Program

from ..models import ProcessorEvent
from ..tasks import process_processor_event_task

logger = logging.getLogger("svc.stripe")

# Stripe's own default: a signature older than five minutes is refused (replay protection).
SIGNATURE_TOLERANCE_SECONDS = 300


def _refuse(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"received": False, "error": message}, status=status)


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> JsonResponse:
    """Verifies the signature, stores the event once (Stripe's event id is the idempotency key),
    acknowledges, and leaves the processing to a Celery task. Unsigned, forged or stale payloads get
    400 and nothing is stored."""
    secret = settings.STRIPE_WEBHOOK_SECRET
    if not secret:
        return _refuse("Stripe webhooks are not configured on this server (STRIPE_WEBHOOK_SECRET)", status=503)
    signature = request.META.get("HTTP_STRIPE_SIGNATURE", "")
    if not signature:
        return _refuse("Missing Stripe-Signature header")
    try:
        stripe.Webhook.construct_event(request.body, signature, secret, tolerance=SIGNATURE_TOLERANCE_SECONDS)
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

    account_id = payload.get("account") or ""
    program = Program.objects.filter(stripe_account_id=account_id).first() if account_id else None
    try:
        with transaction.atomic():
            event = ProcessorEvent.objects.create(
                event_id=event_id,
                event_type=str(payload.get("type") or ""),
                account_id=account_id,
                program=program,
                livemode=bool(payload.get("livemode")),
                payload=payload,
            )
            transaction.on_commit(lambda: enqueue(process_processor_event_task, event.pk))
    except IntegrityError:
        # A redelivery: acknowledged, never processed twice.
        return JsonResponse({"received": True, "duplicate": True})
    logger.info("stripe.event_received", extra={"event_id": event_id, "type": event.event_type})
    return JsonResponse({"received": True})
