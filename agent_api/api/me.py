"""GET /api/agent/v1/me: the key itself (workspace, programs, scopes, expiry), so an agent or the MCP server
knows what it may do before trying. Needs no scope."""

from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from programs.models import AGENT_SCOPES

from . import serializers as s
from .base import AgentApi

ME_OK = inline_serializer(
    "AgentKeyInfo",
    fields={
        "data": inline_serializer(
            "AgentKeyInfoData",
            fields={
                "name": serializers.CharField(),
                "masked": serializers.CharField(),
                "workspace_id": serializers.IntegerField(),
                "program_ids": serializers.ListField(
                    child=serializers.IntegerField(), allow_null=True, help_text="null: every program of the workspace"
                ),
                "scopes": serializers.ListField(child=serializers.ChoiceField(choices=AGENT_SCOPES)),
                "expires_at": serializers.DateTimeField(allow_null=True),
            },
        )
    },
)


class AgentKeyInfoGetApi(AgentApi):
    @extend_schema(
        summary="The key used: its workspace, programs, scopes and expiry", responses={200: ME_OK, **s.errors()}
    )
    def get(self, request):
        key = self.agent_key
        return Response(
            {
                "data": {
                    "name": key.name,
                    "masked": key.masked,
                    "workspace_id": key.workspace_id,
                    "program_ids": key.limited_program_ids,
                    "scopes": key.scopes,
                    "expires_at": key.expires_at.isoformat() if key.expires_at else None,
                }
            }
        )


urlpatterns = [path("api/agent/v1/me", AgentKeyInfoGetApi.as_view(), name="agent-me")]
