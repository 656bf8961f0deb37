"""Agent routes for outbound webhooks (webhooks:read, webhooks:write): endpoints (list, create, get, change,
delete, rotate the secret), an endpoint's deliveries and a delivery's attempts, resending one delivery or the
failed ones of a period, and the webhook events of the programs the key may see.

The rules are webhooks.services'; a refusal there (WebhookRefused, a webhooks.messages constant) is a 400 here,
except resending to a disabled endpoint, a 409 (the endpoint's state, not the request, is what is wrong).
A secret is answered once, by the create or rotate that made it: no read shows it, the audit entry does not hold
it, and an Idempotency-Key replay answers it from the record where it is kept encrypted."""

from datetime import timedelta
from typing import Any

from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.api.fields import StrictBooleanField, StrictCharField
from core.api.query import Instant, InstantField, QueryIntegerField
from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError
from core.ids import MAX_BIGINT
from programs.models import AgentKey
from webhooks import messages as webhook_messages
from webhooks.models import DeliveryStatus, EventType, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.services import (
    WebhookRefused,
    deliveries_resend_failed,
    delivery_resend,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_update,
)
from webhooks.signing import secret_decrypt, secret_encrypt

from .. import messages
from ..selectors import (
    agent_program_get,
    agent_webhook_attempts,
    agent_webhook_deliveries,
    agent_webhook_delivery_get,
    agent_webhook_endpoint_get,
    agent_webhook_endpoints,
    agent_webhook_events,
    webhook_endpoint_deliveries,
)
from ..services import AgentWrite, ResponseSeal
from . import serializers as s
from .base import AgentApi, AgentWriteApi, query_of
from .pagination import PageQuerySerializer, page_of

READ, WRITE = "webhooks:read", "webhooks:write"
ENDPOINT_ID = OpenApiParameter("endpoint_id", int, OpenApiParameter.PATH, description="Webhook endpoint id")
DELIVERY_ID = OpenApiParameter("delivery_id", int, OpenApiParameter.PATH, description="Webhook delivery id")
EVENT_TYPES = ", ".join(EventType.values)
URL_LIMIT = 2000
DESCRIPTION_LIMIT = 200


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def endpoint_out(endpoint: WebhookEndpoint, *, now=None) -> dict[str, Any]:
    """The endpoint as every read shows it: never its secret, only the secret's last four characters. A previous
    secret is shown (by when it stops signing) only while it still signs."""
    previous_expires = endpoint.previous_secret_expires_at
    if previous_expires is not None and previous_expires <= (now or timezone.now()):
        previous_expires = None
    return {
        "id": endpoint.pk,
        "program_id": endpoint.program_id,
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": list(endpoint.event_types),
        "enabled": endpoint.enabled,
        "include_test_events": endpoint.include_test_events,
        "secret_last4": endpoint.secret_last4,
        "previous_secret_expires_at": _iso(previous_expires),
        "disabled_at": _iso(endpoint.disabled_at),
        "disabled_reason": endpoint.disabled_reason,
        "failing_since": _iso(endpoint.failing_since),
        "consecutive_failures": endpoint.consecutive_failures,
        "created_at": endpoint.created_at.isoformat(),
        "updated_at": endpoint.updated_at.isoformat(),
    }


def delivery_out(delivery: WebhookDelivery) -> dict[str, Any]:
    event = delivery.event
    return {
        "id": delivery.pk,
        "endpoint_id": delivery.endpoint_id,
        "event_id": event.public_id,
        "event_type": event.type,
        "livemode": event.livemode,
        "event_created_at": event.created_at.isoformat(),
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": _iso(delivery.next_attempt_at) if delivery.status == DeliveryStatus.PENDING else None,
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "delivered_at": _iso(delivery.delivered_at),
        "created_at": delivery.created_at.isoformat(),
        "updated_at": delivery.updated_at.isoformat(),
    }


def attempt_out(attempt: WebhookAttempt) -> dict[str, Any]:
    return {
        "id": attempt.pk,
        "number": attempt.number,
        "manual": attempt.manual,
        "started_at": attempt.started_at.isoformat(),
        "status_code": attempt.status_code,
        "latency_ms": attempt.latency_ms,
        "succeeded": attempt.succeeded,
        "response_excerpt": attempt.response_excerpt,
        "error": attempt.error,
    }


