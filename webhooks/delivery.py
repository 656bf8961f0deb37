"""Sending deliveries: one attempt at a time, retried on a schedule, logged.

An attempt is taken by a conditional UPDATE (still pending, due, not leased by another worker), so concurrent
tasks, sweeps and resends never send one delivery twice at once; the lease outlives the request's timeout, so
a worker that dies mid-request leaves the delivery to the sweep once it expires. Taking the lease also ends the
claim under which the delivery was queued (webhooks.dispatch), and writes the attempt's log row, in flight, in the
same transaction: a worker killed while its request is out leaves that row, which the next attempt marks "outcome
unknown". The HTTP request runs outside any transaction; its outcome and the delivery's next state commit
together."""

import email.utils
import functools
import json
import logging
import random
import ssl
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import certifi
import httpx
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from .addresses import UrlRefused, delivery_target
from .dispatch import claim_drop, deliveries_queue
from .models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .queue import NOTIFY_ENDPOINT_DISABLED, queue
from .signing import SecretUnreadable, secret_decrypt, signature_header

logger = logging.getLogger("svc.webhooks")

USER_AGENT = "svc-webhooks/1"
EXCERPT_CHARS = 1000
# The lease outlives the request's timeout by this much: past the delivery task's hard time limit (webhooks.tasks)
# and the writing of the outcome. It is also how long a delivery whose worker was killed mid-request waits before
# the sweep sends it again, so it is kept short.
LEASE_MARGIN_SECONDS = 10
# A retry due within this many seconds is queued with a countdown (if the queue has room); later ones are left to
# the sweep.
QUEUE_RETRY_WITHIN_SECONDS = 60
ENDPOINT_DISABLED = "endpoint disabled"
OUTCOME_UNKNOWN = (
    "outcome unknown: the worker stopped before it recorded an answer (the receiver may have had this request; "
    "the next one carries the same webhook-id)"
)
REASON_GONE = "The endpoint answered 410 Gone."
REASON_FAILING = "Every delivery attempt failed for {hours} hours."


@dataclass
class Outcome:
    status_code: int | None = None
    latency_ms: int = 0
    excerpt: str = ""
    error: str = ""
    retry_after_seconds: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def retry_delay(*, failed_attempts: int, outcome: Outcome) -> float | None:
    """Seconds until the next attempt after `failed_attempts` failures in a row, or None when the schedule is
    used up. The schedule's step is jittered by a fifth either way, so endpoints failing together do not all
    come back at once; a Retry-After (429 or 503) sets the wait instead, within WEBHOOK_RETRY_AFTER_MAX_SECONDS."""
    schedule: list[int] = settings.WEBHOOK_RETRY_SCHEDULE
    if failed_attempts > len(schedule):
        return None
    if outcome.retry_after_seconds is not None:
        return min(max(outcome.retry_after_seconds, 1.0), float(settings.WEBHOOK_RETRY_AFTER_MAX_SECONDS))
    return schedule[failed_attempts - 1] * random.uniform(0.8, 1.2)


def retry_after_parse(value: str | None, *, now: datetime) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max((when - now).total_seconds(), 0.0)


