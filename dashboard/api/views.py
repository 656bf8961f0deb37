"""The dashboard API (/api/tracking/*; signed-in session only).

Dashboard routes take the program from the path, or from `program_id` in the body of the two POST routes
without one, and need an active membership whose role allows the route's action (programs.permissions).
A program key is never looked at on them. Success bodies are {"data": ..., "meta"?: ...}; errors use the
platform envelope; POST and PATCH need the CSRF token (SessionAuthentication enforces it)."""

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.query import present
from core.clientip import client_ip
from core.middleware import request_id_of
from core.urls import public_url
from insight.explain import explanation_get
from insight.readiness import readiness_compute
from programs.api.base import ProgramMemberApi
from programs.api.calllog import ApiCallLogResultSerializer, LogsQuerySerializer
from programs.api.schema import MEMBER_ERRORS, PROGRAM_ID
from programs.calllog import api_calls_list
from programs.models import Action
from programs.selectors import membership_get
from tracking.api.queries import DAY_RANGE, DayRangeQuerySerializer, EventsQuerySerializer, ExplainQuerySerializer
from tracking.api.schema import EXPLAIN_OK, TrackingPerformanceResultSerializer
from tracking.selectors.events import tracking_events_list
from tracking.selectors.performance import tracking_performance_get
from tracking.selectors.status import tracking_status_get, tracking_test_events_get
from tracking.services.verification import synthetic_event_send, verification_run

from . import serializers as s


def _validated(serializer: serializers.Serializer[Any]) -> dict[str, Any]:
    serializer.is_valid(raise_exception=True)
    validated: dict[str, Any] = serializer.validated_data
    return validated


def _base_url(request: Request) -> str:
    return public_url(request, "/").rstrip("/")


