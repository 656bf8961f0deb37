"""What an agent key may see: the programs of its workspace, or only those it is limited to, and the partners of
the workspace, or only those enrolled in one of its programs."""

from django.db.models import QuerySet

from core.errors import NotFoundError
from core.ids import id_parse
from programs.models import AgentKey, Partner, Program

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
