"""What an agent key may see: the programs of its workspace, or only those it is limited to, the partners of
the workspace, or only those enrolled in one of its programs, the webhook endpoints (with their deliveries)
and webhook events that belong to what it sees, and what the fraud rules found in a program it sees."""

from typing import TypeVar

from django.db.models import Model, QuerySet

from commissions.models import Commission, CommissionReview
from core.errors import NotFoundError
from core.ids import id_parse
from programs.models import AgentKey, Partner, Program, ReferralLink
from tracking.models import ClickEvent
from tracking.selectors.clicks import marked_clicks
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

from . import messages

M = TypeVar("M", bound=Model)


def visible_get(visible: QuerySet[M], raw_id: object, not_found: str) -> M:
    """The object of `visible` with this id; 404 not_found for a malformed id or one the key may not see (an
    object of another workspace is not revealed)."""
    pk = id_parse(raw_id)
    found = visible.filter(pk=pk).first() if pk is not None else None
    if found is None:
        raise NotFoundError(not_found, code=messages.CODE_NOT_FOUND)
    return found


def agent_programs(key: AgentKey) -> QuerySet[Program]:
    if key.workspace_id is None:
        return Program.objects.none()  # such a key never authenticates (agent_api.auth)
    programs = Program.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        programs = programs.filter(pk__in=key.limited_program_ids)
    return programs


def agent_program_get(key: AgentKey, program_id: object) -> Program:
    return visible_get(agent_programs(key), program_id, messages.PROGRAM_NOT_FOUND)


def agent_partners(key: AgentKey) -> QuerySet[Partner]:
    if key.workspace_id is None:
        return Partner.objects.none()  # such a key never authenticates (agent_api.auth)
    partners = Partner.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        partners = partners.filter(program_links__program__in=key.limited_program_ids).distinct()
    return partners


def agent_partner_get(key: AgentKey, partner_id: object) -> Partner:
    return visible_get(agent_partners(key), partner_id, messages.PARTNER_NOT_FOUND)


def agent_links(key: AgentKey) -> QuerySet[ReferralLink]:
    """The links of the programs the key may see, without those the service made itself (`svc test-event`)."""
    return ReferralLink.objects.filter(program__in=agent_programs(key), is_synthetic=False)


def agent_link_get(key: AgentKey, link_id: object) -> ReferralLink:
    return visible_get(agent_links(key), link_id, messages.LINK_NOT_FOUND)


def agent_webhook_endpoints(key: AgentKey) -> QuerySet[WebhookEndpoint]:
    """The webhook endpoints of the key's workspace. A key limited to programs sees only its programs' endpoints:
    a workspace-wide one (no program) receives every program's events, so it is not theirs to read or change."""
    if key.workspace_id is None:
        return WebhookEndpoint.objects.none()  # such a key never authenticates (agent_api.auth)
    endpoints = WebhookEndpoint.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        endpoints = endpoints.filter(program_id__in=key.limited_program_ids)
    return endpoints


def agent_webhook_endpoint_get(key: AgentKey, endpoint_id: object) -> WebhookEndpoint:
    return visible_get(agent_webhook_endpoints(key), endpoint_id, messages.WEBHOOK_ENDPOINT_NOT_FOUND)


def agent_webhook_deliveries(key: AgentKey) -> QuerySet[WebhookDelivery]:
    """The deliveries to the endpoints the key may see, each with its event (one join)."""
    return WebhookDelivery.objects.filter(endpoint__in=agent_webhook_endpoints(key)).select_related("event")


def agent_webhook_delivery_get(key: AgentKey, delivery_id: object) -> WebhookDelivery:
    return visible_get(agent_webhook_deliveries(key), delivery_id, messages.WEBHOOK_DELIVERY_NOT_FOUND)


def webhook_endpoint_deliveries(endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    """The deliveries of an endpoint the key may see (agent_webhook_endpoint_get), each with its event."""
    return WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")


def agent_webhook_attempts(delivery: WebhookDelivery) -> QuerySet[WebhookAttempt]:
    return WebhookAttempt.objects.filter(delivery=delivery)


def agent_webhook_events(key: AgentKey) -> QuerySet[WebhookEvent]:
    """The webhook events of the programs the key may see (real and `svc trigger` ones)."""
    return WebhookEvent.objects.filter(program__in=agent_programs(key))


def commission_reviews(commission: Commission) -> QuerySet[CommissionReview]:
    """The decisions on a commission's hold, oldest first."""
    return CommissionReview.objects.filter(commission=commission).order_by("created_at", "pk")


def program_flagged_clicks(program: Program) -> QuerySet[ClickEvent]:
    """The clicks of a program the fraud rules marked (not counted, or flagged), each with its link. The
    condition is that of the partial index click_program_flagged, so a page is a scan of that index only."""
    return marked_clicks(program_id=program.pk).select_related("link")
