"""GET /api/agent/v1/events: the clicks, leads or sales of the programs a key may see, newest first by id, with
filters and cursor pagination. Live events only unless ?test=true. A page is one query whatever its depth."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from ...selectors import agent_events, agent_program_get
from .. import serializers as s
from ..base import AgentApi, query_of
from ..pagination import page_of
from .serializers import EVENT_PAGES, AgentEventListSerializer, EventsQuerySerializer


class AgentEventsListApi(AgentApi):
    required_scopes = {"GET": "events:read"}

    @extend_schema(
        summary="Clicks, leads or sales of the programs this key may see, newest first",
        parameters=[EventsQuerySerializer],
        responses={200: AgentEventListSerializer, **s.errors(400, 404)},
    )
    def get(self, request: Request) -> Response:
        query = query_of(EventsQuerySerializer, request)
        program = agent_program_get(self.agent_key, query["program_id"]) if "program_id" in query else None
        events = agent_events(
            self.agent_key,
            event_type=query["type"],
            program=program,
            is_test=query["is_test"],
            bounds=query["bounds"],
            partner_id=query.get("partner_id"),
        )
        page, next_cursor = page_of(events, query=query)
        return Response(EVENT_PAGES[query["type"]]({"data": page, "next_cursor": next_cursor}).data)


urlpatterns = [path("api/agent/v1/events", AgentEventsListApi.as_view(), name="agent-events")]
