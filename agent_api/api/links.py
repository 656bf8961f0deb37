"""Agent routes for referral links: list, create, deactivate.

A key sees the links of the programs it may see, not the synthetic ones the service makes for `svc test-event`.
A link is only made for a partner enrolled in its program: tracking refuses any other."""

from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.api.fields import StrictCharField, spec_messages
from core.api.query import QueryIntegerField
from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError
from core.ids import MAX_BIGINT
from programs.models import ReferralLink
from programs.services import (
    SHORT_LINK_PATTERN,
    PartnerNotEnrolled,
    ShortLinkInvalid,
    ShortLinkTaken,
    referral_link_create,
    referral_link_deactivate,
)
from tracking.insight.rollups import ClickCount, link_click_counts

from .. import messages
from ..selectors import agent_link_get, agent_links, agent_partner_get, agent_program_get
from ..services import AgentWrite
from . import serializers as s
from .base import AgentWriteApi, query_of
from .pagination import PageQuerySerializer, page_of

LINK_ID = OpenApiParameter("link_id", int, OpenApiParameter.PATH, description="Link id")


def link_out(link: ReferralLink, counts: ClickCount | None = None) -> dict[str, Any]:
    """The link as the API shows it; its clicks and latest click are the counters plus the clicks the rollup task
    has not added to them yet (tracking.insight.rollups.link_click_counts), read here when not given."""
    if counts is None:
        counts = link_click_counts([link.pk]).get(link.pk, ClickCount(link.clicks, link.last_clicked))
    return {
        "id": link.pk,
        "short_link": link.short_link,
        "program_id": link.program_id,
        "partner_id": link.partner_id,
        "is_active": link.is_active,
        "clicks": counts.clicks,
        "last_clicked": counts.last_clicked.isoformat() if counts.last_clicked else None,
        "created_at": link.created_at.isoformat(),
    }


def _id_filter(invalid: str, help_text: str) -> QueryIntegerField:
    return QueryIntegerField(
        min_value=1, max_value=MAX_BIGINT, invalid=invalid, too_big=invalid, required=False, help_text=help_text
    )


class LinksQuerySerializer(PageQuerySerializer):
    program_id = _id_filter(
        messages.PROGRAM_ID_FILTER_INVALID, "Only this program's links (404 when the key may not see it)"
    )
    partner_id = _id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner's links")
    active = serializers.ChoiceField(
        choices=("true", "false"),
        required=False,
        error_messages=spec_messages(messages.LINK_ACTIVE_INVALID),
        help_text="true: only links that take clicks; false: only deactivated ones",
    )


class LinkCreateSerializer(serializers.Serializer):
    program_id = serializers.IntegerField(
        help_text="A program the key may see",
        error_messages={
            key: messages.PROGRAM_ID_INVALID for key in ("required", "invalid", "null", "max_string_length")
        },
    )
    partner_id = serializers.IntegerField(
        help_text="A partner of the workspace enrolled in the program (POST /partners/{id}/enrollments first)",
        error_messages={
            key: messages.LINK_PARTNER_ID_INVALID for key in ("required", "invalid", "null", "max_string_length")
        },
    )
    short_link = StrictCharField(
        required=False,
        allow_null=True,
        trim_whitespace=False,
        max_length=100,
        help_text="The code matched against ?aff= (1-100 of A-Z a-z 0-9 _ -); generated from the partner's name "
        "when absent",
        error_messages=spec_messages(messages.LINK_SHORT_LINK_INVALID),
    )

    def validate_short_link(self, value: str | None) -> str | None:
        if value is not None and not SHORT_LINK_PATTERN.fullmatch(value):
            raise serializers.ValidationError(messages.LINK_SHORT_LINK_INVALID)
        return value


def _body(request) -> dict[str, Any]:
    serializer = LinkCreateSerializer(data=request.data if isinstance(request.data, dict) else {})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


