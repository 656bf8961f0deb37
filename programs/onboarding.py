"""An operator's first program in one step (`manage.py owner_start`): their user, the workspace they own, a
program with its keys and, if asked, a first partner with a referral link. Every step finds what an earlier run
made before making anything, so a re-run makes no second workspace and never shows a key again."""

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from .models import Membership, Partner, Program, ReferralLink, Role, Workspace
from .services import partner_create, partner_enroll, program_create, referral_link_create


class OwnerStartRefused(Exception):
    """The operator's request cannot be met as given; the message says why and what to pass instead."""


@dataclass(frozen=True)
class OwnerStarted:
    """What a run found or made. The raw keys are set only when this run made the program."""

    user: Any  # the project's user model
    user_created: bool
    workspace: Workspace
    workspace_created: bool
    program: Program
    program_created: bool
    api_key: str | None
    test_api_key: str | None
    partner: Partner | None
    partner_created: bool
    link: ReferralLink | None
    link_created: bool


def owner_user_find(*, email: str, username: str | None) -> AbstractBaseUser | None:
    """The user named by `username`, else the one user with this email (any case). Raises OwnerStartRefused
    when several users share the email."""
    User = get_user_model()
    if username:
        return User._default_manager.filter(username=username).first()
    found = list(User._default_manager.filter(email__iexact=email).order_by("pk")[:2])
    if len(found) > 1:
        raise OwnerStartRefused(f"Several users have the email {email}: name the one with --username")
    return found[0] if found else None


def owner_user_create(*, email: str, username: str | None, password: str, superuser: bool) -> AbstractBaseUser:
    User = get_user_model()
    manager: Any = User._default_manager
    create = manager.create_superuser if superuser else manager.create_user
    user: AbstractBaseUser = create(username=username or email, email=email, password=password)
    return user


def _owned_workspace(user: Any, name: str | None) -> Workspace | None:
    """The workspace the user owns (the one named `name`, when given, among several); None when they own none.
    Raises OwnerStartRefused when `name` is none of theirs: this step gives a user one workspace, never a second."""
    owned = list(
        Workspace.objects.filter(memberships__user=user, memberships__role=Role.OWNER, memberships__is_active=True)
        .distinct()
        .order_by("pk")
    )
    if not owned:
        return None
    if name is None:
        return owned[0]
    named = [workspace for workspace in owned if workspace.name.casefold() == name.casefold()]
    if named:
        return named[0]
    theirs = ", ".join(f'#{workspace.pk} "{workspace.name}"' for workspace in owned)
    raise OwnerStartRefused(
        f"{user.get_username()} already owns workspace {theirs}, and this command never makes a second one: leave "
        "out --workspace to use it (another workspace is added in admin)"
    )


@transaction.atomic
def owner_start(
    *,
    user: Any,
    workspace_name: str | None,
    program_settings: dict[str, Any],
    partner_name: str | None = None,
    partner_email: str = "",
    user_created: bool = False,
) -> OwnerStarted:
    """Gives the user a workspace they own (theirs if they have one), the program named in `program_settings`
    (validated by programs.api.serializers.ProgramCreateInputSerializer; found by name in the workspace, else
    made with its live and test keys) and, with `partner_name`, that partner enrolled in the program with an
    active referral link. Raises OwnerStartRefused."""
    # Two runs for one user at once would each find no workspace and make one: the user's row orders them.
    get_user_model()._default_manager.select_for_update().filter(pk=user.pk).first()
    workspace = _owned_workspace(user, workspace_name)
    workspace_created = workspace is None
    if workspace is None:
        workspace = Workspace.objects.create(name=workspace_name or program_settings["name"])
        Membership.objects.create(workspace=workspace, user=user, role=Role.OWNER)

    program = Program.objects.filter(workspace=workspace, name__iexact=program_settings["name"]).order_by("pk").first()
    api_key = test_api_key = None
    if program is None:
        created = program_create(workspace=workspace, **program_settings)
        program, api_key, test_api_key = created.program, created.api_key, created.test_api_key

    partner = link = None
    partner_created = link_created = False
    if partner_name:
        partner = Partner.objects.filter(workspace=workspace, name__iexact=partner_name).order_by("pk").first()
        if partner is None:
            partner = partner_create(workspace=workspace, name=partner_name, email=partner_email)
            partner_created = True
        partner_enroll(partner=partner, program=program)
        link = ReferralLink.objects.filter(program=program, partner=partner, is_active=True).order_by("pk").first()
        if link is None:
            link = referral_link_create(program=program, partner=partner)
            link_created = True

    return OwnerStarted(
        user=user,
        user_created=user_created,
        workspace=workspace,
        workspace_created=workspace_created,
        program=program,
        program_created=api_key is not None,
        api_key=api_key,
        test_api_key=test_api_key,
        partner=partner,
        partner_created=partner_created,
        link=link,
        link_created=link_created,
    )
