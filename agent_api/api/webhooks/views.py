"""Agent routes for outbound webhooks (webhooks:read, webhooks:write): endpoints (list, create, get, change,
delete, rotate the secret), an endpoint's deliveries and a delivery's attempts, resending one delivery or the
failed ones of a period, and the webhook events of the programs the key may see.

The rules are webhooks.services'; a refusal there (WebhookRefused, a webhooks.messages constant) is a 400 here,
except resending to a disabled endpoint, a 409 (the endpoint's state, not the request, is what is wrong).
A secret is answered once, by the create or rotate that made it: no read shows it, the audit entry does not hold
it, and an Idempotency-Key replay answers it from the record where it is kept encrypted."""

from typing import Any

from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.query import Instant, day_end
from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError
from programs.models import AgentKey
from webhooks import messages as webhook_messages
from webhooks import services as webhook_services
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.signing import secret_decrypt, secret_encrypt

from ... import messages
from ...selectors import (
    agent_program_get,
    agent_webhook_attempts,
    agent_webhook_deliveries,
    agent_webhook_deliveries_list,
    agent_webhook_delivery_get,
    agent_webhook_endpoint_get,
    agent_webhook_endpoints_list,
    agent_webhook_events_list,
)
from ...services import AgentWrite, ResponseSeal
from .. import serializers as s
from ..base import AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    AgentWebhookAttemptListSerializer,
    AgentWebhookDeliveryListSerializer,
    AgentWebhookDeliverySerializer,
    AgentWebhookEndpointCreateSerializer,
    AgentWebhookEndpointDeletedSerializer,
    AgentWebhookEndpointListSerializer,
    AgentWebhookEndpointResultSerializer,
    AgentWebhookEndpointSerializer,
    AgentWebhookEndpointUpdateSerializer,
    AgentWebhookEndpointWithSecretResultSerializer,
    AgentWebhookEndpointWithSecretSerializer,
    AgentWebhookEventListSerializer,
    AgentWebhookResendFailedResultSerializer,
    AgentWebhookResendFailedSerializer,
    AgentWebhookResendPeriodSerializer,
    AgentWebhookResendResultSerializer,
    AgentWebhookResendSerializer,
    DeliveriesQuerySerializer,
    EndpointsQuerySerializer,
    EventsQuerySerializer,
)

READ, WRITE = "webhooks:read", "webhooks:write"
ENDPOINT_ID = OpenApiParameter("endpoint_id", int, OpenApiParameter.PATH, description="Webhook endpoint id")
DELIVERY_ID = OpenApiParameter("delivery_id", int, OpenApiParameter.PATH, description="Webhook delivery id")
DISABLED_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="webhook_endpoint_disabled: enable the endpoint before resending; idempotency_conflict: the "
    "Idempotency-Key was used with another body",
)


def _refused(refusal: webhook_services.WebhookRefused) -> BadRequestError | ConflictError:
    """The agent API's error for what a webhooks service refused."""
    message = str(refusal)
    if message == webhook_messages.ENDPOINT_DISABLED_NO_RESEND:
        return ConflictError(message, code=messages.CODE_WEBHOOK_ENDPOINT_DISABLED)
    return BadRequestError(message, code=messages.CODE_BAD_REQUEST)


def _program_scope(key: AgentKey, program_id: int | None) -> int | None:
    """The program an endpoint is made for (404 when the key may not see it), or None for workspace-wide, which a
    key limited to programs may not make."""
    if program_id is not None:
        return agent_program_get(key, program_id).pk
    if key.limited_program_ids is not None:
        raise BadRequestError(messages.WEBHOOK_LIMITED_KEY_NEEDS_PROGRAM, code=messages.CODE_BAD_REQUEST)
    return None


def _endpoint_write(
    status: int, action: str, made: webhook_services.EndpointWithSecret, before: dict[str, Any] | None
) -> AgentWrite:
    """The write of a create or rotate: the endpoint's body with its new secret, answered this once (the audit
    entry holds the endpoint without it)."""
    now = timezone.now()
    after = AgentWebhookEndpointSerializer(made.endpoint, context={"now": now}).data
    data = AgentWebhookEndpointWithSecretSerializer(made.endpoint, context={"now": now, "secret": made.secret}).data
    return AgentWrite(status, {"data": data}, action, "webhook_endpoint", made.endpoint.pk, before, after)