class TrackingStatusGetApi(ProgramMemberApi):
    program_actions = {"GET": Action.TRACKING_LIST}

    @extend_schema(
        summary="Program settings, key and Stripe state, the caller's role, latest live events",
        parameters=[PROGRAM_ID],
        responses={200: s.TrackingStatusResultSerializer, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        membership = membership_get(user=request.user, program=self.program)
        role = membership.role if membership else ""
        status = tracking_status_get(program=self.program, role=role, now=timezone.now())
        return Response(s.TrackingStatusResultSerializer({"data": status}).data)


class TrackingEventsListApi(ProgramMemberApi):
    program_actions = {"GET": Action.TRACKING_LIST}

    @extend_schema(
        summary="Live clicks, leads and conversions, newest first (each type capped at 3 × pageSize)",
        parameters=[PROGRAM_ID, EventsQuerySerializer],
        responses={200: s.TrackingEventsResultSerializer, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        query = _validated(EventsQuerySerializer(data=present(request.query_params)))
        items, pagination = tracking_events_list(
            program=self.program,
            event_type=query.get("eventType"),
            bounds=query["bounds"],
            page=query["page"],
            page_size=query["pageSize"],
        )
        return Response(s.TrackingEventsResultSerializer({"data": items, "meta": {"pagination": pagination}}).data)


class TrackingPerformanceGetApi(ProgramMemberApi):
    program_actions = {"GET": Action.TRACKING_LIST}

    @extend_schema(
        summary="Clicks, leads, sales, revenue and commission per UTC day and per partner",
        parameters=[PROGRAM_ID, *DAY_RANGE],
        responses={200: TrackingPerformanceResultSerializer, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        today = timezone.now().date()
        query = _validated(DayRangeQuerySerializer(data=present(request.query_params), context={"today": today}))
        report = tracking_performance_get(program=self.program, **query)
        return Response(TrackingPerformanceResultSerializer({"data": report}).data)


class TrackingReadinessGetApi(ProgramMemberApi):
    program_actions = {"GET": Action.TRACKING_LIST}

    @extend_schema(
        summary="The readiness verdict of the program (the same as the program-key route)",
        parameters=[PROGRAM_ID],
        responses={200: s.TrackingReadinessResultSerializer, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        verdict = readiness_compute(program=self.program, base_url=_base_url(request))
        return Response(s.TrackingReadinessResultSerializer({"data": verdict}).data)


class TrackingExplainGetApi(ProgramMemberApi):
    program_actions = {"GET": Action.TRACKING_LIST}

    @extend_schema(
        summary="Attribution explained: why a sale or a customer was credited as it was",
        description="Exactly one of `transaction_id` (a sale, or a sale refused after the attribution window, "
        "explained from its log row) or `click_id` / `customer_key` (a customer). A sale: the rule that matched "
        "in its lookup order (the sale endpoint's, or the five Stripe steps), the click and its age against "
        "the window, the partner, the commission policy and its arithmetic, each refund step and the "
        "commission's ledger entries with a running total. A customer: its clicks, leads, sales (each with its "
        "own explanation's selector) and whether a first sale now is within the window. The fraud rules that "
        "decided something are named (`rules`): a duplicate, bot or prefetch click, a paid_ads flag, and a sale's "
        "flagged or held commission (`review`: the hold, what the owner can do, the decisions taken). A bot's or "
        "a prefetch's click id has no customer: it is explained as the click alone (`kind: click`).",
        parameters=[PROGRAM_ID, ExplainQuerySerializer],
        responses={200: EXPLAIN_OK, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        query = _validated(ExplainQuerySerializer(data=present(request.query_params)))
        return Response({"data": explanation_get(program=self.program, **query)})


class TrackingLogsListApi(ProgramMemberApi):
    program_actions = {"GET": Action.TRACKING_LIST}

    @extend_schema(
        summary="The request log: the program's API calls, newest first, with filters and a cursor",
        description="Every call to the tracking API, the tracker routes, readiness and the CLI program-key routes: "
        "route, status, error code and message, request id, the key's mask and mode, latency and an allow-listed "
        "excerpt of the body. `meta.next_cursor` is the `cursor` of the next (older) page; `after` lists the "
        "rows newer than an id, oldest first.",
        parameters=[PROGRAM_ID, LogsQuerySerializer],
        responses={200: ApiCallLogResultSerializer, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        query = _validated(LogsQuerySerializer(data=present(request.query_params)))
        items, next_cursor = api_calls_list(program_id=self.program.pk, **query)
        return Response(ApiCallLogResultSerializer({"data": items, "meta": {"next_cursor": next_cursor}}).data)


class TrackingVerificationRunApi(ProgramMemberApi):
    program_actions = {"POST": Action.TRACKING_TEST}

    @extend_schema(
        summary="Run the synthetic test click → lead → sale chain; each step's outcome is in the result",
        parameters=[PROGRAM_ID],
        request=None,
        responses={200: s.VerificationResultSerializer, **MEMBER_ERRORS},
    )
    def post(self, request: Request, program_id: str) -> Response:
        run = verification_run(program=self.program, request_id=request_id_of(request._request))
        return Response(s.VerificationResultSerializer({"data": run}).data)


class TrackingTestEventSendApi(ProgramMemberApi):
    program_actions = {"POST": Action.TRACKING_TEST}
    program_id_from = "body"

    @extend_schema(
        summary="Send one test-mode click, lead or sale through the real tracking services",
        request=s.TestEventInputSerializer,
        responses={200: s.TestEventResultSerializer, **MEMBER_ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = _validated(s.TestEventInputSerializer(data=request.data))
        result = synthetic_event_send(
            program=self.program,
            event_type=data["event_type"],
            click_id=data.get("click_id", ""),
            customer_key=data.get("customer_key", ""),
            request_ip=client_ip(request._request),
            user_agent=request.META.get("HTTP_USER_AGENT", "")[:1024] or "svc-dashboard-test",
            request_id=request_id_of(request._request),
        )
        return Response(s.TestEventResultSerializer({"data": result}).data)


class TrackingTestEventsCheckApi(ProgramMemberApi):
    program_actions = {"POST": Action.TRACKING_TEST}
    program_id_from = "body"

    @extend_schema(
        summary="Which test events of each type arrived since a time (default: the last hour)",
        request=s.CheckTestEventsInputSerializer,
        responses={200: s.CheckTestEventsResultSerializer, **MEMBER_ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = _validated(s.CheckTestEventsInputSerializer(data=request.data))
        now = timezone.now()
        since = data["since"].value if data.get("since") else now - s.TEST_EVENTS_DEFAULT_WINDOW
        arrivals = tracking_test_events_get(program=self.program, since=since, now=now)
        return Response(s.CheckTestEventsResultSerializer({"data": arrivals}).data)
