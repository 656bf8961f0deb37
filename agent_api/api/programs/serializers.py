"""What the program routes answer (output serializers, which both render the bodies and describe them in the
OpenAPI document). A program's settings are rendered as the programs app gives them to every surface
(programs.selectors.program_settings_data, described by PROGRAM_SETTINGS_FIELDS)."""

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from core.api.fields import AnyField, IsoDateTimeField
from programs.api.serializers import PROGRAM_SETTINGS_FIELDS
from programs.selectors import program_settings_data
from tracking.api.schema import ReadinessVerdictSerializer

from ...selectors import ProgramWithLiveKey
from ..serializers import page_serializer, result_serializer


@dataclass(frozen=True)
class ProgramDetail:
    """A program with its live key and its readiness verdict (insight.readiness.readiness_compute)."""

    shown: ProgramWithLiveKey
    readiness: dict[str, Any]


# A program (agent_api.selectors.ProgramWithLiveKey): its settings, cookie duration and creation time.
class AgentProgramSerializer(serializers.Serializer[Any]):
    cookie_duration = serializers.IntegerField()
    created_at = IsoDateTimeField()

    def get_fields(self) -> dict[str, AnyField]:
        settings = {name: copy.deepcopy(field) for name, field in PROGRAM_SETTINGS_FIELDS.items()}
        return {**settings, **super().get_fields()}

    def values_of(self, instance: Any) -> Mapping[str, Any]:
        shown: ProgramWithLiveKey = instance
        program = shown.program
        return {
            **program_settings_data(program, live_key=shown.live_key),
            "cookie_duration": program.cookie_duration,
            "created_at": program.created_at,
        }

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return super().to_representation(self.values_of(instance))


# A program with its readiness verdict (ProgramDetail).
class AgentProgramDetailSerializer(AgentProgramSerializer):
    readiness = ReadinessVerdictSerializer()

    def values_of(self, instance: Any) -> Mapping[str, Any]:
        detail: ProgramDetail = instance
        return {**super().values_of(detail.shown), "readiness": detail.readiness}


AgentProgramListSerializer = page_serializer("AgentProgramList", AgentProgramSerializer)
AgentProgramResultSerializer = result_serializer("AgentProgramResult", AgentProgramDetailSerializer())
