"""Agent routes for a program's partner invitations: send one (partners:write), list them (partners:read).

An invitation emails a one-time link to the partner portal (portal.services.invitation_create): the link goes to
the invited email only, never into an answer or the audit log."""

from typing import Any

from django.db.models import QuerySet
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from portal.services import invitation_create
from programs.models import PartnerInvitation, Program

from ...selectors import agent_program_get
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    AgentInvitationListSerializer,
    AgentInvitationResultSerializer,
    AgentInvitationSerializer,
    InvitationCreateSerializer,
    InvitationsQuerySerializer,
)

PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")


def program_invitations(program: Program) -> QuerySet[PartnerInvitation]:
    return PartnerInvitation.objects.filter(program=program)


@list_schema(
    operation_id="agent_program_invitations_list",
    summary="A program's partner invitations, newest first, with their status (pending, accepted or expired)",
    path_parameters=[PROGRAM_ID],
    error_statuses=(400, 404),
)
class AgentInvitationsApi(AgentListApi, AgentWriteApi):
    required_scopes = {"GET": "partners:read", "POST": "partners:write"}
    query_serializer = InvitationsQuerySerializer
    selector = staticmethod(program_invitations)
    output_serializer = AgentInvitationListSerializer

    def owner(self, **path: str) -> Program:
        return agent_program_get(self.agent_key, path["program_id"])

    @extend_schema(
        summary="Invite a partner to the program's partner portal by email",
        description="The workspace's partner with that email is used, or made with `name`. The email carries a "
        "link that works once, for 7 days, to set a password (or sign in) and join the program; the link is in "
        "no answer.",
        parameters=[PROGRAM_ID],
        request=InvitationCreateSerializer,
        responses={201: AgentInvitationResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request, program_id: str) -> Response:
        program = agent_program_get(self.agent_key, program_id)
        body = body_of(InvitationCreateSerializer, request, object_required=False)

        def perform() -> AgentWrite:
            sent = invitation_create(program=program, name=body.get("name", ""), email=body["email"])
            after: dict[str, Any] = AgentInvitationSerializer(sent.invitation).data
            return AgentWrite(201, {"data": after}, "partner.invite", "invitation", sent.invitation.pk, None, after)

        return self.write(request, perform)


urlpatterns = [
    path(
        "api/agent/v1/programs/<id:program_id>/invitations",
        AgentInvitationsApi.as_view(),
        name="agent-program-invitations",
    ),
]
