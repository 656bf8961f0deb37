"""Agent routes for programs: /api/agent/v1/programs[/:id]."""

from typing import Any

from django.db.models import Prefetch
from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from core.api.query import present
from core.urls import public_url
from programs.models import Program, ProgramKey
from programs.selectors import program_live_key_get, program_settings_data
from tracking.api.queries import DAY_RANGE, DayRangeQuerySerializer
from tracking.api.schema import PERFORMANCE_OK
from tracking.insight.readiness import readiness_compute
from tracking.selectors.performance import tracking_performance_get

from ..selectors import agent_program_get, agent_programs
from . import serializers as s
from .base import AgentApi, query_of
from .pagination import PageQuerySerializer, page_of

PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")


def program_out(program: Program, live_key: ProgramKey | None) -> dict[str, Any]:
    return {
        **program_settings_data(program, live_key=live_key),
        "cookie_duration": program.cookie_duration,
        "created_at": program.created_at.isoformat(),
    }


class AgentProgramsListApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        operation_id="agent_programs_list",
        summary="The programs this key may see, newest first",
        parameters=[PageQuerySerializer],
        responses={200: s.PROGRAMS_OK, **s.errors(400)},
    )
    def get(self, request):
        query = query_of(PageQuerySerializer, request)
        # program.keys holds only the live key (at most one) on these rows.
        live_keys = Prefetch("keys", queryset=ProgramKey.objects.filter(mode=ProgramKey.Mode.LIVE))
        programs, next_cursor = page_of(agent_programs(self.agent_key).prefetch_related(live_keys), query=query)
        data = [program_out(program, next(iter(program.keys.all()), None)) for program in programs]
        return Response({"data": data, "next_cursor": next_cursor})


class AgentProgramGetApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        summary="One program: its settings and its readiness verdict",
        parameters=[PROGRAM_ID],
        responses={200: s.PROGRAM_OK, **s.errors(404)},
    )
    def get(self, request, program_id: str):
        program = agent_program_get(self.agent_key, program_id)
        readiness = readiness_compute(program=program, base_url=public_url(request, "/").rstrip("/"))
        live_key = program_live_key_get(program_id=program.pk)
        return Response({"data": {**program_out(program, live_key), "readiness": readiness}})


class AgentProgramPerformanceGetApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        summary="Clicks, leads, sales, revenue and commission per UTC day and per partner (as the dashboard shows)",
        parameters=[PROGRAM_ID, *DAY_RANGE],
        responses={200: PERFORMANCE_OK, **s.errors(400, 404)},
    )
    def get(self, request, program_id: str):
        program = agent_program_get(self.agent_key, program_id)
        days = DayRangeQuerySerializer(data=present(request.query_params), context={"today": timezone.now().date()})
        days.is_valid(raise_exception=True)
        return Response({"data": tracking_performance_get(program=program, **days.validated_data)})


urlpatterns = [
    path("api/agent/v1/programs", AgentProgramsListApi.as_view(), name="agent-programs"),
    path("api/agent/v1/programs/<id:program_id>", AgentProgramGetApi.as_view(), name="agent-program"),
    path(
        "api/agent/v1/programs/<id:program_id>/performance",
        AgentProgramPerformanceGetApi.as_view(),
        name="agent-program-performance",
    ),
]
