"""Agent routes for partners: list, create, update, enroll in a program.

A key sees the partners of its workspace; a key limited to programs sees those enrolled in one of them."""

from typing import Any

from django.db import transaction
from django.db.models import Prefetch
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.errors import BadRequestError
from programs.models import AgentKey, Partner, PartnerProgram
from programs.services import partner_create, partner_enroll, partner_update

from .. import messages
from ..selectors import agent_partner_get, agent_partners, agent_program_get, agent_programs
from ..services import AgentWrite
from . import serializers as s
from .base import AgentWriteApi, query_of
from .pagination import PageQuerySerializer, page_of

PARTNER_ID = OpenApiParameter("partner_id", int, OpenApiParameter.PATH, description="Partner id")


def partner_out(partner: Partner, program_ids: list[int]) -> dict[str, Any]:
    return {
        "id": partner.pk,
        "name": partner.name,
        "email": partner.email,
        "program_ids": program_ids,
        "created_at": partner.created_at.isoformat(),
    }


def _visible_program_ids(key: AgentKey, partner: Partner) -> list[int]:
    return sorted(
        PartnerProgram.objects.filter(partner=partner, program__in=agent_programs(key)).values_list(
            "program_id", flat=True
        )
    )


def _text(field: str, limit: int, *, required: bool) -> serializers.CharField:
    message = messages.TEXT_INVALID.format(field=field, limit=limit)
    return serializers.CharField(
        required=required,
        max_length=limit,
        error_messages={key: message for key in ("required", "null", "invalid", "blank", "max_length")},
    )


def _email() -> serializers.EmailField:
    return serializers.EmailField(
        required=False,
        allow_blank=True,
        max_length=254,
        error_messages={key: messages.EMAIL_INVALID for key in ("null", "invalid", "max_length")},
    )


class PartnersQuerySerializer(PageQuerySerializer):
    program_id = serializers.CharField(required=False, help_text="Only partners enrolled in this program")


class PartnerCreateSerializer(serializers.Serializer):
    name = _text("name", 200, required=True)
    email = _email()
    program_id = serializers.IntegerField(
        required=False,
        help_text="Enroll the new partner in this program at once (required for a key limited to programs)",
        error_messages={key: messages.PROGRAM_ID_INVALID for key in ("invalid", "null", "max_string_length")},
    )


class PartnerUpdateSerializer(serializers.Serializer):
    name = _text("name", 200, required=False)
    email = _email()


class EnrollmentSerializer(serializers.Serializer):
    program_id = serializers.IntegerField(
        error_messages={
            key: messages.PROGRAM_ID_INVALID for key in ("required", "invalid", "null", "max_string_length")
        }
    )


def _body(serializer_class: type[serializers.Serializer], request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data if isinstance(request.data, dict) else {})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


PARTNER = inline_serializer(
    "AgentPartner",
    fields={
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "email": serializers.CharField(),
        "program_ids": serializers.ListField(
            child=serializers.IntegerField(), help_text="Programs it is enrolled in, of those the key may see"
        ),
        "created_at": serializers.DateTimeField(),
    },
)
PARTNER_OK = inline_serializer("AgentPartnerResult", fields={"data": PARTNER})
PARTNERS_OK = inline_serializer(
    "AgentPartnerList", fields={"data": serializers.ListField(child=PARTNER), "next_cursor": s.NEXT_CURSOR}
)
ENROLLMENT_OK = inline_serializer(
    "AgentEnrollmentResult",
    fields={
        "data": inline_serializer(
            "AgentEnrollment",
            fields={
                "partner_id": serializers.IntegerField(),
                "program_id": serializers.IntegerField(),
                "created": serializers.BooleanField(help_text="false: it was already enrolled"),
            },
        )
    },
)


