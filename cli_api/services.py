"""Writes for the command-line helper: the `svc login` session (start, sign-in, one-time token hand-out), login
tokens, program creation for `svc init`, and `svc test-event` with its cap of 10 runs per program per hour."""

import base64
import hashlib
import logging
import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core import messages as core_messages
from core.errors import BadRequestError, ForbiddenError, NotFoundError, RateLimitedError, UnauthorizedError
from core.ids import id_parse
from programs.keys import generate_key, key_digest
from programs.models import Partner, PartnerProgram, Program, ReferralLink, Workspace
from programs.selectors import membership_get
from programs.services import CreatedProgram, program_create
from tracking.services.verification import verification_run

from . import messages
from .models import LOGIN_TOKEN_PREFIX, CliLoginSession, CliTestFixture, CliTestRun, CliToken, LoginStatus
from .selectors import account_is_suspended, advertiser_workspaces
from .tokens import IdTokenInvalid, id_token_verify

logger = logging.getLogger("svc.cli")

LOGIN_SESSION_LIFETIME = timedelta(minutes=5)
# A day past expiry nobody can poll or complete a login session any more; its row is only clutter.
LOGIN_SESSION_RETENTION = timedelta(days=1)
POLL_INTERVAL_SECONDS = 2
TOKEN_TOUCH_INTERVAL = timedelta(minutes=1)
TEST_RUNS_PER_HOUR = 10
TEST_RUN_WINDOW = timedelta(hours=1)


