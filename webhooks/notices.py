"""Telling a workspace's owners that the service disabled one of their webhook endpoints."""

from django.conf import settings
from django.core.mail import send_mail

from .models import WebhookEndpoint

# programs.models.Role.OWNER, named, not imported (programs depends on this app).
OWNER_ROLE = "owner"
SUBJECT = "Webhook endpoint disabled: {url}"
BODY = (
    "The webhook endpoint {url} ({scope}) was disabled.\n\n"
    "Reason: {reason}\n\n"
    "Events are still recorded. Fix the endpoint, enable it again on the Webhooks page, and resend the failed "
    "events of the period from its delivery log.\n"
)


def endpoint_disabled_notify(*, endpoint_id: int) -> int:
    """Emails the workspace's active owners; returns how many were written to. Sent at most once per disabling
    by the caller (endpoint_disable_failing notifies only when it did the disabling)."""
    endpoint = WebhookEndpoint.objects.select_related("program", "workspace").get(pk=endpoint_id)
    if endpoint.enabled:
        return 0  # enabled again before the notice went out
    recipients = sorted(
        {
            email
            for email in endpoint.workspace.memberships.filter(is_active=True, role=OWNER_ROLE).values_list(
                "user__email", flat=True
            )
            if email
        }
    )
    if not recipients:
        return 0
    scope = f"program {endpoint.program.name}" if endpoint.program else f"workspace {endpoint.workspace.name}"
    send_mail(
        SUBJECT.format(url=endpoint.url),
        BODY.format(url=endpoint.url, scope=scope, reason=endpoint.disabled_reason),
        settings.DEFAULT_FROM_EMAIL,
        recipients,
    )
    return len(recipients)
