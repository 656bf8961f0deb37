"""GET /api/agent/v1/events: the clicks, leads or sales of the programs a key may see, newest first by id, with
filters and cursor pagination. Live events only unless ?test=true. A page is one query whatever its depth."""

from typing import Any

from django.urls import path
from rest_framework import serializers

from ...selectors import agent_events
from ..base import AgentListApi, list_schema
from .serializers import EVENT_PAGES, AgentEventListSerializer, EventsQuerySerializer


@list_schema(summary="Clicks, leads or sales of the programs this key may see, newest first", error_statuses=(400, 404))
class AgentEventsListApi(AgentListApi):
    required_scopes = {"GET": "events:read"}
    query_serializer = EventsQuerySerializer
    selector = staticmethod(agent_events)
    output_serializer = AgentEventListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {
            "event_type": query["type"],
            "program": self.program_filter(query),
            "is_test": query["is_test"],
            "bounds": query["bounds"],
            "partner_id": query.get("partner_id"),
        }

    def page_serializer(self, query: dict[str, Any]) -> type[serializers.Serializer[Any]]:
        # AgentEventListSerializer describes the three; a page renders with its type's own.
        return EVENT_PAGES[query["type"]]


urlpatterns = [path("api/agent/v1/events", AgentEventsListApi.as_view(), name="agent-events")]
