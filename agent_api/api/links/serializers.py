"""What the link routes read (query and body serializers) and answer (output serializers, which both render the
bodies and describe them in the OpenAPI document)."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import IsoDateTimeField, StrictCharField, spec_messages
from programs.models import ReferralLink
from programs.services import SHORT_LINK_PATTERN
from tracking.rollups import ClickCount

from ... import messages
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

# --- input ----------------------------------------------------------------------------------------------------------


class LinksQuerySerializer(PageQuerySerializer):
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID, "Only this program's links (404 when the key may not see it)"
    )
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner's links")
    active = serializers.ChoiceField(
        choices=("true", "false"),
        required=False,
        error_messages=spec_messages(messages.LINK_ACTIVE_INVALID),
        help_text="true: only links that take clicks; false: only deactivated ones",
    )


class LinkCreateSerializer(serializers.Serializer[Any]):
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


# --- output ---------------------------------------------------------------------------------------------------------


# A link; its clicks and latest click are the counters plus the clicks the rollup task has not added to them yet:
# context["counts"] holds them by link id (tracking.rollups.link_click_counts, read by the view), and a link
# without an entry shows its counters.
class AgentLinkSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    short_link = serializers.CharField(help_text="The code matched against ?aff= (or ?via=)")
    program_id = serializers.IntegerField()
    partner_id = serializers.IntegerField(allow_null=True)
    is_active = serializers.BooleanField(help_text="false: clicks on it are refused (410 link_disabled)")
    clicks = serializers.SerializerMethodField()
    last_clicked = serializers.SerializerMethodField(allow_null=True)
    created_at = IsoDateTimeField()

    def _counts(self, link: ReferralLink) -> ClickCount:
        counts: dict[int, ClickCount] = self.context["counts"]
        return counts.get(link.pk, ClickCount(link.clicks, link.last_clicked))

    def get_clicks(self, link: ReferralLink) -> int:
        return self._counts(link).clicks

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_last_clicked(self, link: ReferralLink) -> str | None:
        last_clicked = self._counts(link).last_clicked
        return last_clicked.isoformat() if last_clicked else None


AgentLinkListSerializer = page_serializer("AgentLinkList", AgentLinkSerializer)
AgentLinkResultSerializer = result_serializer("AgentLinkResult", AgentLinkSerializer())
