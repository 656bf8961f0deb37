"""What an agent key may see: the programs of its workspace, or only those it is limited to, and the partners of
the workspace, or only those enrolled in one of its programs."""

from typing import TypeVar

from django.db.models import Model, QuerySet

from core.errors import NotFoundError
from core.ids import id_parse
from programs.models import AgentKey, Partner, Program, ReferralLink

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
