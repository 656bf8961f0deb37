"""Reading endpoints, deliveries and attempts for the dashboard's webhooks pages. A program sees its own endpoints
and its workspace's workspace-wide ones (program empty), the same set webhooks.fanout._wants sends to."""

from collections.abc import Iterable

from django.db.models import F, Q, QuerySet

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


def _endpoints_of_program(*, program_id: int, workspace_id: int) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(Q(program_id=program_id) | Q(program__isnull=True), workspace_id=workspace_id)


def endpoints_list(*, program_id: int, workspace_id: int) -> list[WebhookEndpoint]:
    """The program's endpoints, then the workspace-wide ones, newest first within each. One query."""
    return list(
        _endpoints_of_program(program_id=program_id, workspace_id=workspace_id).order_by(
            F("program_id").asc(nulls_last=True), "-created_at", "-pk"
        )
    )


def endpoint_get(*, program_id: int, workspace_id: int, endpoint_id: int) -> WebhookEndpoint | None:
    """The endpoint when the program sees it (its own, or workspace-wide in the program's workspace); None for
    any other, so another workspace's endpoint is as unknown as one that never existed. One query."""
    return _endpoints_of_program(program_id=program_id, workspace_id=workspace_id).filter(pk=endpoint_id).first()


def deliveries_list(*, endpoint_id: int, status: str = "", event_type: str = "") -> QuerySet[WebhookDelivery]:
    """The endpoint's delivery log, newest first (the webhook_delivery_endpoint / _status indexes), each with its
    event; optionally only one status or one event type. Lazy: the caller pages it."""
    deliveries = WebhookDelivery.objects.filter(endpoint_id=endpoint_id).select_related("event")
    if status:
        deliveries = deliveries.filter(status=status)
    if event_type:
        deliveries = deliveries.filter(event__type=event_type)
    return deliveries.order_by("-created_at", "-pk")


def delivery_get(*, endpoint_id: int, delivery_id: int) -> WebhookDelivery | None:
    """One delivery of the endpoint, None when it is another endpoint's or gone. One query."""
    return WebhookDelivery.objects.filter(endpoint_id=endpoint_id, pk=delivery_id).first()


def attempts_by_delivery(delivery_ids: Iterable[int]) -> dict[int, list[WebhookAttempt]]:
    """Every attempt of the given deliveries, oldest first, keyed by delivery id. One query (none for no ids)."""
    ids = list(delivery_ids)
    grouped: dict[int, list[WebhookAttempt]] = {delivery_id: [] for delivery_id in ids}
    if not ids:
        return grouped
    for attempt in WebhookAttempt.objects.filter(delivery_id__in=ids).order_by("delivery_id", "number", "pk"):
        grouped[attempt.delivery_id].append(attempt)
    return grouped
