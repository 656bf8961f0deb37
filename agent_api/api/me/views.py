"""GET /api/agent/v1/me: the key itself (workspace, programs, scopes, expiry), so an agent or the MCP server
knows what it may do before trying. Needs no scope."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from .. import serializers as s
from ..base import AgentApi
from .serializers import AgentKeyInfoSerializer


class AgentKeyInfoGetApi(AgentApi):
    @extend_schema(
        summary="The key used: its workspace, programs, scopes and expiry",
        responses={200: AgentKeyInfoSerializer, **s.errors()},
    )
    def get(self, request: Request) -> Response:
        return Response(AgentKeyInfoSerializer({"data": self.agent_key}).data)


urlpatterns = [path("api/agent/v1/me", AgentKeyInfoGetApi.as_view(), name="agent-me")]