class AgentPartnersApi(AgentWriteApi):
    required_scopes = {"GET": "partners:read", "POST": "partners:write"}

    @extend_schema(
        operation_id="agent_partners_list",
        summary="Partners the key may see, newest first",
        parameters=[PartnersQuerySerializer],
        responses={200: PARTNERS_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        key = self.agent_key
        query = query_of(PartnersQuerySerializer, request)
        partners = agent_partners(key)
        if "program_id" in query:
            partners = partners.filter(program_links__program=agent_program_get(key, query["program_id"]))
        visible = PartnerProgram.objects.order_by("program_id")
        if key.limited_program_ids is not None:
            visible = visible.filter(program_id__in=key.limited_program_ids)
        page, next_cursor = page_of(partners.prefetch_related(Prefetch("program_links", queryset=visible)), query=query)
        data = [partner_out(partner, [link.program_id for link in partner.program_links.all()]) for partner in page]
        return Response({"data": data, "next_cursor": next_cursor})

    @extend_schema(
        summary="Create a partner (optionally enrolled in a program at once)",
        request=PartnerCreateSerializer,
        responses={201: PARTNER_OK, **s.errors(400, 404, 409)},
    )
    def post(self, request):
        key = self.agent_key
        body = _body(PartnerCreateSerializer, request)
        program = agent_program_get(key, body["program_id"]) if "program_id" in body else None
        if program is None and key.limited_program_ids is not None:
            raise BadRequestError(messages.LIMITED_KEY_NEEDS_PROGRAM, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            assert key.workspace is not None
            partner = partner_create(workspace=key.workspace, name=body["name"], email=body.get("email", ""))
            if program is not None:
                partner_enroll(partner=partner, program=program)
            after = partner_out(partner, [program.pk] if program else [])
            return AgentWrite(201, {"data": after}, "partner.create", "partner", partner.pk, None, after)

        return self.write(request, perform)


class AgentPartnerApi(AgentWriteApi):
    required_scopes = {"GET": "partners:read", "PATCH": "partners:write"}

    @extend_schema(
        summary="One partner, with the programs it is enrolled in",
        parameters=[PARTNER_ID],
        responses={200: PARTNER_OK, **s.errors(404)},
    )
    def get(self, request, partner_id: str):
        key = self.agent_key
        partner = agent_partner_get(key, partner_id)
        return Response({"data": partner_out(partner, _visible_program_ids(key, partner))})

    @extend_schema(
        summary="Change a partner's name or email",
        parameters=[PARTNER_ID],
        request=PartnerUpdateSerializer,
        responses={200: PARTNER_OK, **s.errors(400, 404, 409)},
    )
    def patch(self, request, partner_id: str):
        key = self.agent_key
        partner = agent_partner_get(key, partner_id)
        body = _body(PartnerUpdateSerializer, request)
        if not body:
            raise BadRequestError(messages.PARTNER_PATCH_EMPTY, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            program_ids = _visible_program_ids(key, partner)
            before = partner_out(partner, program_ids)
            updated = partner_update(partner_id=partner.pk, name=body.get("name"), email=body.get("email"))
            after = partner_out(updated, program_ids)
            return AgentWrite(200, {"data": after}, "partner.update", "partner", partner.pk, before, after)

        return self.write(request, perform)


class AgentPartnerEnrollApi(AgentWriteApi):
    required_scopes = {"POST": "partners:write"}

    @extend_schema(
        summary="Enroll a partner in a program (200 when it already was)",
        parameters=[PARTNER_ID],
        request=EnrollmentSerializer,
        responses={200: ENROLLMENT_OK, 201: ENROLLMENT_OK, **s.errors(400, 404, 409)},
    )
    def post(self, request, partner_id: str):
        key = self.agent_key
        partner = agent_partner_get(key, partner_id)
        program = agent_program_get(key, _body(EnrollmentSerializer, request)["program_id"])

        def perform() -> AgentWrite:
            before = partner_out(partner, _visible_program_ids(key, partner))
            with transaction.atomic():
                _, created = partner_enroll(partner=partner, program=program)
            after = partner_out(partner, _visible_program_ids(key, partner))
            data = {"partner_id": partner.pk, "program_id": program.pk, "created": created}
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
