"""Reads for the command-line helper: login sessions and tokens by their secret, and what an account may see."""

from django.contrib.auth.models import User
from django.db.models import QuerySet

from programs.keys import digests_match, key_digest
from programs.models import ROLE_ACTIONS, Action, Membership, Program, Workspace

from .models import CliLoginSession, CliToken

# The roles that may create programs in a workspace: an account's "advertisers" are those workspaces.
ADVERTISER_ROLES = [role for role, actions in ROLE_ACTIONS.items() if Action.PROGRAM_MANAGE in actions]


def login_session_get(state: str) -> CliLoginSession | None:
    return CliLoginSession.objects.filter(state_digest=key_digest(state)).first()


def cli_token_get_by_raw(raw_token: str) -> CliToken | None:
    """The token whose digest matches exactly, with its user (one indexed query)."""
    digest = key_digest(raw_token)
    token = next(iter(CliToken.objects.select_related("user").filter(digest=digest)[:1]), None)
    if token is None or not digests_match(token.digest, digest):
        return None
    return token


def account_is_suspended(user: User) -> bool:
    """A suspended account: the user is deactivated, or a workspace they belong to is blocked."""
    if not user.is_active:
        return True
    return Membership.objects.filter(user=user, is_active=True, workspace__is_blocked=True).exists()


def advertiser_workspaces(user: User) -> list[Workspace]:
    """Workspaces where the user may create programs (owner or admin), oldest membership first: the first one is
    the account's default advertiser."""
    memberships = (
        Membership.objects.filter(user=user, is_active=True, role__in=ADVERTISER_ROLES)
        .select_related("workspace")
        .order_by("created_at", "pk")
    )
    return [membership.workspace for membership in memberships]


def account_programs_list(user: User) -> tuple[QuerySet[Program], dict[int, str]]:
    """Programs of every workspace the user is an active member of, oldest first, with their keys; and the user's
    role per workspace id."""
    roles = dict(Membership.objects.filter(user=user, is_active=True).values_list("workspace_id", "role"))
    programs = (
        Program.objects.filter(workspace_id__in=list(roles))
        .select_related("workspace")
        .prefetch_related("keys")
        .order_by("pk")
    )
    return programs, roles
