"""What the invitation routes read and answer."""

from typing import Any

from django.utils import timezone
from rest_framework import serializers

from core.api.fields import IsoDateTimeField
from programs.models import PartnerInvitation

from ... import messages
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer


class InvitationCreateSerializer(serializers.Serializer[Any]):
    email = serializers.EmailField(
        max_length=254,
        error_messages={key: messages.EMAIL_INVALID for key in ("required", "null", "invalid", "blank", "max_length")},
    )
    name = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="The partner's name when a new partner is made (the email's partner is used when there is one)",
        error_messages={
            key: messages.TEXT_INVALID.format(field="name", limit=200) for key in ("null", "invalid", "max_length")
        },
    )


class InvitationsQuerySerializer(PageQuerySerializer):
    pass


class AgentInvitationSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    partner_id = serializers.IntegerField()
    email = serializers.CharField()
    status = serializers.SerializerMethodField(help_text="pending, accepted or expired")
    created_at = IsoDateTimeField()
    expires_at = IsoDateTimeField()
    accepted_at = IsoDateTimeField(allow_null=True)

    def get_status(self, invitation: PartnerInvitation) -> str:
        if invitation.accepted_at is not None:
            return "accepted"
        return "pending" if invitation.expires_at > timezone.now() else "expired"


AgentInvitationListSerializer = page_serializer("AgentInvitationList", AgentInvitationSerializer)
AgentInvitationResultSerializer = result_serializer("AgentInvitationResult", AgentInvitationSerializer())
