"""Agent routes for referral links: list, create, deactivate.

A key sees the links of the programs it may see, not the synthetic ones the service makes for `svc test-event`.
A link is only made for a partner enrolled in its program: tracking refuses any other."""

from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError
from programs.models import ReferralLink
from programs.services import (
    PartnerNotEnrolled,
    ShortLinkInvalid,
    ShortLinkTaken,
    referral_link_create,
    referral_link_deactivate,
)
from tracking.rollups import link_click_counts

from ... import messages
from ...selectors import agent_link_get, agent_links_list, agent_partner_get, agent_program_get
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    AgentLinkListSerializer,
    AgentLinkResultSerializer,
    AgentLinkSerializer,
    LinkCreateSerializer,
    LinksQuerySerializer,
)

LINK_ID = OpenApiParameter("link_id", int, OpenApiParameter.PATH, description="Link id")
CREATE_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="short_link_taken: another link has this short_link; idempotency_conflict: the Idempotency-Key "
    "was used with another body",
)


def _link_data(link: ReferralLink) -> dict[str, Any]:
    """The body of one link, with the clicks the rollup task has not counted yet (one query)."""
    return AgentLinkSerializer(link, context={"counts": link_click_counts([link.pk])}).data


@list_schema(summary="Referral links of the programs the key may see, newest first", error_statuses=(400, 404))
class AgentLinksApi(AgentListApi, AgentWriteApi):
    required_scopes = {"GET": "links:read", "POST": "links:write"}
    query_serializer = LinksQuerySerializer
    selector = staticmethod(agent_links_list)
    output_serializer = AgentLinkListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {
            "program": self.program_filter(query),
            "partner_id": query.get("partner_id"),
            "active": query["active"] == "true" if "active" in query else None,
        }

    def output_context(self, page: list[ReferralLink]) -> dict[str, Any]:
        return {"counts": link_click_counts(link.pk for link in page)}

    @extend_schema(
        summary="Create a referral link for a partner enrolled in the program",
        request=LinkCreateSerializer,
        responses={201: AgentLinkResultSerializer, **s.errors(400, 404), 409: CREATE_CONFLICT},
    )
    def post(self, request: Request) -> Response:
        key = self.agent_key
        body = body_of(LinkCreateSerializer, request, object_required=False)
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
            after = _link_data(link)
            return AgentWrite(201, {"data": after}, "link.create", "link", link.pk, None, after)

        return self.write(request, perform)


class AgentLinkDeactivateApi(AgentWriteApi):
    required_scopes = {"POST": "links:write"}

    @extend_schema(
        summary="Deactivate a referral link: clicks on it are refused from now on (200 when it already was off)",
        parameters=[LINK_ID],
        request=None,
        responses={200: AgentLinkResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request, link_id: str) -> Response:
        link = agent_link_get(self.agent_key, link_id)

        def perform() -> AgentWrite:
            before = _link_data(link)
            referral_link_deactivate(link_id=link.pk)
            link.refresh_from_db()
            after = _link_data(link)
            return AgentWrite(200, {"data": after}, "link.deactivate", "link", link.pk, before, after)

        return self.write(request, perform)


urlpatterns = [
    path("api/agent/v1/links", AgentLinksApi.as_view(), name="agent-links"),
    path("api/agent/v1/links/<id:link_id>/deactivate", AgentLinkDeactivateApi.as_view(), name="agent-link-deactivate"),
]