def event_out(event: WebhookEvent) -> dict[str, Any]:
    """The envelope as receivers get it, and whether `svc trigger` made it (an example, no real change)."""
    return {**event.payload(), "synthetic": event.synthetic}


# --- input ----------------------------------------------------------------------------------------------------------


def _event_type_choice(field: str, help_text: str) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=EventType.values,
        required=False,
        error_messages={
            "invalid_choice": messages.WEBHOOK_EVENT_TYPE_FILTER_INVALID.format(field=field, known=EVENT_TYPES)
        },
        help_text=help_text,
    )


def _flag(field: str, help_text: str) -> StrictBooleanField:
    message = messages.WEBHOOK_FLAG_INVALID.format(field=field)
    return StrictBooleanField(
        required=False, help_text=help_text, error_messages={key: message for key in ("invalid", "null")}
    )


class EndpointsQuerySerializer(PageQuerySerializer):
    program_id = QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PROGRAM_ID_FILTER_INVALID,
        too_big=messages.PROGRAM_ID_FILTER_INVALID,
        required=False,
        help_text="Only this program's endpoints (404 when the key may not see it); without it, every endpoint, "
        "workspace-wide ones (program_id null) included",
    )


class AgentWebhookEndpointFieldsSerializer(serializers.Serializer):
    """What an endpoint is made of; on create url and event_types are required, on update every field is optional
    and only those sent change."""

    url = StrictCharField(
        max_length=URL_LIMIT,
        trim_whitespace=False,
        help_text="Where events are POSTed: http(s), public address (private, loopback and link-local addresses "
        "are refused unless the service allows them)",
        error_messages={
            **{key: webhook_messages.URL_INVALID for key in ("invalid", "blank", "max_length")},
            **{key: messages.WEBHOOK_URL_REQUIRED for key in ("required", "null")},
        },
    )
    event_types = serializers.ListField(
        child=StrictCharField(
            error_messages={key: webhook_messages.EVENT_TYPES_REQUIRED for key in ("invalid", "blank", "null")}
        ),
        allow_empty=False,
        help_text=f'Event types to receive ({EVENT_TYPES}), or ["*"] for every type, including later ones',
        error_messages={
            key: webhook_messages.EVENT_TYPES_REQUIRED for key in ("required", "null", "not_a_list", "empty")
        },
    )
    description = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=DESCRIPTION_LIMIT,
        trim_whitespace=False,
        help_text="A note for its owner (at most 200 characters)",
        error_messages={key: messages.WEBHOOK_DESCRIPTION_INVALID for key in ("invalid", "null", "max_length")},
    )
    enabled = _flag("enabled", "false: nothing is sent to it (default true)")
    include_test_events = _flag(
        "include_test_events", "true: test-mode events (livemode false) are sent to it too (default false)"
    )


class AgentWebhookEndpointCreateSerializer(AgentWebhookEndpointFieldsSerializer):
    program_id = serializers.IntegerField(
        required=False,
        help_text="The program whose events it receives; without it, every program of the workspace (a key "
        "limited to programs must send it)",
        error_messages={key: messages.PROGRAM_ID_INVALID for key in ("invalid", "null", "max_string_length")},
    )


class AgentWebhookEndpointUpdateSerializer(AgentWebhookEndpointFieldsSerializer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class DeliveriesQuerySerializer(PageQuerySerializer):
    status = serializers.ChoiceField(
        choices=DeliveryStatus.values,
        required=False,
        error_messages={"invalid_choice": messages.WEBHOOK_DELIVERY_STATUS_INVALID},
        help_text="pending (an attempt is scheduled), succeeded, or failed (retries exhausted or endpoint disabled)",
    )
    event_type = _event_type_choice("event_type", "Only deliveries of events of this type")


class EventsQuerySerializer(PageQuerySerializer):
    program_id = QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PROGRAM_ID_FILTER_INVALID,
        too_big=messages.PROGRAM_ID_FILTER_INVALID,
        required=False,
        help_text="Only this program's events (404 when the key may not see it)",
    )
    type = _event_type_choice("type", "Only events of this type")


