"""The command-line helper API, /api/v1/cli/*. Every route: rate limit 60/min per Bearer credential (IP when none
is sent), request id at the end of a 500's message and in its details. Bodies: {"data": ...}; see docs/cli.md."""

from typing import Any, cast
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ratelimit
from core.api.base import BaseApi
from core.api.fields import LeanSerializer, StrictCharField, spec_messages
from core.api.parsers import body_object
from core.api.query import ID_MAX, QueryIdAfterField, QueryIntegerField, present
from core.errors import BadRequestError
from core.middleware import request_id_of
from core.urls import public_url
from insight.explain import explanation_get
from insight.readiness import readiness_compute
from programs.api.base import ProgramKeyApi
from programs.api.calllog import ApiCallLogResultSerializer, LogsQuerySerializer
from programs.api.serializers import CliInitInputSerializer
from programs.calllog import api_calls_list
from programs.models import Action
from tracking.api.queries import ExplainQuerySerializer
from tracking.api.schema import EXPLAIN_OK
from webhooks import messages as webhook_messages
from webhooks.listen import LISTEN_PAGE_MAX, webhook_event_cursor, webhook_events_after
from webhooks.models import EventType
from webhooks.services import WebhookRefused, event_trigger

from .. import messages
from .. import schema as docs
from ..auth import LoginTokenAuthentication
from ..models import CliToken
from ..selectors import account_programs_list
from ..services import (
    LOGIN_SESSION_LIFETIME,
    POLL_INTERVAL_SECONDS,
    TEST_RUNS_PER_HOUR,
    advertiser_resolve,
    cli_program_create,
    cli_program_resolve,
    cli_test_event_run,
    cli_token_revoke,
    login_session_complete,
    login_session_poll,
    login_session_start,
)
from .serializers import (
    CliAuthCallbackSerializer,
    CliAuthLogoutSerializer,
    CliAuthPollSerializer,
    CliAuthStartSerializer,
    CliInitSerializer,
    CliProgramsSerializer,
    CliStatusSerializer,
    CliTestEventSerializer,
    CliWebhookEventsPageSerializer,
    CliWebhookTriggerSerializer,
)


def _no_store(response: Response) -> Response:
    # These bodies carry secrets (state, login token, program keys): never cached by anything in between.
    response["Cache-Control"] = "no-store"
    return response


def _account(request: Request) -> User:
    """The login token's account: LoginTokenAuthentication sets a User on every route that requires one."""
    return cast(User, request.user)


class CliApi(BaseApi):
    rate_scope = ratelimit.CLI
    request_id_in_errors = True


class LoginTokenApi(CliApi):
    """Routes authenticated with a login token from `svc login` (`Authorization: Bearer svcl_…`)."""

    authentication_classes = [LoginTokenAuthentication]
    missing_token_message = messages.INIT_AUTH_REQUIRED
    invalid_token_message = messages.INIT_INVALID_TOKEN
    user_missing_message = messages.USER_NOT_FOUND
    # False: the token alone is enough (logout works for a deleted or suspended account).
    requires_account = True


class CliProgramKeyApi(ProgramKeyApi):
    rate_scope = ratelimit.CLI
    request_id_in_errors = True


class AuthStartApi(CliApi):
    failure_message = messages.AUTH_START_FAILED

    @extend_schema(
        summary="Start a CLI login (svc login)", request=None, responses={201: CliAuthStartSerializer, **docs.errors()}
    )
    def post(self, request: Request) -> Response:
        started = login_session_start()
        login_url = public_url(request, reverse("cli-login-confirm") + "?" + urlencode({"state": started.state}))
        data = {
            "state": started.state,
            "login_url": login_url,
            "user_code": started.user_code,
            "expires_at": started.session.expires_at,
            "expires_in": int(LOGIN_SESSION_LIFETIME.total_seconds()),
            "interval": POLL_INTERVAL_SECONDS,
        }
        return _no_store(Response(CliAuthStartSerializer({"data": data}).data, status=201))


class AuthCallbackApi(CliApi):
    failure_message = messages.CALLBACK_FAILED

    @extend_schema(
        summary="Complete a CLI login with an id_token",
        request=docs.CALLBACK_INPUT,
        responses={200: CliAuthCallbackSerializer, **docs.errors(400, 401, 403, 404)},
    )
    def post(self, request: Request) -> Response:
        body = body_object(request)
        login_session_complete(state=body.get("state"), id_token=body.get("id_token"))
        return Response(CliAuthCallbackSerializer({"data": {"status": "authenticated"}}).data)


