"""Partner accounts and invitations: how a person becomes a partner who signs in to the portal.

An owner or admin invites a partner by email (invitation_create): the partner row of the program's workspace
with that email is used, or made, and an email carries a one-time link. Following it (invitation_accept) the
person sets a password, or signs in with the one they have (one account per email, across every workspace of
the installation), and the partner is enrolled in the program.

An application (from the program's public page, portal.applications) is decided here too: approval is an
invitation, in words that say it answers the application; a refusal sends no email, since the address was typed by
whoever filled the form, so it may be someone else's. An application from a group's page (/join/<id>/<slug>) names
the group on its first line (GROUP_LINE): approval puts the partner in that group once they are enrolled, at once
when they are already, else when they accept the invitation."""

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from smtplib import SMTPException

from django.conf import settings
from django.contrib.auth.hashers import check_password, make_password
from django.contrib.auth.models import AnonymousUser, User
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone

from core.urls import public_url
from groups.models import GroupChange, PartnerGroup
from groups.services import Move, partner_move
from programs.keys import key_digest
from programs.models import Partner, PartnerAccount, PartnerApplication, PartnerInvitation, PartnerProgram, Program

# The name application messages have always been logged under.
applications_logger = logging.getLogger("portal.applications")

INVITATION_DAYS = 7
MIN_PASSWORD_LENGTH = 10
INVITATION_SUBJECT = "You are invited to the {program} partner program"
INVITATION_INTRO = "{inviter} invites you to the {program} partner program."
INVITATION_BODY = """{intro}

Accept the invitation and set your password here (the link works once, until {expires} UTC):
{link}

If you did not expect this email, ignore it: nothing happens until the link is followed."""
APPROVED_SUBJECT = "Your application to the {program} partner program is approved"
APPROVED_INTRO = "Thank you for applying to the {program} partner program: your application is approved, welcome!"
# The first line of the promotion text of an application from a group's page. PartnerApplication has no column for
# the group: this line is how approval finds it (only a group still open to applications is ever joined this way).
GROUP_LINE = "Applied to the group: {name} [{slug}]"
_GROUP_LINE = re.compile(r"Applied to the group: .* \[(?P<slug>[-a-zA-Z0-9_]{1,100})\]")


def account_email(email: str) -> str:
    """The form every account's email is stored and looked up in."""
    return email.strip().lower()


def account_get(email: str) -> PartnerAccount | None:
    return PartnerAccount.objects.filter(email=account_email(email)).first()


def account_authenticate(email: str, password: str) -> PartnerAccount | None:
    """The active account with this email and password; None otherwise. An unknown email costs a password hash
    all the same, so the answer's time does not tell which emails have accounts."""
    account = account_get(email)
    if account is None or not account.password:
        make_password(password)
        return None
    if not check_password(password, account.password) or not account.is_active:
        return None
    return account


def account_password_set(account: PartnerAccount, password: str) -> None:
    """Sets the password and ends every portal session made before (session_epoch)."""
    account.password = make_password(password)
    account.session_epoch += 1
    account.save(update_fields=["password", "session_epoch"])


@dataclass(frozen=True)
class InvitationSent:
    invitation: PartnerInvitation
    link: str