class AgentWebhookResendPeriodSerializer(serializers.Serializer):
    since = InstantField(
        message=messages.WEBHOOK_SINCE_INVALID,
        help_text="Events at or after this time (a date: from the start of that UTC day)",
        error_messages={"required": messages.WEBHOOK_SINCE_INVALID, "null": messages.WEBHOOK_SINCE_INVALID},
    )
    until = InstantField(
        message=messages.WEBHOOK_UNTIL_INVALID,
        help_text="Events before this time (a date: up to the end of that UTC day)",
        error_messages={"required": messages.WEBHOOK_UNTIL_INVALID, "null": messages.WEBHOOK_UNTIL_INVALID},
    )


def _body(serializer_class: type[serializers.Serializer], request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise BadRequestError(messages.BODY_NOT_OBJECT, code=messages.CODE_BAD_REQUEST)
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _refused(refusal: WebhookRefused) -> BadRequestError | ConflictError:
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


# --- response shapes (OpenAPI) --------------------------------------------------------------------------------------

_ENDPOINT_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "program_id": serializers.IntegerField(allow_null=True, help_text="null: every program of the workspace"),
    "url": serializers.CharField(),
    "description": serializers.CharField(),
    "event_types": serializers.ListField(child=serializers.CharField(), help_text='["*"]: every type'),
    "enabled": serializers.BooleanField(),
    "include_test_events": serializers.BooleanField(),
    "secret_last4": serializers.CharField(help_text="The last four characters of the secret (never the secret)"),
    "previous_secret_expires_at": serializers.DateTimeField(
        allow_null=True, help_text="After a rotation: until when the previous secret also signs; null otherwise"
    ),
    "disabled_at": serializers.DateTimeField(allow_null=True),
    "disabled_reason": serializers.CharField(
        help_text="Empty when disabled by its owner; otherwise why the service disabled it (a 410, failing too long)"
    ),
    "failing_since": serializers.DateTimeField(allow_null=True, help_text="Since when every attempt has failed"),
    "consecutive_failures": serializers.IntegerField(),
    "created_at": serializers.DateTimeField(),
    "updated_at": serializers.DateTimeField(),
}
ENDPOINT = inline_serializer("AgentWebhookEndpoint", fields=_ENDPOINT_FIELDS)
ENDPOINT_OK = inline_serializer("AgentWebhookEndpointResult", fields={"data": ENDPOINT})
ENDPOINTS_OK = inline_serializer(
    "AgentWebhookEndpointList", fields={"data": serializers.ListField(child=ENDPOINT), "next_cursor": s.NEXT_CURSOR}
)
SECRET = serializers.CharField(
    help_text="The signing secret (whsec_…), answered this once: store it now, no read shows it again"
)
ENDPOINT_SECRET_OK = inline_serializer(
    "AgentWebhookEndpointWithSecretResult",
    fields={"data": inline_serializer("AgentWebhookEndpointWithSecret", fields={**_ENDPOINT_FIELDS, "secret": SECRET})},
)
DELETED_OK = inline_serializer(
    "AgentWebhookEndpointDeleted",
    fields={
        "data": inline_serializer(
            "AgentWebhookEndpointDeletion",
            fields={"id": serializers.IntegerField(), "deleted": serializers.BooleanField()},
        )
    },
)
DELIVERY = inline_serializer(
    "AgentWebhookDelivery",
    fields={
        "id": serializers.IntegerField(),
        "endpoint_id": serializers.IntegerField(),
        "event_id": serializers.CharField(help_text="The event's id (evt_…), also the webhook-id header"),
        "event_type": serializers.CharField(),
        "livemode": serializers.BooleanField(),
        "event_created_at": serializers.DateTimeField(),
        "status": serializers.ChoiceField(choices=DeliveryStatus.values),
        "attempts": serializers.IntegerField(help_text="HTTP requests made so far"),
        "next_attempt_at": serializers.DateTimeField(allow_null=True, help_text="When pending: the next attempt"),
        "last_status_code": serializers.IntegerField(allow_null=True),
        "last_error": serializers.CharField(),
        "delivered_at": serializers.DateTimeField(allow_null=True),
        "created_at": serializers.DateTimeField(),
        "updated_at": serializers.DateTimeField(),
    },
)
DELIVERIES_OK = inline_serializer(
    "AgentWebhookDeliveryList", fields={"data": serializers.ListField(child=DELIVERY), "next_cursor": s.NEXT_CURSOR}
)
ATTEMPT = inline_serializer(
    "AgentWebhookAttempt",
    fields={
        "id": serializers.IntegerField(),
        "number": serializers.IntegerField(help_text="1 for the first request of the delivery, then 2, ..."),
        "manual": serializers.BooleanField(help_text="Sent because its owner resent the delivery"),
        "started_at": serializers.DateTimeField(),
        "status_code": serializers.IntegerField(allow_null=True, help_text="null: no HTTP answer (see error)"),
        "latency_ms": serializers.IntegerField(),
        "succeeded": serializers.BooleanField(),
        "response_excerpt": serializers.CharField(help_text="The start of the receiver's answer"),
        "error": serializers.CharField(),
    },
)
ATTEMPTS_OK = inline_serializer(
    "AgentWebhookAttemptList", fields={"data": serializers.ListField(child=ATTEMPT), "next_cursor": s.NEXT_CURSOR}
)
RESEND_OK = inline_serializer(
    "AgentWebhookResendResult",
    fields={
        "data": inline_serializer(
            "AgentWebhookResend",
            fields={
                "delivery": DELIVERY,
                "queued": serializers.BooleanField(
                    help_text="false: it was pending already (its next attempt is scheduled), nothing changed"
                ),
            },
        )
    },
)
RESEND_FAILED_OK = inline_serializer(
    "AgentWebhookResendFailedResult",
    fields={
        "data": inline_serializer(
            "AgentWebhookResendFailed",
            fields={
                "endpoint_id": serializers.IntegerField(),
                "since": serializers.DateTimeField(),
                "until": serializers.DateTimeField(help_text="Exclusive"),
                "queued": serializers.IntegerField(help_text="Failed deliveries sent again"),
            },
        )
    },
)
EVENT = inline_serializer(
    "AgentWebhookEvent",
    fields={
        "id": serializers.CharField(help_text="evt_…, the webhook-id receivers dedupe on"),
        "type": serializers.CharField(),
        "created_at": serializers.DateTimeField(),
        "program_id": serializers.IntegerField(),
        "livemode": serializers.BooleanField(),
        "data": serializers.DictField(help_text="The payload of the type (docs/webhooks.md)"),
        "synthetic": serializers.BooleanField(help_text="Made by `svc trigger`: an example, no real change behind it"),
    },
)
EVENTS_OK = inline_serializer(
    "AgentWebhookEventList", fields={"data": serializers.ListField(child=EVENT), "next_cursor": s.NEXT_CURSOR}
)
DISABLED_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="webhook_endpoint_disabled: enable the endpoint before resending; idempotency_conflict: the "
    "Idempotency-Key was used with another body",
)