def _claim(delivery_id: int, now: datetime) -> bool:
    lease = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS)
    return bool(
        WebhookDelivery.objects.filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .filter(pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
        .update(
            leased_until=lease,
            queued_until=None,
            attempts=F("attempts") + 1,
            scheduled_attempts=F("scheduled_attempts") + 1,
        )
    )


def _attempt_start(*, delivery_id: int, now: datetime) -> tuple[WebhookDelivery, WebhookAttempt | None] | None:
    """Leases the delivery and writes its attempt, in flight, in one transaction; None when there is nothing to do
    (not due, leased, finished). A disabled endpoint's delivery fails instead (no attempt: the attempt is None)."""
    with transaction.atomic():
        if not _claim(delivery_id, now):
            return None
        delivery = WebhookDelivery.objects.select_related("event", "endpoint").get(pk=delivery_id)
        if not delivery.endpoint.enabled:
            WebhookDelivery.objects.filter(pk=delivery_id).update(
                status=DeliveryStatus.FAILED,
                leased_until=None,
                next_attempt_at=None,
                attempts=F("attempts") - 1,
                scheduled_attempts=F("scheduled_attempts") - 1,
                last_error=ENDPOINT_DISABLED,
            )
            return delivery, None
        if delivery.attempts > 1:
            # An earlier attempt still in flight lost its worker: the lease it held has run out.
            WebhookAttempt.objects.filter(delivery_id=delivery_id, in_flight=True).update(
                in_flight=False, error=OUTCOME_UNKNOWN
            )
        attempt = WebhookAttempt.objects.create(
            delivery=delivery, number=delivery.attempts, manual=delivery.resent, started_at=now, in_flight=True
        )
    return delivery, attempt


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The current secret, and the previous one while its rotation overlap lasts."""
    current = [secret_decrypt(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires is not None and expires > now:
        return [*current, secret_decrypt(endpoint.previous_secret_encrypted)]
    return current


def request_parts(delivery: WebhookDelivery, now: datetime) -> tuple[bytes, dict[str, str]]:
    """The body and Standard Webhooks headers of a delivery's request."""
    event = delivery.event
    body = json.dumps(event.payload(), separators=(",", ":"))
    headers = {
        "webhook-id": event.public_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature_header(
            secrets_=signing_secrets(delivery.endpoint, now), message_id=event.public_id, timestamp=now, body=body
        ),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
    return body.encode(), headers


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One per process: httpx would otherwise build one, loading the CA bundle, for every attempt (about 30 ms of
    CPU each, most of an attempt's cost)."""
    return ssl.create_default_context(cafile=certifi.where())


def _send(delivery: WebhookDelivery, now: datetime) -> Outcome:
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        body, headers = request_parts(delivery, now)
        target = delivery_target(delivery.endpoint.url)
    except (UrlRefused, SecretUnreadable) as error:
        return Outcome(error=str(error))
    try:
        with (
            httpx.Client(
                timeout=settings.WEBHOOK_TIMEOUT_SECONDS, follow_redirects=False, trust_env=False, verify=_tls_context()
            ) as client,
            client.stream(
                "POST", target.url, content=body, headers={**headers, **target.headers}, extensions=target.extensions
            ) as response,
        ):
            excerpt = b""
            # httpx's timeout bounds each read, not the whole: a receiver trickling its body would otherwise hold
            # the attempt past its lease, when another worker may send the delivery again.
            deadline = started + settings.WEBHOOK_TIMEOUT_SECONDS
            for chunk in response.iter_bytes():
                excerpt += chunk
                if len(excerpt) >= EXCERPT_CHARS * 4:
                    break
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the response outlasted the timeout", request=response.request)
            retry_after = (
                retry_after_parse(response.headers.get("retry-after"), now=now)
                if response.status_code in (429, 503)
                else None
            )
            return Outcome(
                status_code=response.status_code,
                latency_ms=elapsed(),
                excerpt=excerpt.decode("utf-8", errors="replace")[:EXCERPT_CHARS],
                retry_after_seconds=retry_after,
            )
    except (httpx.TimeoutException, SoftTimeLimitExceeded):
        return Outcome(latency_ms=elapsed(), error=f"timed out after {settings.WEBHOOK_TIMEOUT_SECONDS} s")
    except httpx.HTTPError as error:
        return Outcome(latency_ms=elapsed(), error=f"{type(error).__name__}: {error}"[:EXCERPT_CHARS])


def _failure_text(outcome: Outcome) -> str:
    if outcome.error:
        return outcome.error
    return f"HTTP {outcome.status_code}"


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> Outcome | None:
    """Makes the delivery's next attempt if it is due and no one else is making it. Returns its outcome, or None
    when there was nothing to do (not due, leased, finished)."""
    now = now or timezone.now()
    started = _attempt_start(delivery_id=delivery_id, now=now)
    if started is None:
        claim_drop(delivery_id=delivery_id)
        return None
    delivery, attempt = started
    if attempt is None:
        return None
    outcome = _send(delivery, now)
    finished = timezone.now()
    retry_in = _record(delivery=delivery, attempt=attempt, outcome=outcome, now=finished)
    if retry_in is not None and retry_in <= QUEUE_RETRY_WITHIN_SECONDS:
        deliveries_queue(ids=[delivery_id], countdown=retry_in)
    return outcome


def _record(*, delivery: WebhookDelivery, attempt: WebhookAttempt, outcome: Outcome, now: datetime) -> float | None:
    """Completes the attempt and writes the delivery's next state; returns the seconds to the next attempt, if any."""
    endpoint = delivery.endpoint
    with transaction.atomic():
        WebhookAttempt.objects.filter(pk=attempt.pk).update(
            in_flight=False,
            status_code=outcome.status_code,
            latency_ms=outcome.latency_ms,
            response_excerpt=outcome.excerpt,
            error=outcome.error,
            succeeded=outcome.succeeded,
        )
        common = {"leased_until": None, "last_status_code": outcome.status_code, "resent": False}
        if outcome.succeeded:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(
                **common, status=DeliveryStatus.SUCCEEDED, delivered_at=now, next_attempt_at=None, last_error=""
            )
            # Only an endpoint that was failing is written: a healthy one's row is not every delivery's hot row.
            WebhookEndpoint.objects.filter(pk=endpoint.pk).filter(
                Q(failing_since__isnull=False) | Q(consecutive_failures__gt=0)
            ).update(failing_since=None, consecutive_failures=0)
            return None

        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            consecutive_failures=F("consecutive_failures") + 1, failing_since=Coalesce("failing_since", now)
        )
        failing_since = WebhookEndpoint.objects.values_list("failing_since", flat=True).get(pk=endpoint.pk)
        disable_after = timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS)
        reason = ""
        if outcome.status_code == 410:
            reason = REASON_GONE
        elif failing_since is not None and failing_since <= now - disable_after:
            reason = REASON_FAILING.format(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS)
        retry_in = None if reason else retry_delay(failed_attempts=delivery.scheduled_attempts, outcome=outcome)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            **common,
            status=DeliveryStatus.PENDING if retry_in is not None else DeliveryStatus.FAILED,
            next_attempt_at=now + timedelta(seconds=retry_in) if retry_in is not None else None,
            last_error=_failure_text(outcome),
        )
        if reason:
            endpoint_disable_failing(endpoint_id=endpoint.pk, reason=reason, now=now)
    return retry_in


def endpoint_disable_failing(*, endpoint_id: int, reason: str, now: datetime) -> bool:
    """Disables an endpoint the service gave up on and, once that commits, tells the workspace's owners. Only
    the first of concurrent attempts to do it notifies."""
    disabled = WebhookEndpoint.objects.filter(pk=endpoint_id, enabled=True).update(
        enabled=False, disabled_at=now, disabled_reason=reason
    )
    if disabled:
        logger.warning("webhooks.endpoint_disabled", extra={"endpoint_id": endpoint_id, "reason": reason})
        transaction.on_commit(lambda: queue(NOTIFY_ENDPOINT_DISABLED, endpoint_id))
    return bool(disabled)