def _present(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def suspended_error() -> ForbiddenError:
    return ForbiddenError(messages.ACCOUNT_SUSPENDED, details={"code": messages.ACCOUNT_BLOCKED_CODE})


def user_code_for(state: str) -> str:
    """A short code derived from the state, shown by `svc login` and on the confirmation page, so the person
    confirming can tell that the login they approve is the one their terminal started."""
    letters = base64.b32encode(hashlib.sha256(b"svc-user-code:" + state.encode()).digest()).decode()[:8]
    return f"{letters[:4]}-{letters[4:]}"


# --- Login sessions ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartedLogin:
    session: CliLoginSession
    state: str  # returned to the caller once; only its digest is stored
    user_code: str


def login_session_start() -> StartedLogin:
    state = secrets.token_urlsafe(32)
    now = timezone.now()
    session = CliLoginSession.objects.create(
        state_digest=key_digest(state), created_at=now, expires_at=now + LOGIN_SESSION_LIFETIME
    )
    logger.info("cli.login_started", extra={"session_id": session.pk})
    return StartedLogin(session=session, state=state, user_code=user_code_for(state))


def _login_user(id_token: str, *, session_digest: str) -> User:
    """The account an id_token names, or the callback's refusal."""
    try:
        identity = id_token_verify(id_token, session_digest=session_digest)
    except IdTokenInvalid:
        raise UnauthorizedError(messages.CALLBACK_INVALID_ID_TOKEN) from None
    users = get_user_model().objects
    if identity.provider:
        # The account is matched by email, so an address the provider has not verified proves nothing.
        if not identity.email_verified:
            raise ForbiddenError(
                messages.PROVIDER_EMAIL_NOT_VERIFIED, details={"code": messages.PROVIDER_EMAIL_NOT_VERIFIED_CODE}
            )
        user = users.filter(email__iexact=identity.email).order_by("-is_active", "pk").first()
        if user is None:
            raise ForbiddenError(messages.CALLBACK_NO_ACCOUNT)
    else:
        user = users.filter(pk=identity.user_id).first() if identity.user_id is not None else None
        if user is None:
            raise UnauthorizedError(messages.CALLBACK_INVALID_ID_TOKEN)
    if account_is_suspended(user):
        raise suspended_error()
    return user


def _used(session: CliLoginSession) -> bool:
    return bool(session.authenticated_at or session.denied_at or session.consumed_at)


def login_session_complete(*, state: Any, id_token: Any) -> CliLoginSession:
    """auth/callback: records who signed in. Raises the CLI errors table's callback rows (and 401 for an id_token
    that fails verification); a refused callback changes nothing."""
    if not _present(state) or not _present(id_token):
        raise BadRequestError(messages.CALLBACK_MISSING_FIELDS)
    digest = key_digest(state)
    session = CliLoginSession.objects.filter(state_digest=digest).first()
    if session is None or _used(session):
        raise NotFoundError(messages.CALLBACK_SESSION_NOT_FOUND)
    if session.is_expired():
        raise BadRequestError(messages.CALLBACK_SESSION_EXPIRED)
    # Verified before taking the lock: a provider's keys may have to be fetched over the network.
    user = _login_user(id_token, session_digest=digest)
    with transaction.atomic():
        # Two callbacks for one state: the second waits here, then finds the session used.
        session = CliLoginSession.objects.select_for_update().get(pk=session.pk)
        now = timezone.now()
        if _used(session):
            raise NotFoundError(messages.CALLBACK_SESSION_NOT_FOUND)
        if session.is_expired(now):
            raise BadRequestError(messages.CALLBACK_SESSION_EXPIRED)
        session.user = user
        session.authenticated_at = now
        session.save(update_fields=["user", "authenticated_at"])
    logger.info("cli.login_authenticated", extra={"session_id": session.pk, "user_id": user.pk})
    return session


def login_session_deny(*, session: CliLoginSession) -> bool:
    """The person refused the login in the browser: the next poll answers `denied`. False when it was no longer
    pending."""
    denied = CliLoginSession.objects.filter(
        pk=session.pk,
        expires_at__gt=timezone.now(),
        authenticated_at__isnull=True,
        denied_at__isnull=True,
        consumed_at__isnull=True,
    ).update(denied_at=timezone.now())
    return bool(denied)


@dataclass(frozen=True)
class PollResult:
    status: str
    session: CliLoginSession
    token: CliToken | None = None
    raw_token: str = ""


def login_session_poll(*, state: Any) -> PollResult:
    """auth/poll: the session's state, and on the first poll after sign-in the login token, exactly once."""
    if not _present(state):
        raise BadRequestError(messages.POLL_MISSING_STATE)
    with transaction.atomic():
        # The row stays locked while the token is created, so two polls racing after sign-in cannot both pass
        # the "not consumed yet" check: the second waits, then sees consumed_at and gets the 400.
        session = CliLoginSession.objects.select_for_update().filter(state_digest=key_digest(state)).first()
        if session is None:
            raise NotFoundError(messages.POLL_SESSION_NOT_FOUND)
        now = timezone.now()
        status = session.status(now)
        if status == LoginStatus.CONSUMED:
            raise BadRequestError(messages.POLL_SESSION_CONSUMED)
        if status != LoginStatus.AUTHENTICATED:
            return PollResult(status=status, session=session)
        if session.user is None:  # the user was deleted since signing in
            raise NotFoundError(messages.POLL_SESSION_NOT_FOUND)
        # Claimed with a conditional UPDATE as well: SQLite has no row locks, and this keeps it one-time there too.
        if not CliLoginSession.objects.filter(pk=session.pk, consumed_at__isnull=True).update(consumed_at=now):
            raise BadRequestError(messages.POLL_SESSION_CONSUMED)
        token, raw = cli_token_create(user=session.user, session=session)
    logger.info("cli.login_token_issued", extra={"session_id": session.pk, "token_id": token.pk})
    return PollResult(status="complete", session=session, token=token, raw_token=raw)


def login_sessions_purge(*, now: datetime | None = None) -> int:
    """Deletes login sessions that expired more than LOGIN_SESSION_RETENTION ago. Tokens they issued stay (their
    link is set to null). Returns how many were deleted."""
    cutoff = (now or timezone.now()) - LOGIN_SESSION_RETENTION
    deleted, _ = CliLoginSession.objects.filter(expires_at__lt=cutoff).delete()
    return deleted


# --- Login tokens ----------------------------------------------------------------------------------------------


def cli_token_create(*, user: User, session: CliLoginSession | None = None) -> tuple[CliToken, str]:
    """A new login token; the raw value is returned here once and never stored."""
    raw = generate_key(LOGIN_TOKEN_PREFIX)
    now = timezone.now()
    token = CliToken.objects.create(
        user=user,
        session=session,
        digest=key_digest(raw),
        last4=raw[-4:],
        created_at=now,
        expires_at=now + timedelta(days=settings.CLI_TOKEN_LIFETIME_DAYS),
    )
    return token, raw


def cli_token_revoke(*, token: CliToken) -> bool:
    """Revokes at once; False when it already was."""
    return bool(cli_tokens_revoke(queryset=CliToken.objects.filter(pk=token.pk)))


def cli_tokens_revoke(*, queryset: QuerySet[CliToken]) -> int:
    return queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def cli_token_touch(*, token: CliToken) -> None:
    """Notes when a token was last used, at most once a minute so a busy script does not write on every call."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= TOKEN_TOUCH_INTERVAL:
        CliToken.objects.filter(pk=token.pk).update(last_used_at=now)


# --- svc init ---------------------------------------------------------------------------------------------------


def advertiser_resolve(*, user: User, advertiser_id: Any) -> Workspace:
    """The workspace a new program goes to: `advertiser_id` when it is one the user may create programs in,
    otherwise (omitted) the account's default advertiser."""
    workspaces = advertiser_workspaces(user)
    if not workspaces:
        raise ForbiddenError(messages.NO_ADVERTISER)
    if advertiser_id is None or advertiser_id == "":
        return workspaces[0]
    if isinstance(advertiser_id, bool) or not isinstance(advertiser_id, int | str):
        raise ForbiddenError(messages.ADVERTISER_MISMATCH)
    wanted = str(advertiser_id).strip()
    for workspace in workspaces:
        if wanted == str(workspace.pk):
            return workspace
    raise ForbiddenError(messages.ADVERTISER_MISMATCH)


def cli_program_resolve(*, user: User, program_id: object, action: str) -> Program:
    """The program of a login-token route (svc listen, svc trigger) when the user's active membership allows the
    action: 404 when there is no such program or the user is not a member of its workspace (another workspace's
    program is as unknown as one that never existed), 403 when the role lacks the action."""
    pk = id_parse(program_id)
    program = Program.objects.filter(pk=pk).first() if pk is not None else None
    membership = membership_get(user=user, program=program) if program is not None else None
    if program is None or membership is None:
        raise NotFoundError(core_messages.PROGRAM_NOT_FOUND)
    if not membership.allows(action):
        raise ForbiddenError(core_messages.PERMISSION_DENIED)
    return program


def cli_program_create(*, user: User, workspace: Workspace, settings: dict[str, Any]) -> CreatedProgram:
    """POST /api/v1/cli/init: the program with its live and test keys, from settings validated by
    programs.api.serializers.CliInitInputSerializer, in a workspace from advertiser_resolve."""
    created = program_create(workspace=workspace, **settings)
    logger.info("cli.program_created", extra={"program_id": created.program.pk, "user_id": user.pk})
    return created


# --- svc test-event ---------------------------------------------------------------------------------------------


def _usable_links(program: Program) -> QuerySet[ReferralLink]:
    return ReferralLink.objects.filter(program=program, is_active=True, partner__isnull=False)


def verification_fixture_ensure(*, program: Program) -> CliTestFixture | None:
    """The synthetic chain clicks through an active link with a partner. A program that has one is left alone;
    one that has none gets (or gets back) a partner "svc verification" and a link of its own, recorded so later
    runs reuse it. Call inside a transaction holding the program's lock."""
    if _usable_links(program).exists():
        return None
    now = timezone.now()
    fixture, _ = CliTestFixture.objects.get_or_create(program=program, defaults={"created_at": now})
    if fixture.partner is None:
        fixture.partner = Partner.objects.create(workspace=program.workspace, name="svc verification")
    PartnerProgram.objects.get_or_create(partner=fixture.partner, program=program)
    link = fixture.link
    if link is None or link.program_id != program.pk:
        link = ReferralLink(
            short_link=f"svc-verify-{program.pk}-{secrets.token_hex(4)}", program=program, is_synthetic=True
        )
    link.partner = fixture.partner
    link.is_active = True
    link.save()
    fixture.link = link
    fixture.refreshed_at = now
    fixture.save()
    return fixture


def _capped_error(*, oldest: datetime, now: datetime) -> RateLimitedError:
    seconds = max(1, math.ceil((oldest + TEST_RUN_WINDOW - now).total_seconds()))
    return RateLimitedError.retry_after(
        messages.TEST_EVENT_CAPPED.format(limit=TEST_RUNS_PER_HOUR, seconds=seconds), seconds=seconds
    )


@dataclass(frozen=True)
class CliTestEventOutcome:
    result: dict[str, Any]
    runs_remaining: int


def cli_test_event_run(*, program: Program, request_id: str = "") -> CliTestEventOutcome:
    """POST /api/v1/cli/test-event: runs the synthetic click, lead, sale chain, at most TEST_RUNS_PER_HOUR times per
    program in any rolling hour. Raises the typed 429 (retry_after_seconds = until the oldest run in the window
    leaves it) and then changes nothing."""
    with transaction.atomic():
        # The program's row lock serializes count-then-insert across requests and server instances, so ten
        # concurrent calls cannot all see nine runs. The chain itself runs after the lock is released.
        Program.objects.select_for_update().filter(pk=program.pk).values_list("pk", flat=True).first()
        now = timezone.now()
        window = list(
            CliTestRun.objects.filter(program=program, created_at__gt=now - TEST_RUN_WINDOW)
            .order_by("created_at")
            .values_list("created_at", flat=True)[:TEST_RUNS_PER_HOUR]
        )
        if len(window) >= TEST_RUNS_PER_HOUR:
            raise _capped_error(oldest=window[0], now=now)
        verification_fixture_ensure(program=program)
        run = CliTestRun.objects.create(program=program, created_at=now)
    result = verification_run(program=program, request_id=request_id)
    CliTestRun.objects.filter(pk=run.pk).update(run_id=result.get("run_id", ""), success=bool(result.get("success")))
    logger.info(
        "cli.test_event",
        extra={"program_id": program.pk, "run_id": result.get("run_id"), "success": result.get("success")},
    )
    return CliTestEventOutcome(result=result, runs_remaining=TEST_RUNS_PER_HOUR - len(window) - 1)