def _secret_close(body: dict[str, Any]) -> dict[str, Any]:
    data = dict(body["data"])
    data["secret"] = {"encrypted": secret_encrypt(data["secret"])}
    return {**body, "data": data}


def _secret_open(body: dict[str, Any]) -> dict[str, Any]:
    data = dict(body["data"])
    data["secret"] = secret_decrypt(data["secret"]["encrypted"])
    return {**body, "data": data}


# The idempotency record of a create or rotate keeps the secret encrypted, like the endpoint does.
SECRET_SEAL = ResponseSeal(close=_secret_close, open=_secret_open)


# --- routes ---------------------------------------------------------------------------------------------------------


@list_schema(
    operation_id="agent_webhook_endpoints_list",
    summary="Webhook endpoints the key may see, newest first (never their secrets)",
    error_statuses=(400, 404),
)
class AgentWebhookEndpointsApi(AgentListApi, AgentWriteApi):
    required_scopes = {"GET": READ, "POST": WRITE}
    query_serializer = EndpointsQuerySerializer
    selector = staticmethod(agent_webhook_endpoints_list)
    output_serializer = AgentWebhookEndpointListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"program": self.program_filter(query)}

    def output_context(self, page: list[WebhookEndpoint]) -> dict[str, Any]:
        return {"now": timezone.now()}

    @extend_schema(
        summary="Create a webhook endpoint for a program (program_id) or every program of the workspace",
        description="The answer holds the signing secret (`secret`, whsec_…) this once; no read shows it again. "
        "A retry with the same Idempotency-Key answers the same endpoint and secret.",
        request=AgentWebhookEndpointCreateSerializer,
        responses={201: AgentWebhookEndpointWithSecretResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request) -> Response:
        key = self.agent_key
        body = body_of(AgentWebhookEndpointCreateSerializer, request)
        program_id = _program_scope(key, body.pop("program_id", None))
        workspace_id = key.workspace_id
        assert workspace_id is not None  # agent_api.auth refuses a key without a workspace

        def perform() -> AgentWrite:
            try:
                made = webhook_services.endpoint_create(workspace_id=workspace_id, program_id=program_id, **body)
            except webhook_services.WebhookRefused as refusal:
                raise _refused(refusal) from None
            return _endpoint_write(201, "webhook_endpoint.create", made, None)

        return self.write(request, perform, seal=SECRET_SEAL)


class AgentWebhookEndpointApi(AgentWriteApi):
    required_scopes = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(
        summary="One webhook endpoint (never its secret)",
        parameters=[ENDPOINT_ID],
        responses={200: AgentWebhookEndpointResultSerializer, **s.errors(404)},
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)
        return Response(AgentWebhookEndpointResultSerializer({"data": endpoint}).data)

    @extend_schema(
        summary="Change a webhook endpoint's url, event_types, enabled, include_test_events or description",
        description="Only the fields sent change. Enabling a disabled endpoint clears why it was disabled and its "
        "failure streak; its failed deliveries are not resent (POST …/resend-failed does that).",
        parameters=[ENDPOINT_ID],
        request=AgentWebhookEndpointUpdateSerializer,
        responses={200: AgentWebhookEndpointResultSerializer, **s.errors(400, 404, 409)},
    )
    def patch(self, request: Request, endpoint_id: str) -> Response:
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)
        changes = body_of(AgentWebhookEndpointUpdateSerializer, request)
        if not changes:
            raise BadRequestError(messages.WEBHOOK_PATCH_EMPTY, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            before = AgentWebhookEndpointSerializer(endpoint).data
            try:
                updated = webhook_services.endpoint_update(endpoint_id=endpoint.pk, changes=changes)
            except webhook_services.WebhookRefused as refusal:
                raise _refused(refusal) from None
            after = AgentWebhookEndpointSerializer(updated).data
            return AgentWrite(
                200, {"data": after}, "webhook_endpoint.update", "webhook_endpoint", endpoint.pk, before, after
            )

        return self.write(request, perform)

    @extend_schema(
        summary="Delete a webhook endpoint with its deliveries and their attempts",
        parameters=[ENDPOINT_ID],
        request=None,
        responses={200: AgentWebhookEndpointDeletedSerializer, **s.errors(404, 409)},
    )
    def delete(self, request: Request, endpoint_id: str) -> Response:
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)

        def perform() -> AgentWrite:
            before = AgentWebhookEndpointSerializer(endpoint).data
            webhook_services.endpoint_delete(endpoint_id=endpoint.pk)
            body = AgentWebhookEndpointDeletedSerializer({"data": {"id": endpoint.pk, "deleted": True}}).data
            return AgentWrite(200, body, "webhook_endpoint.delete", "webhook_endpoint", endpoint.pk, before, None)

        return self.write(request, perform)


