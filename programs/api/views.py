from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api import ratelimit
from core.api.auth import DashboardSessionAuthentication
from core.api.base import BaseApi
from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError
from programs.models import Action, Program, ProgramKey
from programs.permissions import program_for_action
from programs.selectors import program_live_key_get, program_settings_data
from programs.services import program_key_regenerate, program_settings_update

from .base import ProgramMemberApi
from .schema import MEMBER_ERRORS, PROGRAM_ID
from .serializers import SETTINGS_OK, ProgramSettingsPatchSerializer


class ProgramKeyRegenerateApi(BaseApi):
    """Owner-only. The old key stops at once; the new one is in this response and nowhere else."""

    authentication_classes = [DashboardSessionAuthentication]
    sends_request_id = False

    @extend_schema_serializer(component_name="RegenerateKeyInput")
    class InputSerializer(serializers.Serializer[Any]):
        mode = serializers.ChoiceField(
            choices=ProgramKey.Mode.choices,
            default=ProgramKey.Mode.LIVE,
            error_messages={"invalid_choice": "mode must be live or test"},
        )

    @extend_schema(
        summary="Regenerate a program key (owners only); the new key is returned once",
        request=InputSerializer,
        responses={
            200: inline_serializer(
                "RegeneratedKey",
                fields={
                    "data": inline_serializer(
                        "RegeneratedKeyData",
                        fields={
                            "program_id": serializers.IntegerField(),
                            "mode": serializers.CharField(),
                            "api_key": serializers.CharField(),
                            "api_token_masked": serializers.CharField(),
                        },
                    )
                },
            ),
            400: OpenApiResponse(PLATFORM_ERROR, description="mode must be live or test"),
            401: OpenApiResponse(PLATFORM_ERROR, description="Not signed in"),
            403: OpenApiResponse(PLATFORM_ERROR, description="Not an owner of the program's workspace, or CSRF failed"),
            404: OpenApiResponse(PLATFORM_ERROR, description="Program not found"),
            500: OpenApiResponse(PLATFORM_ERROR, description="Server failure; the old key still works"),
        },
    )
    def post(self, request: Request, program_id: int) -> Response:
        program = program_for_action(user=request.user, program_id=program_id, action=Action.PROGRAM_REGENERATE_KEY)
        data = self.InputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        mode = data.validated_data["mode"]
        raw_key = program_key_regenerate(program=program, mode=mode)
        key = ProgramKey.objects.get(program=program, mode=mode)
        response = Response(
            {
                "data": {
                    "program_id": program.pk,
                    "mode": mode,
                    "api_key": raw_key,
                    "api_token_masked": key.masked,
                }
            }
        )
        response["Cache-Control"] = "no-store"
        return response


def _settings_body(program: Program) -> dict[str, Any]:
    live_key = program_live_key_get(program_id=program.pk)
    return {
        "data": {
            **program_settings_data(program, live_key=live_key),
            "cookie_duration": program.cookie_duration,
            "link_aliases": program.link_aliases,
        }
    }


class ProgramSettingsApi(ProgramMemberApi):
    """GET /api/v1/programs/:id/settings needs tracking:list, PATCH program:manage (dashboard sign-in).
    30 calls per minute per sign-in."""

    rate_scope = ratelimit.PROGRAM_SETTINGS
    failure_message = messages.SETTINGS_UPDATE_FAILED
    program_actions = {"GET": Action.TRACKING_LIST, "PATCH": Action.PROGRAM_MANAGE}

    @extend_schema(
        summary="A program's settings",
        parameters=[PROGRAM_ID],
        responses={200: SETTINGS_OK, **MEMBER_ERRORS},
    )
    def get(self, request: Request, program_id: str) -> Response:
        return Response(_settings_body(self.program))

    @extend_schema(
        summary="Change a program's settings (owners and admins); answers the updated settings",
        parameters=[PROGRAM_ID],
        request=ProgramSettingsPatchSerializer,
        responses={
            200: SETTINGS_OK,
            **MEMBER_ERRORS,
            400: OpenApiResponse(
                PLATFORM_ERROR, description="Empty patch, unknown field or bad value; the message names it"
            ),
        },
    )
    def patch(self, request: Request, program_id: str) -> Response:
        if not isinstance(request.data, dict):
            raise BadRequestError(messages.BODY_NOT_OBJECT)
        changes = ProgramSettingsPatchSerializer(data=request.data, context={"program": self.program}).changes()
        program = program_settings_update(program_id=self.program.pk, changes=changes)
        return Response(_settings_body(program))