# --- routes ---------------------------------------------------------------------------------------------------------


class AgentWebhookEndpointsApi(AgentWriteApi):
    required_scopes = {"GET": READ, "POST": WRITE}

    @extend_schema(
        operation_id="agent_webhook_endpoints_list",
        summary="Webhook endpoints the key may see, newest first (never their secrets)",
        parameters=[EndpointsQuerySerializer],
        responses={200: ENDPOINTS_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        key = self.agent_key
        query = query_of(EndpointsQuerySerializer, request)
        endpoints = agent_webhook_endpoints(key)
        if "program_id" in query:
            endpoints = endpoints.filter(program=agent_program_get(key, query["program_id"]))
        page, next_cursor = page_of(endpoints, query=query)
        now = timezone.now()
        return Response({"data": [endpoint_out(endpoint, now=now) for endpoint in page], "next_cursor": next_cursor})

    @extend_schema(
        summary="Create a webhook endpoint for a program (program_id) or every program of the workspace",
        description="The answer holds the signing secret (`secret`, whsec_…) this once; no read shows it again. "
        "A retry with the same Idempotency-Key answers the same endpoint and secret.",
        request=AgentWebhookEndpointCreateSerializer,
        responses={201: ENDPOINT_SECRET_OK, **s.errors(400, 404, 409)},
    )
    def post(self, request):
        key = self.agent_key
        body = _body(AgentWebhookEndpointCreateSerializer, request)
        program_id = _program_scope(key, body.pop("program_id", None))
        workspace_id = key.workspace_id
        assert workspace_id is not None  # agent_api.auth refuses a key without a workspace

        def perform() -> AgentWrite:
            try:
                made = endpoint_create(workspace_id=workspace_id, program_id=program_id, **body)
            except WebhookRefused as refusal:
                raise _refused(refusal) from None
            after = endpoint_out(made.endpoint)
            data = {**after, "secret": made.secret}
            return AgentWrite(
                201, {"data": data}, "webhook_endpoint.create", "webhook_endpoint", made.endpoint.pk, None, after
            )

        return self.write(request, perform, seal=SECRET_SEAL)


class AgentWebhookEndpointApi(AgentWriteApi):
    required_scopes = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(
        summary="One webhook endpoint (never its secret)",
        parameters=[ENDPOINT_ID],
        responses={200: ENDPOINT_OK, **s.errors(404)},
    )
    def get(self, request, endpoint_id: str):
        return Response({"data": endpoint_out(agent_webhook_endpoint_get(self.agent_key, endpoint_id))})

    @extend_schema(
        summary="Change a webhook endpoint's url, event_types, enabled, include_test_events or description",
        description="Only the fields sent change. Enabling a disabled endpoint clears why it was disabled and its "
        "failure streak; its failed deliveries are not resent (POST …/resend-failed does that).",
        parameters=[ENDPOINT_ID],
        request=AgentWebhookEndpointUpdateSerializer,
        responses={200: ENDPOINT_OK, **s.errors(400, 404, 409)},
    )
    def patch(self, request, endpoint_id: str):
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)
        changes = _body(AgentWebhookEndpointUpdateSerializer, request)
        if not changes:
            raise BadRequestError(messages.WEBHOOK_PATCH_EMPTY, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            before = endpoint_out(endpoint)
            try:
                updated = endpoint_update(endpoint_id=endpoint.pk, changes=changes)
            except WebhookRefused as refusal:
                raise _refused(refusal) from None
            after = endpoint_out(updated)
            return AgentWrite(
                200, {"data": after}, "webhook_endpoint.update", "webhook_endpoint", endpoint.pk, before, after
            )

        return self.write(request, perform)

    @extend_schema(
        summary="Delete a webhook endpoint with its deliveries and their attempts",
        parameters=[ENDPOINT_ID],
        request=None,
        responses={200: DELETED_OK, **s.errors(404, 409)},
    )
    def delete(self, request, endpoint_id: str):
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)

        def perform() -> AgentWrite:
            before = endpoint_out(endpoint)
            endpoint_delete(endpoint_id=endpoint.pk)
            data = {"id": endpoint.pk, "deleted": True}
            return AgentWrite(
                200, {"data": data}, "webhook_endpoint.delete", "webhook_endpoint", endpoint.pk, before, None
            )

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
        responses={200: ENDPOINT_SECRET_OK, **s.errors(400, 404, 409)},
    )
    def post(self, request, endpoint_id: str):
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)

        def perform() -> AgentWrite:
            before = endpoint_out(endpoint)
            rotated = endpoint_rotate_secret(endpoint_id=endpoint.pk)
            after = endpoint_out(rotated.endpoint)
            data = {**after, "secret": rotated.secret}
            return AgentWrite(
                200, {"data": data}, "webhook_endpoint.rotate_secret", "webhook_endpoint", endpoint.pk, before, after
            )

        return self.write(request, perform, seal=SECRET_SEAL)


