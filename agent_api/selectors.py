"""What an agent key may see: the programs of its workspace, or only those it is limited to."""

from django.db.models import QuerySet

from core.errors import NotFoundError
from core.ids import id_parse
from programs.models import AgentKey, Program

from . import messages


def agent_programs(key: AgentKey) -> QuerySet[Program]:
    if key.workspace_id is None:
        return Program.objects.none()  # such a key never authenticates (agent_api.auth)
    programs = Program.objects.filter(workspace_id=key.workspace_id)
    if key.programs.exists():
        programs = programs.filter(pk__in=key.programs.values("pk"))
    return programs


def agent_program_get(key: AgentKey, program_id: object) -> Program:
    """The program when the key may see it; 404 otherwise (a program of another workspace is not revealed)."""
    pk = id_parse(program_id)
    program = agent_programs(key).filter(pk=pk).first() if pk is not None else None
    if program is None:
        raise NotFoundError(messages.PROGRAM_NOT_FOUND, code=messages.CODE_NOT_FOUND)
    return program
