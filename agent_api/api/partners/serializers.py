"""What the partner routes read (query and body serializers) and answer (output serializers, which both render the
bodies and describe them in the OpenAPI document)."""

from typing import Any

from rest_framework import serializers

from core.api.fields import IsoDateTimeField
from programs.models import Partner

from ... import messages
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

# --- input ----------------------------------------------------------------------------------------------------------


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


class PartnerCreateSerializer(serializers.Serializer[Any]):
    name = _text("name", 200, required=True)
    email = _email()
    program_id = serializers.IntegerField(
        required=False,
        help_text="Enroll the new partner in this program at once (required for a key limited to programs)",
        error_messages={key: messages.PROGRAM_ID_INVALID for key in ("invalid", "null", "max_string_length")},
    )


class PartnerUpdateSerializer(serializers.Serializer[Any]):
    name = _text("name", 200, required=False)
    email = _email()


class EnrollmentSerializer(serializers.Serializer[Any]):
    program_id = serializers.IntegerField(
        error_messages={
            key: messages.PROGRAM_ID_INVALID for key in ("required", "invalid", "null", "max_string_length")
        }
    )


# --- output ---------------------------------------------------------------------------------------------------------


# A partner; context["program_ids"] maps its id to the programs it is enrolled in, of those the key may see (without
# it, they are read from the partner's prefetched program_links).
class AgentPartnerSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    email = serializers.CharField()
    program_ids = serializers.SerializerMethodField(help_text="Programs it is enrolled in, of those the key may see")
    created_at = IsoDateTimeField()

    def get_program_ids(self, partner: Partner) -> list[int]:
        given: dict[int, list[int]] | None = self.context.get("program_ids")
        if given is not None:
            return given[partner.pk]
        return [link.program_id for link in partner.program_links.all()]


class AgentEnrollmentSerializer(serializers.Serializer[Any]):
    partner_id = serializers.IntegerField()
    program_id = serializers.IntegerField()
    created = serializers.BooleanField(help_text="false: it was already enrolled")


AgentPartnerListSerializer = page_serializer("AgentPartnerList", AgentPartnerSerializer)
AgentPartnerResultSerializer = result_serializer("AgentPartnerResult", AgentPartnerSerializer())
AgentEnrollmentResultSerializer = result_serializer("AgentEnrollmentResult", AgentEnrollmentSerializer())
