"""Agent routes for partner applications (the public /join/<program> page's): list a program's (partners:read),
approve or reject one (partners:write). Approval invites the applicant to the partner portal, as the dashboard's
Approve does (portal.services.application_approve)."""

from typing import Any

from django.db.models import QuerySet
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.fields import IsoDateTimeField
from core.errors import ConflictError
from portal.services import ApplicationDecided, application_approve, application_reject
from programs.models import PartnerApplication, Program

from ... import messages
from ...selectors import agent_program_get, agent_programs, visible_get
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentListApi, AgentWriteApi, list_schema
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")
APPLICATION_ID = OpenApiParameter("application_id", int, OpenApiParameter.PATH, description="Application id")


class ApplicationsQuerySerializer(PageQuerySerializer):
    status = serializers.ChoiceField(
        choices=PartnerApplication.Status.values,
        required=False,
        help_text="Only applications in this state",
        error_messages={"invalid_choice": "status must be one of pending, approved, rejected"},
    )


class AgentApplicationSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    name = serializers.CharField()
    email = serializers.CharField()
    website = serializers.CharField()
    promotion = serializers.CharField(help_text="How they will promote the program")
    status = serializers.CharField(help_text="pending, approved or rejected")
    partner_id = serializers.IntegerField(allow_null=True, help_text="The partner an approval made or reused")
    created_at = IsoDateTimeField()
    decided_at = IsoDateTimeField(allow_null=True)


AgentApplicationListSerializer = page_serializer("AgentApplicationList", AgentApplicationSerializer)
AgentApplicationResultSerializer = result_serializer("AgentApplicationResult", AgentApplicationSerializer())


def program_applications(program: Program, *, status: str | None = None) -> QuerySet[PartnerApplication]:
    rows = PartnerApplication.objects.filter(program=program)
    return rows.filter(status=status) if status else rows


@list_schema(
    operation_id="agent_program_applications_list",
    summary="A program's partner applications, newest first (status: only those in that state)",
    path_parameters=[PROGRAM_ID],
    error_statuses=(400, 404),
)
class AgentApplicationsApi(AgentListApi):
    required_scopes = {"GET": "partners:read"}
    query_serializer = ApplicationsQuerySerializer
    selector = staticmethod(program_applications)
    output_serializer = AgentApplicationListSerializer

    def owner(self, **path: str) -> Program:
        return agent_program_get(self.agent_key, path["program_id"])

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"status": query.get("status")}


class AgentApplicationDecisionApi(AgentWriteApi):
    required_scopes = {"POST": "partners:write"}
    decision = ""

    def post(self, request: Request, application_id: str) -> Response:
        visible = PartnerApplication.objects.filter(program__in=agent_programs(self.agent_key))
        application = visible_get(visible, application_id, messages.APPLICATION_NOT_FOUND)

        def perform() -> AgentWrite:
            before = AgentApplicationSerializer(application).data
            try:
                if self.decision == "approve":
                    application_approve(application=application, decided_by=None)
                    application.refresh_from_db()
                else:
                    application_reject(application=application, decided_by=None)
            except ApplicationDecided as decided:
                raise ConflictError(
                    messages.APPLICATION_DECIDED.format(status=decided.args[0]),
                    code=messages.CODE_APPLICATION_DECIDED,
                ) from None
            after = AgentApplicationSerializer(application).data
            return AgentWrite(
                200, {"data": after}, f"application.{self.decision}", "application", application.pk, before, after
            )

        return self.write(request, perform)


@extend_schema(
    summary="Approve a pending application: the applicant is invited to the partner portal by email",
    parameters=[APPLICATION_ID],
    request=None,
    responses={200: AgentApplicationResultSerializer, **s.errors(400, 404, 409)},
)
class AgentApplicationApproveApi(AgentApplicationDecisionApi):
    decision = "approve"


@extend_schema(
    summary="Reject a pending application (no email is sent)",
    parameters=[APPLICATION_ID],
    request=None,
    responses={200: AgentApplicationResultSerializer, **s.errors(400, 404, 409)},
)
class AgentApplicationRejectApi(AgentApplicationDecisionApi):
    decision = "reject"


urlpatterns = [
    path(
        "api/agent/v1/programs/<id:program_id>/applications",
        AgentApplicationsApi.as_view(),
        name="agent-program-applications",
    ),
    path(
        "api/agent/v1/applications/<id:application_id>/approve",
        AgentApplicationApproveApi.as_view(),
        name="agent-application-approve",
    ),
    path(
        "api/agent/v1/applications/<id:application_id>/reject",
        AgentApplicationRejectApi.as_view(),
        name="agent-application-reject",
    ),
]