def invitation_create(
    *,
    program: Program,
    name: str,
    email: str,
    invited_by: User | AnonymousUser | None = None,
    request: HttpRequest | None = None,
    subject: str | None = None,
    intro: str | None = None,
) -> InvitationSent:
    """Invites `email` to `program`: the workspace's partner with that email (or a new one named `name`), a
    one-time link valid INVITATION_DAYS, and the email that carries it. Returns the invitation and its link (the
    link is stored nowhere: only its digest). `subject` and `intro` (the email's first paragraph), when given,
    replace the invitation's own words: an approved application's email says why it comes."""
    email = account_email(email)
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        partner = Partner.objects.filter(workspace_id=program.workspace_id, email__iexact=email).order_by("pk").first()
        if partner is None:
            partner = Partner.objects.create(workspace_id=program.workspace_id, name=name or email, email=email)
        invitation = PartnerInvitation.objects.create(
            program=program,
            partner=partner,
            email=email,
            digest=key_digest(token),
            invited_by=invited_by if isinstance(invited_by, User) else None,
            expires_at=timezone.now() + timedelta(days=INVITATION_DAYS),
        )
    link = public_url(request, f"/portal/invitations/{token}")
    inviter = invited_by.get_username() if isinstance(invited_by, User) else "The program's team"
    send_mail(
        subject if subject is not None else INVITATION_SUBJECT.format(program=program.name),
        INVITATION_BODY.format(
            intro=intro if intro is not None else INVITATION_INTRO.format(inviter=inviter, program=program.name),
            link=link,
            expires=invitation.expires_at.strftime("%Y-%m-%d %H:%M"),
        ),
        settings.DEFAULT_FROM_EMAIL,
        [email],
    )
    return InvitationSent(invitation=invitation, link=link)


class InvitationUnusable(Exception):
    """The invitation was used already, or has expired."""


def invitation_find(token: str) -> PartnerInvitation | None:
    """The invitation this link's token names (used or not); None for a token nobody was sent."""
    if not token or len(token) > 128:
        return None
    return PartnerInvitation.objects.select_related("program", "partner").filter(digest=key_digest(token)).first()


def invitation_usable(invitation: PartnerInvitation) -> bool:
    return invitation.accepted_at is None and invitation.expires_at > timezone.now()


def invitation_accept(invitation: PartnerInvitation, *, account: PartnerAccount) -> None:
    """Uses the invitation for `account` (one with a password: made or signed in by the caller): the partner is
    now `account`'s, and enrolled in the program. Once only: a second use, concurrent or not, raises
    InvitationUnusable, as does an expired invitation or a partner already another account's."""
    with transaction.atomic():
        locked = PartnerInvitation.objects.select_for_update().get(pk=invitation.pk)
        if not invitation_usable(locked):
            raise InvitationUnusable
        partner = Partner.objects.select_for_update().get(pk=locked.partner_id)
        if partner.account_id not in (None, account.pk):
            raise InvitationUnusable
        partner.account = account
        partner.save(update_fields=["account"])
        enrolment, enrolled = PartnerProgram.objects.get_or_create(partner=partner, program_id=locked.program_id)
        locked.accepted_at = timezone.now()
        locked.save(update_fields=["accepted_at"])
        if enrolled:
            applied = (
                PartnerApplication.objects.filter(
                    partner=partner, program_id=locked.program_id, status=PartnerApplication.Status.APPROVED
                )
                .order_by("-decided_at", "-pk")
                .first()
            )
            if applied is not None:
                application_group_join(application=applied, enrolment=enrolment)


def account_create(email: str, password: str) -> PartnerAccount:
    """A new account with this email and password. Raises IntegrityError when the email has one."""
    account = PartnerAccount(email=account_email(email), password=make_password(password))
    with transaction.atomic():
        account.save(force_insert=True)
    return account