class AuthPollApi(CliApi):
    failure_message = messages.POLL_FAILED

    @extend_schema(
        summary="Poll a CLI login; the login token comes once",
        parameters=[OpenApiParameter("state", str, OpenApiParameter.QUERY, required=True)],
        responses={200: CliAuthPollSerializer, **docs.errors(400, 404)},
    )
    def get(self, request: Request) -> Response:
        result = login_session_poll(state=request.query_params.get("state"))
        data: dict[str, Any] = {"status": result.status, "expires_at": result.session.expires_at}
        if result.token is None:
            data["interval"] = POLL_INTERVAL_SECONDS
            return Response(CliAuthPollSerializer({"data": data}).data)
        user = result.token.user
        assert user is not None  # a token just issued names its account
        data.update(
            {
                "token": result.raw_token,
                "token_type": "Bearer",
                "token_expires_at": result.token.expires_at,
                "user": {"id": user.pk, "username": user.get_username(), "email": user.email},
            }
        )
        return _no_store(Response(CliAuthPollSerializer({"data": data}).data))


class AuthLogoutApi(LoginTokenApi):
    failure_message = messages.LOGOUT_FAILED
    requires_account = False

    @extend_schema(
        summary="Revoke the login token used",
        request=None,
        responses={200: CliAuthLogoutSerializer, **docs.errors(401)},
    )
    def post(self, request: Request) -> Response:
        cli_token_revoke(token=cast(CliToken, request.auth))
        return Response(CliAuthLogoutSerializer({"data": {"revoked": True}}).data)


class ProgramInitApi(LoginTokenApi):
    failure_message = messages.INIT_FAILED

    @extend_schema(
        summary="Create a program (svc init); its keys are returned once",
        request=CliInitInputSerializer,
        responses={201: CliInitSerializer, **docs.errors(400, 401, 403)},
    )
    def post(self, request: Request) -> Response:
        body = body_object(request)
        # The spec's table order: the advertiser (403) before the settings (400).
        workspace = advertiser_resolve(user=_account(request), advertiser_id=body.get("advertiser_id"))
        serializer = CliInitInputSerializer(data=body)
        serializer.is_valid(raise_exception=True)
        created = cli_program_create(user=_account(request), workspace=workspace, settings=serializer.validated_data)
        data = {"program": created.program, "api_key": created.api_key, "test_api_key": created.test_api_key}
        return _no_store(Response(CliInitSerializer({"data": data}).data, status=201))


class ProgramsListApi(LoginTokenApi):
    failure_message = messages.PROGRAMS_FAILED
    missing_token_message = messages.PROGRAMS_MISSING_HEADER
    invalid_token_message = messages.PROGRAMS_INVALID_TOKEN

    @extend_schema(
        summary="The account's programs (keys masked)",
        responses={200: CliProgramsSerializer, **docs.errors(401, 403)},
    )
    def get(self, request: Request) -> Response:
        programs, roles = account_programs_list(_account(request))
        return Response(CliProgramsSerializer({"data": programs}, context={"roles": roles}).data)


class ProgramStatusApi(CliProgramKeyApi):
    failure_message = messages.STATUS_FAILED

    def should_send_request_id(self, response: Response) -> bool:
        # The spec: GET /api/v1/cli/status shows X-Request-ID on its 500 only (not on 200, 401 or 429).
        return response.status_code >= 500

    @extend_schema(summary="Program health (readiness)", responses={200: CliStatusSerializer, **docs.errors(401)})
    def get(self, request: Request) -> Response:
        key = self.required_program_key
        program = key.program
        readiness = readiness_compute(program=program, key=key, base_url=public_url(request, "/").rstrip("/"))
        data = {"program": program, "key": key, "readiness": readiness}
        return Response(CliStatusSerializer({"data": data}).data)


class CliTestEventApi(CliProgramKeyApi):
    failure_message = messages.TEST_EVENT_FAILED

    @extend_schema(
        summary="Run the synthetic click, lead, sale chain (10 per program per hour)",
        request=None,
        responses={200: CliTestEventSerializer, **docs.errors(401)},
    )
    def post(self, request: Request) -> Response:
        program = self.required_program_key.program
        outcome = cli_test_event_run(program=program, request_id=request_id_of(request._request))
        data = {
            **outcome.result,
            "limit": {"runs_per_hour": TEST_RUNS_PER_HOUR, "runs_remaining": outcome.runs_remaining},
        }
        return Response(CliTestEventSerializer({"data": data}).data)


class CliLogsApi(CliProgramKeyApi):
    """The request log of the key's program (the dashboard's GET /api/tracking/logs/:programId, same body). Its
    own answered reads are not logged: `svc logs --follow` polls every few seconds and would fill the log it reads
    (its refusals, 4xx and 5xx, are)."""

    failure_message = messages.LOGS_FAILED
    blank_query_means_absent = True
    log_answered = False

    @extend_schema(
        summary="The request log of the key's program, newest first (svc logs)",
        parameters=[LogsQuerySerializer],
        responses={200: ApiCallLogResultSerializer, **docs.errors(400, 401)},
    )
    def get(self, request: Request) -> Response:
        query = LogsQuerySerializer(data=present(request.query_params))
        query.is_valid(raise_exception=True)
        items, next_cursor = api_calls_list(program_id=self.required_program_key.program_id, **query.validated_data)
        return Response(ApiCallLogResultSerializer({"data": items, "meta": {"next_cursor": next_cursor}}).data)


