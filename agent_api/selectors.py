"""What an agent key may see: the programs of its workspace, or only those it is limited to, and the partners of
the workspace, or only those enrolled in one of its programs."""

from django.db.models import QuerySet

from core.errors import NotFoundError
from core.ids import id_parse
from programs.models import AgentKey, Partner, Program, ReferralLink

from . import messages


def agent_programs(key: AgentKey) -> QuerySet[Program]:
    if key.workspace_id is None:
        return Program.objects.none()  # such a key never authenticates (agent_api.auth)
    programs = Program.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        programs = programs.filter(pk__in=key.limited_program_ids)
    return programs


def agent_program_get(key: AgentKey, program_id: object) -> Program:
    """The program when the key may see it; 404 otherwise (a program of another workspace is not revealed)."""
    pk = id_parse(program_id)
    program = agent_programs(key).filter(pk=pk).first() if pk is not None else None
    if program is None:
        raise NotFoundError(messages.PROGRAM_NOT_FOUND, code=messages.CODE_NOT_FOUND)
    return program


def agent_partners(key: AgentKey) -> QuerySet[Partner]:
    if key.workspace_id is None:
        return Partner.objects.none()  # such a key never authenticates (agent_api.auth)
    partners = Partner.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        partners = partners.filter(program_links__program__in=key.limited_program_ids).distinct()
    return partners


def agent_partner_get(key: AgentKey, partner_id: object) -> Partner:
    pk = id_parse(partner_id)
    partner = agent_partners(key).filter(pk=pk).first() if pk is not None else None
    if partner is None:
        raise NotFoundError(messages.PARTNER_NOT_FOUND, code=messages.CODE_NOT_FOUND)
    return partner


def agent_links(key: AgentKey) -> QuerySet[ReferralLink]:
    """The links of the programs the key may see, without those the service made itself (`svc test-event`)."""
    return ReferralLink.objects.filter(program__in=agent_programs(key), is_synthetic=False)


def agent_link_get(key: AgentKey, link_id: object) -> ReferralLink:
    pk = id_parse(link_id)
    link = agent_links(key).filter(pk=pk).first() if pk is not None else None
    if link is None:
        raise NotFoundError(messages.LINK_NOT_FOUND, code=messages.CODE_NOT_FOUND)
    return link