class AgentWebhookDeliveriesApi(AgentApi):
    required_scopes = {"GET": READ}

    @extend_schema(
        summary="An endpoint's deliveries (one per event sent to it), newest first",
        parameters=[ENDPOINT_ID, DeliveriesQuerySerializer],
        responses={200: DELIVERIES_OK, **s.errors(400, 404)},
    )
    def get(self, request, endpoint_id: str):
        key = self.agent_key
        endpoint = agent_webhook_endpoint_get(key, endpoint_id)
        query = query_of(DeliveriesQuerySerializer, request)
        deliveries = webhook_endpoint_deliveries(endpoint)
        if "status" in query:
            deliveries = deliveries.filter(status=query["status"])
        if "event_type" in query:
            deliveries = deliveries.filter(event__type=query["event_type"])
        page, next_cursor = page_of(deliveries, query=query)
        return Response({"data": [delivery_out(delivery) for delivery in page], "next_cursor": next_cursor})


class AgentWebhookAttemptsApi(AgentApi):
    required_scopes = {"GET": READ}

    @extend_schema(
        summary="A delivery's attempts (HTTP requests), newest first: status, latency, the start of the answer",
        parameters=[DELIVERY_ID, PageQuerySerializer],
        responses={200: ATTEMPTS_OK, **s.errors(400, 404)},
    )
    def get(self, request, delivery_id: str):
        delivery = agent_webhook_delivery_get(self.agent_key, delivery_id)
        query = query_of(PageQuerySerializer, request)
        page, next_cursor = page_of(agent_webhook_attempts(delivery), query=query)
        return Response({"data": [attempt_out(attempt) for attempt in page], "next_cursor": next_cursor})


