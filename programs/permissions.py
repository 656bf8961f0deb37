from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from core import messages
from core.errors import ForbiddenError, NotFoundError, UnauthorizedError
from core.ids import id_parse

from .models import Program
from .selectors import membership_get


def program_for_action(*, user: AbstractBaseUser | AnonymousUser, program_id: object, action: str) -> Program:
    """The program, when the signed-in user's active membership allows the action on it.
    401 signed out, 404 no such program, 403 no membership or a role without the action."""
    if not user.is_authenticated:
        raise UnauthorizedError(messages.AUTHENTICATION_REQUIRED)
    pk = id_parse(program_id)
    program = Program.objects.filter(pk=pk).first() if pk is not None else None
    if program is None:
        raise NotFoundError(messages.PROGRAM_NOT_FOUND)
    membership = membership_get(user=user, program=program)
    if membership is None or not membership.allows(action):
        raise ForbiddenError(messages.PERMISSION_DENIED)
    return program
