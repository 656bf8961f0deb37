"""The inbound webhook of every billing connection: POST /webhooks/billing/<platform>/<token>."""

import logging
from dataclasses import replace

from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.text import storable_copy
from webhooks.signing import SecretUnreadable

from .models import BillingConnection
from .platforms import READERS
from .platforms.base import Delivery, Refused
from .services import billing_event_store, connection_secrets, signature_failure_record

logger = logging.getLogger("svc.billing")

UNKNOWN_CONNECTION = "No billing connection at this URL: copy the URL again from the program's Billing page"


SECRET_UNREADABLE = "This connection's secret cannot be read on this server (SECRET_KEY changed): paste it again"


def _refuse(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"received": False, "error": message}, status=status)


@csrf_exempt
@require_POST
def billing_webhook(request: HttpRequest, platform: str, token: str) -> JsonResponse:
    """Verifies the delivery the platform's way, stores the event once and acknowledges; the worker records what it
    means. A forged, stale or malformed delivery is answered 400 (401 for Chargebee's credentials) and stores
    nothing; a redelivery is acknowledged and not processed again."""
    reader = READERS.get(platform)
    connection = (
        BillingConnection.objects.filter(token=token, platform=platform, is_active=True).first() if reader else None
    )
    if reader is None or connection is None:
        return _refuse(UNKNOWN_CONNECTION, status=404)
    now = timezone.now()
    delivery = Delivery(
        body=request.body, headers={name.lower(): value for name, value in request.headers.items()}, received_at=now
    )
    try:
        verified = reader.verify(connection, delivery, connection_secrets(connection, now=now))
    except SecretUnreadable:
        logger.error("billing.secret_unreadable", extra={"connection_id": connection.pk})
        return _refuse(SECRET_UNREADABLE, status=503)
    except Refused as refused:
        if refused.signature:
            signature_failure_record(connection=connection, reason=refused.message, now=now)
        logger.warning(
            "billing.delivery_refused",
            extra={"platform": platform, "connection_id": connection.pk, "reason": refused.message},
        )
        return _refuse(refused.message, status=refused.status)
    payload = storable_copy(verified.payload)
    stored = billing_event_store(
        connection=connection,
        verified=replace(verified, payload=payload),
        carried_attribution=reader.carried_attribution(payload),
        now=now,
    )
    if stored.duplicate:
        return JsonResponse({"received": True, "duplicate": True})
    return JsonResponse({"received": True})
