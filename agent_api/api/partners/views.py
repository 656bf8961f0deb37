"""Agent routes for partners: list, create, update, enroll in a program.

A key sees the partners of its workspace; a key limited to programs sees those enrolled in one of them."""

from typing import Any

from django.db import transaction
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.errors import BadRequestError
from programs.models import Partner
from programs.services import partner_create, partner_enroll, partner_update

from ... import messages
from ...selectors import agent_partner_get, agent_partner_program_ids, agent_partners_list, agent_program_get
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    AgentEnrollmentResultSerializer,
    AgentEnrollmentSerializer,
    AgentPartnerListSerializer,
    AgentPartnerResultSerializer,
    AgentPartnerSerializer,
    EnrollmentSerializer,
    PartnerCreateSerializer,
    PartnersQuerySerializer,
    PartnerUpdateSerializer,
)

PARTNER_ID = OpenApiParameter("partner_id", int, OpenApiParameter.PATH, description="Partner id")


def _partner_data(partner: Partner, program_ids: list[int]) -> dict[str, Any]:
    return AgentPartnerSerializer(partner, context={"program_ids": {partner.pk: program_ids}}).data


@list_schema(
    operation_id="agent_partners_list", summary="Partners the key may see, newest first", error_statuses=(400, 404)
)
class AgentPartnersApi(AgentListApi, AgentWriteApi):
    required_scopes = {"GET": "partners:read", "POST": "partners:write"}
    query_serializer = PartnersQuerySerializer
    selector = staticmethod(agent_partners_list)
    output_serializer = AgentPartnerListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"program": self.program_filter(query)}

    @extend_schema(
        summary="Create a partner (optionally enrolled in a program at once)",
        request=PartnerCreateSerializer,
        responses={201: AgentPartnerResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request) -> Response:
        key = self.agent_key
        body = body_of(PartnerCreateSerializer, request, object_required=False)
        program = agent_program_get(key, body["program_id"]) if "program_id" in body else None
        if program is None and key.limited_program_ids is not None:
            raise BadRequestError(messages.LIMITED_KEY_NEEDS_PROGRAM, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            assert key.workspace is not None
            partner = partner_create(workspace=key.workspace, name=body["name"], email=body.get("email", ""))
            if program is not None:
                partner_enroll(partner=partner, program=program)
            after = _partner_data(partner, [program.pk] if program else [])
            return AgentWrite(201, {"data": after}, "partner.create", "partner", partner.pk, None, after)

        return self.write(request, perform)


class AgentPartnerApi(AgentWriteApi):
    required_scopes = {"GET": "partners:read", "PATCH": "partners:write"}

    @extend_schema(
        summary="One partner, with the programs it is enrolled in",
        parameters=[PARTNER_ID],
        responses={200: AgentPartnerResultSerializer, **s.errors(404)},
    )
    def get(self, request: Request, partner_id: str) -> Response:
        key = self.agent_key
        partner = agent_partner_get(key, partner_id)
        program_ids = {partner.pk: agent_partner_program_ids(key, partner)}
        return Response(AgentPartnerResultSerializer({"data": partner}, context={"program_ids": program_ids}).data)

    @extend_schema(
        summary="Change a partner's name or email",
        parameters=[PARTNER_ID],
        request=PartnerUpdateSerializer,
        responses={200: AgentPartnerResultSerializer, **s.errors(400, 404, 409)},
    )
    def patch(self, request: Request, partner_id: str) -> Response:
        key = self.agent_key
        partner = agent_partner_get(key, partner_id)
        body = body_of(PartnerUpdateSerializer, request, object_required=False)
        if not body:
            raise BadRequestError(messages.PARTNER_PATCH_EMPTY, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            program_ids = agent_partner_program_ids(key, partner)
            before = _partner_data(partner, program_ids)
            updated = partner_update(partner_id=partner.pk, name=body.get("name"), email=body.get("email"))
            after = _partner_data(updated, program_ids)
            return AgentWrite(200, {"data": after}, "partner.update", "partner", partner.pk, before, after)

        return self.write(request, perform)


class AgentPartnerEnrollApi(AgentWriteApi):
    required_scopes = {"POST": "partners:write"}

    @extend_schema(
        summary="Enroll a partner in a program (200 when it already was)",
        parameters=[PARTNER_ID],
        request=EnrollmentSerializer,
        responses={
            200: AgentEnrollmentResultSerializer,
            201: AgentEnrollmentResultSerializer,
            **s.errors(400, 404, 409),
        },
    )
    def post(self, request: Request, partner_id: str) -> Response:
        key = self.agent_key
        partner = agent_partner_get(key, partner_id)
        program = agent_program_get(key, body_of(EnrollmentSerializer, request, object_required=False)["program_id"])

        def perform() -> AgentWrite:
            before = _partner_data(partner, agent_partner_program_ids(key, partner))
            with transaction.atomic():
                _, created = partner_enroll(partner=partner, program=program)
            after = _partner_data(partner, agent_partner_program_ids(key, partner))
            enrollment = {"partner_id": partner.pk, "program_id": program.pk, "created": created}
            data = AgentEnrollmentSerializer(enrollment).data
            return AgentWrite(
                201 if created else 200, {"data": data}, "partner.enroll", "partner", partner.pk, before, after
            )

        return self.write(request, perform)


urlpatterns = [
    path("api/agent/v1/partners", AgentPartnersApi.as_view(), name="agent-partners"),
    path("api/agent/v1/partners/<id:partner_id>", AgentPartnerApi.as_view(), name="agent-partner"),
    path(
        "api/agent/v1/partners/<id:partner_id>/enrollments",
        AgentPartnerEnrollApi.as_view(),
        name="agent-partner-enrollments",
    ),
]