class AgentWebhookSecretRotateApi(AgentWriteApi):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        summary="Rotate a webhook endpoint's signing secret",
        description="The answer holds the new secret (`secret`) this once. The previous secret keeps signing "
        "(a second signature in webhook-signature) until `previous_secret_expires_at` "
        "(WEBHOOK_ROTATION_OVERLAP_HOURS, 24 by default), so receivers can switch without missing a delivery. "
        "Rotating again within that time drops the oldest secret.",
        parameters=[ENDPOINT_ID],
        request=None,
        responses={200: AgentWebhookEndpointWithSecretResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request, endpoint_id: str) -> Response:
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)

        def perform() -> AgentWrite:
            before = AgentWebhookEndpointSerializer(endpoint).data
            rotated = webhook_services.endpoint_rotate_secret(endpoint_id=endpoint.pk)
            return _endpoint_write(200, "webhook_endpoint.rotate_secret", rotated, before)

        return self.write(request, perform, seal=SECRET_SEAL)


@list_schema(
    summary="An endpoint's deliveries (one per event sent to it), newest first",
    path_parameters=[ENDPOINT_ID],
    error_statuses=(400, 404),
)
class AgentWebhookDeliveriesApi(AgentListApi):
    required_scopes = {"GET": READ}
    query_serializer = DeliveriesQuerySerializer
    selector = staticmethod(agent_webhook_deliveries_list)
    output_serializer = AgentWebhookDeliveryListSerializer

    def owner(self, **path: str) -> WebhookEndpoint:
        return agent_webhook_endpoint_get(self.agent_key, path["endpoint_id"])

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"status": query.get("status"), "event_type": query.get("event_type")}


@list_schema(
    summary="A delivery's attempts (HTTP requests), newest first: status, latency, the start of the answer",
    path_parameters=[DELIVERY_ID],
    error_statuses=(400, 404),
)
class AgentWebhookAttemptsApi(AgentListApi):
    required_scopes = {"GET": READ}
    selector = staticmethod(agent_webhook_attempts)
    output_serializer = AgentWebhookAttemptListSerializer

    def owner(self, **path: str) -> WebhookDelivery:
        return agent_webhook_delivery_get(self.agent_key, path["delivery_id"])


class AgentWebhookDeliveryResendApi(AgentWriteApi):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        summary="Send a delivery again now, with the same event id and a fresh retry schedule",
        description="A delivery that is pending already is left as it is (`queued`: false). Refused (409 "
        "webhook_endpoint_disabled) while its endpoint is disabled.",
        parameters=[DELIVERY_ID],
        request=None,
        responses={200: AgentWebhookResendResultSerializer, **s.errors(400, 404), 409: DISABLED_CONFLICT},
    )
    def post(self, request: Request, delivery_id: str) -> Response:
        key = self.agent_key
        delivery = agent_webhook_delivery_get(key, delivery_id)

        def perform() -> AgentWrite:
            before = AgentWebhookDeliverySerializer(delivery).data
            try:
                queued = webhook_services.delivery_resend(delivery_id=delivery.pk)
            except webhook_services.WebhookRefused as refusal:
                raise _refused(refusal) from None
            resent = agent_webhook_deliveries(key).get(pk=delivery.pk)
            data = AgentWebhookResendSerializer({"delivery": resent, "queued": queued}).data
            return AgentWrite(
                200,
                {"data": data},
                "webhook_delivery.resend",
                "webhook_delivery",
                delivery.pk,
                before,
                data["delivery"],
            )

        return self.write(request, perform)


