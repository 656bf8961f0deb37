"""Who may act on a program: a signed-in user whose active membership allows the action
(programs.models.ROLE_ACTIONS). The program-member routes (dashboard API, program settings) check it through
HasProgramAction, taking the program from the path (`program_id`) or from `program_id` in a JSON body."""

from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core import messages
from core.errors import BadRequestError, ForbiddenError, NotFoundError, UnauthorizedError
from core.ids import id_parse, integer_parse

from .models import Program
from .selectors import membership_get


def program_for_action(*, user: User | AnonymousUser, program_id: object, action: str) -> Program:
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


SESSION_CHALLENGE = 'Session realm="dashboard"'


def body_program_id(data: Any) -> int:
    """program_id from a JSON body: an integer or a numeric string. 400 when missing or anything else."""
    if not isinstance(data, dict):
        raise BadRequestError(messages.BODY_NOT_OBJECT)
    if data.get("program_id") in (None, ""):
        raise BadRequestError(messages.PROGRAM_ID_REQUIRED)
    # Any whole number is well-formed here; one that names no program is the 404 of program_for_action.
    program_id = integer_parse(data["program_id"], minimum=0)
    if program_id is None:
        raise BadRequestError(messages.PROGRAM_ID_NOT_INTEGER)
    return program_id


def require_sign_in(request: Request) -> None:
    """401 for a signed-out caller, with the session challenge rather than Bearer: a program key never
    works on these routes."""
    if not request.user.is_authenticated:
        raise UnauthorizedError(messages.AUTHENTICATION_REQUIRED, headers={"WWW-Authenticate": SESSION_CHALLENGE})


def program_member_get(request: Request, *, program_id: object, action: str) -> Program:
    """The program when the signed-in user may do `action` on it: 401 signed out, 404 no such program,
    403 no active membership or a role without the action."""
    require_sign_in(request)
    return program_for_action(user=request.user, program_id=program_id, action=action)


class HasProgramAction(BasePermission):
    """Resolves the view's program and stores it on `view.program`.

    The view names the action per method in `program_actions` ({"GET": Action.TRACKING_LIST, ...}) and where
    the program id is (`program_id_from`: "path" or "body"). The sign-in is checked before the body is read,
    so a signed-out caller gets 401 whatever it sent."""

    # `view` is a ProgramMemberApi (programs.api.base, which imports this module); its attributes are read here.
    def has_permission(self, request: Request, view: Any) -> bool:
        require_sign_in(request)
        action = view.program_actions.get("GET" if request.method == "HEAD" else request.method)
        if action is None:
            return True  # a method the view does not offer: its handler answers 405
        if getattr(view, "program_id_from", "path") == "body":
            program_id: object = body_program_id(request.data)
        else:
            program_id = view.kwargs["program_id"]
        view.program = program_member_get(request, program_id=program_id, action=action)
        return True