LINK = inline_serializer(
    "AgentLink",
    fields={
        "id": serializers.IntegerField(),
        "short_link": serializers.CharField(help_text="The code matched against ?aff= (or ?via=)"),
        "program_id": serializers.IntegerField(),
        "partner_id": serializers.IntegerField(allow_null=True),
        "is_active": serializers.BooleanField(help_text="false: clicks on it are refused (410 link_disabled)"),
        "clicks": serializers.IntegerField(),
        "last_clicked": serializers.DateTimeField(allow_null=True),
        "created_at": serializers.DateTimeField(),
    },
)
LINK_OK = inline_serializer("AgentLinkResult", fields={"data": LINK})
LINKS_OK = inline_serializer(
    "AgentLinkList", fields={"data": serializers.ListField(child=LINK), "next_cursor": s.NEXT_CURSOR}
)
CREATE_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="short_link_taken: another link has this short_link; idempotency_conflict: the Idempotency-Key "
    "was used with another body",
)


class AgentLinksApi(AgentWriteApi):
    required_scopes = {"GET": "links:read", "POST": "links:write"}

    @extend_schema(
        summary="Referral links of the programs the key may see, newest first",
        parameters=[LinksQuerySerializer],
        responses={200: LINKS_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        key = self.agent_key
        query = query_of(LinksQuerySerializer, request)
        links = agent_links(key)
        if "program_id" in query:
            links = links.filter(program=agent_program_get(key, query["program_id"]))
        if "partner_id" in query:
            links = links.filter(partner_id=query["partner_id"])
        if "active" in query:
            links = links.filter(is_active=query["active"] == "true")
        page, next_cursor = page_of(links, query=query)
        counts = link_click_counts(link.pk for link in page)
        data = [link_out(link, counts.get(link.pk, ClickCount(link.clicks, link.last_clicked))) for link in page]
        return Response({"data": data, "next_cursor": next_cursor})

    @extend_schema(
        summary="Create a referral link for a partner enrolled in the program",
        request=LinkCreateSerializer,
        responses={201: LINK_OK, **s.errors(400, 404), 409: CREATE_CONFLICT},
    )
    def post(self, request):
        key = self.agent_key
        body = _body(request)
        program = agent_program_get(key, body["program_id"])
        partner = agent_partner_get(key, body["partner_id"])
        short_link = body.get("short_link")

        def perform() -> AgentWrite:
            try:
                link = referral_link_create(program=program, partner=partner, short_link=short_link)
            except PartnerNotEnrolled:
                raise BadRequestError(
                    messages.LINK_PARTNER_NOT_ENROLLED.format(partner_id=partner.pk), code=messages.CODE_BAD_REQUEST
                ) from None
            except ShortLinkInvalid:
                raise BadRequestError(messages.LINK_SHORT_LINK_INVALID, code=messages.CODE_BAD_REQUEST) from None
            except ShortLinkTaken:
                raise ConflictError(
                    messages.LINK_SHORT_LINK_TAKEN,
                    code=messages.CODE_SHORT_LINK_TAKEN,
                    details={"short_link": short_link},
                ) from None
            after = link_out(link)
            return AgentWrite(201, {"data": after}, "link.create", "link", link.pk, None, after)

        return self.write(request, perform)


class AgentLinkDeactivateApi(AgentWriteApi):
    required_scopes = {"POST": "links:write"}

    @extend_schema(
        summary="Deactivate a referral link: clicks on it are refused from now on (200 when it already was off)",
        parameters=[LINK_ID],
        request=None,
        responses={200: LINK_OK, **s.errors(400, 404, 409)},
    )
    def post(self, request, link_id: str):
        link = agent_link_get(self.agent_key, link_id)

        def perform() -> AgentWrite:
            before = link_out(link)
            referral_link_deactivate(link_id=link.pk)
            link.refresh_from_db()
            after = link_out(link)
            return AgentWrite(200, {"data": after}, "link.deactivate", "link", link.pk, before, after)

        return self.write(request, perform)


urlpatterns = [
    path("api/agent/v1/links", AgentLinksApi.as_view(), name="agent-links"),
    path("api/agent/v1/links/<id:link_id>/deactivate", AgentLinkDeactivateApi.as_view(), name="agent-link-deactivate"),
]