class AgentWebhookResendFailedApi(AgentWriteApi):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        summary="Send again every failed delivery of an endpoint whose event happened in a period",
        description="since is inclusive, until exclusive (a date as until means to the end of that UTC day). "
        "Refused (409 webhook_endpoint_disabled) while the endpoint is disabled.",
        parameters=[ENDPOINT_ID],
        request=AgentWebhookResendPeriodSerializer,
        responses={200: AgentWebhookResendFailedResultSerializer, **s.errors(400, 404), 409: DISABLED_CONFLICT},
    )
    def post(self, request: Request, endpoint_id: str) -> Response:
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)
        body = body_of(AgentWebhookResendPeriodSerializer, request)
        since: Instant = body["since"]
        until: Instant = body["until"]
        end = day_end(until.value) if until.is_date else until.value

        def perform() -> AgentWrite:
            try:
                queued = webhook_services.deliveries_resend_failed(
                    endpoint_id=endpoint.pk, since=since.value, until=end
                )
            except webhook_services.WebhookRefused as refusal:
                raise _refused(refusal) from None
            period = {"endpoint_id": endpoint.pk, "since": since.value, "until": end, "queued": queued}
            data = AgentWebhookResendFailedSerializer(period).data
            return AgentWrite(
                200, {"data": data}, "webhook_endpoint.resend_failed", "webhook_endpoint", endpoint.pk, None, data
            )

        return self.write(request, perform)


@list_schema(
    operation_id="agent_webhook_events_list",
    summary="Webhook events of the programs the key may see, newest first, as receivers get them",
    description="Every event the service announced, whether or not an endpoint wanted it (also those of "
    "`svc trigger`, marked synthetic). Kept WEBHOOK_EVENT_RETENTION_DAYS.",
    error_statuses=(400, 404),
)
class AgentWebhookEventsApi(AgentListApi):
    required_scopes = {"GET": READ}
    query_serializer = EventsQuerySerializer
    selector = staticmethod(agent_webhook_events_list)
    output_serializer = AgentWebhookEventListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"program": self.program_filter(query), "event_type": query.get("type")}


urlpatterns = [
    path("api/agent/v1/webhooks/endpoints", AgentWebhookEndpointsApi.as_view(), name="agent-webhook-endpoints"),
    path(
        "api/agent/v1/webhooks/endpoints/<id:endpoint_id>",
        AgentWebhookEndpointApi.as_view(),
        name="agent-webhook-endpoint",
    ),
    path(
        "api/agent/v1/webhooks/endpoints/<id:endpoint_id>/rotate-secret",
        AgentWebhookSecretRotateApi.as_view(),
        name="agent-webhook-endpoint-rotate-secret",
    ),
    path(
        "api/agent/v1/webhooks/endpoints/<id:endpoint_id>/deliveries",
        AgentWebhookDeliveriesApi.as_view(),
        name="agent-webhook-endpoint-deliveries",
    ),
    path(
        "api/agent/v1/webhooks/endpoints/<id:endpoint_id>/resend-failed",
        AgentWebhookResendFailedApi.as_view(),
        name="agent-webhook-endpoint-resend-failed",
    ),
    path(
        "api/agent/v1/webhooks/deliveries/<id:delivery_id>/attempts",
        AgentWebhookAttemptsApi.as_view(),
        name="agent-webhook-delivery-attempts",
    ),
    path(
        "api/agent/v1/webhooks/deliveries/<id:delivery_id>/resend",
        AgentWebhookDeliveryResendApi.as_view(),
        name="agent-webhook-delivery-resend",
    ),
    path("api/agent/v1/webhooks/events", AgentWebhookEventsApi.as_view(), name="agent-webhook-events"),
]