class AgentWebhookDeliveryResendApi(AgentWriteApi):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        summary="Send a delivery again now, with the same event id and a fresh retry schedule",
        description="A delivery that is pending already is left as it is (`queued`: false). Refused (409 "
        "webhook_endpoint_disabled) while its endpoint is disabled.",
        parameters=[DELIVERY_ID],
        request=None,
        responses={200: RESEND_OK, **s.errors(400, 404), 409: DISABLED_CONFLICT},
    )
    def post(self, request, delivery_id: str):
        key = self.agent_key
        delivery = agent_webhook_delivery_get(key, delivery_id)

        def perform() -> AgentWrite:
            before = delivery_out(delivery)
            try:
                queued = delivery_resend(delivery_id=delivery.pk)
            except WebhookRefused as refusal:
                raise _refused(refusal) from None
            after = delivery_out(agent_webhook_deliveries(key).get(pk=delivery.pk))
            data = {"delivery": after, "queued": queued}
            return AgentWrite(
                200, {"data": data}, "webhook_delivery.resend", "webhook_delivery", delivery.pk, before, after
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
        responses={200: RESEND_FAILED_OK, **s.errors(400, 404), 409: DISABLED_CONFLICT},
    )
    def post(self, request, endpoint_id: str):
        endpoint = agent_webhook_endpoint_get(self.agent_key, endpoint_id)
        body = _body(AgentWebhookResendPeriodSerializer, request)
        since: Instant = body["since"]
        until: Instant = body["until"]
        end = until.value + timedelta(days=1) if until.is_date else until.value

        def perform() -> AgentWrite:
            try:
                queued = deliveries_resend_failed(endpoint_id=endpoint.pk, since=since.value, until=end)
            except WebhookRefused as refusal:
                raise _refused(refusal) from None
            data = {
                "endpoint_id": endpoint.pk,
                "since": since.value.isoformat(),
                "until": end.isoformat(),
                "queued": queued,
            }
            return AgentWrite(
                200, {"data": data}, "webhook_endpoint.resend_failed", "webhook_endpoint", endpoint.pk, None, data
            )

        return self.write(request, perform)


class AgentWebhookEventsApi(AgentApi):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="agent_webhook_events_list",
        summary="Webhook events of the programs the key may see, newest first, as receivers get them",
        description="Every event the service announced, whether or not an endpoint wanted it (also those of "
        "`svc trigger`, marked synthetic). Kept WEBHOOK_EVENT_RETENTION_DAYS.",
        parameters=[EventsQuerySerializer],
        responses={200: EVENTS_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        key = self.agent_key
        query = query_of(EventsQuerySerializer, request)
        events = agent_webhook_events(key)
        if "program_id" in query:
            events = events.filter(program=agent_program_get(key, query["program_id"]))
        if "type" in query:
            events = events.filter(type=query["type"])
        page, next_cursor = page_of(events, query=query)
        return Response({"data": [event_out(event) for event in page], "next_cursor": next_cursor})


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