class ApplicationDecided(Exception):
    """The application was approved or rejected already: nothing was changed."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


def application_submit(
    *,
    program: Program,
    name: str,
    email: str,
    website: str,
    promotion: str,
    request: HttpRequest | None = None,
    group: PartnerGroup | None = None,
    answers: list[dict[str, str]] | None = None,
) -> None:
    """Records an application to `program` (the email lowercased). A second one of the same email while the first
    waits changes nothing. Where the program approves applications as they arrive, it is approved at once (the
    invitation's link is made for `request`'s host when PUBLIC_BASE_URL is not set)."""
    try:
        with transaction.atomic():
            application = PartnerApplication.objects.create(
                program=program,
                name=name,
                email=account_email(email),
                website=website,
                promotion=promotion,
                group=group,
                answers=answers or [],
            )
    except IntegrityError:  # application_one_pending: this email's application is waiting already
        return
    if program.applications_auto_approve:
        # Outside the insert's transaction: were the email to fail, the application stays pending for an owner.
        try:
            application_approve(application=application, decided_by=None, request=request)
        except (SMTPException, OSError):
            applications_logger.exception(
                "application %s: the invitation email failed; it waits for a decision", application.pk
            )


def application_approve(
    *, application: PartnerApplication, decided_by: User | None, request: HttpRequest | None = None
) -> InvitationSent:
    """Approves a pending application: the applicant is invited to the program (partner made or reused, the portal
    link emailed). The row stays locked until the invitation is made and sent, so two approvals at once make one
    invitation. Raises ApplicationDecided when it was decided already; should the email fail, its error is raised
    and nothing is changed."""
    with transaction.atomic():
        locked = PartnerApplication.objects.select_for_update().select_related("program").get(pk=application.pk)
        if locked.status != PartnerApplication.Status.PENDING:
            raise ApplicationDecided(locked.status)
        program = locked.program
        sent = invitation_create(
            program=program,
            name=locked.name,
            email=locked.email,
            invited_by=decided_by,
            request=request,
            subject=APPROVED_SUBJECT.format(program=program.name),
            intro=APPROVED_INTRO.format(program=program.name),
        )
        _decide(locked, PartnerApplication.Status.APPROVED, decided_by, partner_id=sent.invitation.partner_id)
        enrolment = PartnerProgram.objects.filter(partner_id=sent.invitation.partner_id, program=program).first()
        if enrolment is not None:  # a partner of the program already; a new one joins the group on accepting
            application_group_join(application=locked, enrolment=enrolment)
    application.refresh_from_db()
    return sent


def group_line_neutralized(promotion: str) -> str:
    """An applicant's own words from the program's page, never read as a group's line (a blank line before it)."""
    if _GROUP_LINE.fullmatch(promotion.split("\n", 1)[0].strip()):
        return "\n" + promotion
    return promotion


def application_group(application: PartnerApplication) -> PartnerGroup | None:
    """The group the application was sent from (PartnerApplication.group), when that group of its program is still
    open to applications; None for an application from the program's own page. The text's first line (GROUP_LINE)
    only shows owners the group: it decides nothing."""
    if application.group_id is None:
        return None
    return PartnerGroup.objects.filter(
        pk=application.group_id, program_id=application.program_id, applications_open=True
    ).first()


def application_group_join(*, application: PartnerApplication, enrolment: PartnerProgram) -> GroupChange | None:
    """Puts the approved applicant's enrolment in the group they applied to (groups.services.partner_move, reason
    application); nothing for an application to the program itself."""
    group = application_group(application)
    if group is None:
        return None
    return partner_move(
        enrolment=enrolment,
        group=group,
        move=Move(reason=GroupChange.Reason.APPLICATION, actor=f"application {application.pk}"),
    )


def application_reject(*, application: PartnerApplication, decided_by: User | None) -> None:
    """Rejects a pending application, without an email (see the module's docstring); raises ApplicationDecided
    when it was decided already."""
    with transaction.atomic():
        locked = PartnerApplication.objects.select_for_update().get(pk=application.pk)
        if locked.status != PartnerApplication.Status.PENDING:
            raise ApplicationDecided(locked.status)
        _decide(locked, PartnerApplication.Status.REJECTED, decided_by)
    application.refresh_from_db()


def _decide(
    application: PartnerApplication, status: str, decided_by: User | None, partner_id: int | None = None
) -> None:
    application.status = status
    application.decided_by = decided_by if isinstance(decided_by, User) else None
    application.decided_at = timezone.now()
    fields = ["status", "decided_by", "decided_at"]
    if partner_id is not None:
        application.partner_id = partner_id
        fields.append("partner")
    application.save(update_fields=fields)
