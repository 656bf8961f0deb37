"""Agent routes for programs: /api/agent/v1/programs[/:id]."""

from typing import Any

from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.query import present
from core.urls import public_url
from insight.readiness import readiness_compute
from programs.selectors import program_live_key_get
from tracking.api.queries import DAY_RANGE, DayRangeQuerySerializer
from tracking.api.schema import TrackingPerformanceResultSerializer
from tracking.selectors.performance import tracking_performance_get

from ...selectors import ProgramWithLiveKey, agent_program_get, agent_programs_with_live_key, programs_with_live_key
from .. import serializers as s
from ..base import AgentApi, AgentListApi, list_schema
from .serializers import AgentProgramListSerializer, AgentProgramResultSerializer, ProgramDetail

PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")


@list_schema(
    operation_id="agent_programs_list", summary="The programs this key may see, newest first", error_statuses=(400,)
)
class AgentProgramsListApi(AgentListApi):
    required_scopes = {"GET": "programs:read"}
    selector = staticmethod(agent_programs_with_live_key)
    output_serializer = AgentProgramListSerializer

    def page_data(self, page: list[Any]) -> Any:
        return programs_with_live_key(page)


class AgentProgramGetApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        summary="One program: its settings and its readiness verdict",
        parameters=[PROGRAM_ID],
        responses={200: AgentProgramResultSerializer, **s.errors(404)},
    )
    def get(self, request: Request, program_id: str) -> Response:
        program = agent_program_get(self.agent_key, program_id)
        readiness = readiness_compute(program=program, base_url=public_url(request, "/").rstrip("/"))
        shown = ProgramWithLiveKey(program, program_live_key_get(program_id=program.pk))
        return Response(AgentProgramResultSerializer({"data": ProgramDetail(shown, readiness)}).data)


class AgentProgramPerformanceGetApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        summary="Clicks, leads, sales, revenue and commission per UTC day and per partner (as the dashboard shows)",
        parameters=[PROGRAM_ID, *DAY_RANGE],
        responses={200: TrackingPerformanceResultSerializer, **s.errors(400, 404)},
    )
    def get(self, request: Request, program_id: str) -> Response:
        program = agent_program_get(self.agent_key, program_id)
        days = DayRangeQuerySerializer(data=present(request.query_params), context={"today": timezone.now().date()})
        days.is_valid(raise_exception=True)
        report = tracking_performance_get(program=program, **days.validated_data)
        return Response(TrackingPerformanceResultSerializer({"data": report}).data)


urlpatterns = [
    path("api/agent/v1/programs", AgentProgramsListApi.as_view(), name="agent-programs"),
    path("api/agent/v1/programs/<id:program_id>", AgentProgramGetApi.as_view(), name="agent-program"),
    path(
        "api/agent/v1/programs/<id:program_id>/performance",
        AgentProgramPerformanceGetApi.as_view(),
        name="agent-program-performance",
    ),
]