class CliExplainApi(CliProgramKeyApi):
    """Attribution explained for the key's program (the dashboard's GET /api/tracking/explain/:programId)."""

    failure_message = messages.EXPLAIN_FAILED
    blank_query_means_absent = True

    @extend_schema(
        summary="Attribution explained for a sale or a customer of the key's program (svc explain)",
        parameters=[ExplainQuerySerializer],
        responses={200: EXPLAIN_OK, **docs.errors(400, 401, 404)},
    )
    def get(self, request: Request) -> Response:
        query = ExplainQuerySerializer(data=present(request.query_params))
        query.is_valid(raise_exception=True)
        return Response({"data": explanation_get(program=self.required_program_key.program, **query.validated_data)})


# --- svc listen / svc trigger: the program's webhook events (login token; docs/cli.md) ---------------------------


@extend_schema_field(OpenApiTypes.STR)
class WebhookEventTypesField(serializers.Field[frozenset[str], str, str, Any]):
    """A comma-separated list of event types (sale.created,lead.created): each must be a known type."""

    def to_internal_value(self, data: Any) -> frozenset[str]:
        wanted = [part.strip() for part in str(data).split(",") if part.strip()]
        for event_type in wanted:
            if event_type not in EventType.values:
                raise serializers.ValidationError(webhook_messages.EVENT_TYPE_UNKNOWN.format(type=event_type))
        return frozenset(wanted)

    def to_representation(self, value: Any) -> Any:
        return ",".join(sorted(value))


class WebhookEventsListApi(LoginTokenApi):
    """What `svc listen` polls. Answered at once, never held open: the web tier runs sync workers (webhooks.listen)."""

    failure_message = messages.WEBHOOK_EVENTS_FAILED
    # Polled about once a second: its own bucket (core.api.ratelimit.CLI_LISTEN).
    rate_scope = ratelimit.CLI_LISTEN
    blank_query_means_absent = True

    class InputSerializer(LeanSerializer):
        after = QueryIdAfterField(
            min_value=0,
            max_value=ID_MAX,
            invalid=messages.LISTEN_AFTER_INVALID,
            too_big=messages.LISTEN_AFTER_INVALID,
            required=False,
            help_text="The cursor of the last event seen. Omitted: no events, just the current cursor",
        )
        types = WebhookEventTypesField(required=False, help_text="Comma-separated event types (default: all)")
        limit = QueryIntegerField(
            min_value=1,
            max_value=LISTEN_PAGE_MAX,
            invalid=messages.LISTEN_LIMIT_INVALID,
            too_big=messages.LISTEN_LIMIT_INVALID,
            required=False,
            help_text=f"How many events to look at (1-{LISTEN_PAGE_MAX}, default {LISTEN_PAGE_MAX})",
        )

    @extend_schema(
        summary="The program's webhook events after a cursor, oldest first (svc listen)",
        parameters=[InputSerializer],
        responses={200: CliWebhookEventsPageSerializer, **docs.errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, program_id: str) -> Response:
        program = cli_program_resolve(user=_account(request), program_id=program_id, action=Action.TRACKING_LIST)
        serializer = self.InputSerializer(data=present(request.query_params))
        serializer.is_valid(raise_exception=True)
        query = serializer.validated_data
        if "after" not in query:
            # A listener starts from now: it is told where the stream is, and reads after that.
            cursor = webhook_event_cursor(program_id=program.pk)
            return Response(
                CliWebhookEventsPageSerializer({"data": [], "meta": {"cursor": cursor, "has_more": False}}).data
            )
        page = webhook_events_after(
            program_id=program.pk,
            after=query["after"],
            types=query.get("types") or None,
            limit=query.get("limit", LISTEN_PAGE_MAX),
        )
        meta = {"cursor": page.cursor, "has_more": page.has_more}
        return Response(CliWebhookEventsPageSerializer({"data": page.events, "meta": meta}).data)


class WebhookEventTriggerApi(LoginTokenApi):
    """`svc trigger`: a synthetic test-mode event with the example payload, sent like real ones."""

    failure_message = messages.WEBHOOK_TRIGGER_FAILED

    # Named for OpenAPI: a nested InputSerializer is component "Input", which the tracker's visit route also makes.
    @extend_schema_serializer(component_name="CliWebhookTriggerInput")
    class InputSerializer(LeanSerializer):
        type = StrictCharField(error_messages=spec_messages(messages.TRIGGER_TYPE_REQUIRED))

    @extend_schema(
        summary="Send a synthetic test-mode event of a type (svc trigger)",
        request=InputSerializer,
        responses={201: CliWebhookTriggerSerializer, **docs.errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, program_id: str) -> Response:
        program = cli_program_resolve(user=_account(request), program_id=program_id, action=Action.TRACKING_TEST)
        serializer = self.InputSerializer(data=body_object(request))
        serializer.is_valid(raise_exception=True)
        try:
            event = event_trigger(program_id=program.pk, event_type=serializer.validated_data["type"])
        except WebhookRefused as refused:
            raise BadRequestError(str(refused)) from None
        return Response(CliWebhookTriggerSerializer({"data": event}).data, status=201)
