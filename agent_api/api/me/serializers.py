"""What GET /api/agent/v1/me answers (an output serializer, which both renders the body and describes it in the
OpenAPI document)."""

from typing import Any

from rest_framework import serializers

from core.api.fields import IsoDateTimeField
from programs.models import AGENT_SCOPES

from ..serializers import result_serializer


# An agent key (programs.models.AgentKey), never its secret.
class AgentKeyInfoDataSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    masked = serializers.CharField()
    workspace_id = serializers.IntegerField()
    program_ids = serializers.ListField(
        source="limited_program_ids",
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="null: every program of the workspace",
    )
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=AGENT_SCOPES))
    expires_at = IsoDateTimeField(allow_null=True)


AgentKeyInfoSerializer = result_serializer("AgentKeyInfo", AgentKeyInfoDataSerializer())
