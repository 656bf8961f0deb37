"""Writes for programs and their keys. Raw keys leave these functions once and are never stored."""

import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TypedDict

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from core import messages
from core.errors import BadRequestError
from webhooks.events import event_emit
from webhooks.models import EventType
from webhooks.payloads import partner_enrolled_data

from .keys import (
    AGENT_KEY_PREFIX,
    PROGRAM_KEY_PREFIX,
    PROGRAM_TEST_KEY_PREFIX,
    generate_key,
    key_digest,
    key_prefix_of,
)
from .models import (
    AGENT_SCOPES,
    PERCENT_TYPES,
    AgentKey,
    CrossWorkspace,
    Partner,
    PartnerProgram,
    Program,
    ProgramKey,
    ReferralLink,
    RetiredProgramKey,
    Workspace,
    same_workspace,
)


class SettingsChanges(TypedDict, total=False):
    """An update of a program's settings, validated (programs.api.serializers.ProgramSettingsPatchSerializer)."""

    name: str
    domain: str
    commission_type: str
    commission_rate: Decimal
    duration_months: int
    cookie_duration: int
    hold_days: int
    lead_auth: str
    link_aliases: list[str]


_PREFIX_BY_MODE: dict[str, str] = {
    ProgramKey.Mode.LIVE: PROGRAM_KEY_PREFIX,
    ProgramKey.Mode.TEST: PROGRAM_TEST_KEY_PREFIX,
}


@dataclass(frozen=True)
class CreatedProgram:
    program: Program
    api_key: str
    test_api_key: str


@transaction.atomic
def program_create(
    *,
    workspace: Workspace,
    name: str,
    domain: str,
    commission_type: str,
    commission_rate: Decimal,
    duration_months: int = 0,
    cookie_duration: int = 30,
    hold_days: int = 30,
    lead_auth: str = "browser_allowed",
) -> CreatedProgram:
    """Creates a program with its live and test keys; the raw keys are returned once."""
    program = Program.objects.create(
        workspace=workspace,
        name=name,
        domain=domain,
        commission_type=commission_type,
        commission_rate=commission_rate,
        duration_months=duration_months,
        cookie_duration=cookie_duration,
        hold_days=hold_days,
        lead_auth=lead_auth,
    )
    live = _key_create(program=program, mode=ProgramKey.Mode.LIVE)
    test = _key_create(program=program, mode=ProgramKey.Mode.TEST)
    return CreatedProgram(program=program, api_key=live, test_api_key=test)


def _key_create(*, program: Program, mode: str) -> str:
    raw = generate_key(_PREFIX_BY_MODE[mode])
    key = ProgramKey(program=program, mode=mode)
    key.set_secret(raw, _PREFIX_BY_MODE[mode])
    key.save()
    return raw


@transaction.atomic
def program_key_regenerate(*, program: Program, mode: str = ProgramKey.Mode.LIVE) -> str:
    """Replaces the key in place: the old value stops authenticating when this commits, and any
    rotation flag is cleared. Returns the new raw key, the only time it is ever visible."""
    raw = generate_key(_PREFIX_BY_MODE[mode])
    key, created = ProgramKey.objects.select_for_update().get_or_create(
        program=program, mode=mode, defaults={"digest": key_digest(raw), "last4": raw[-4:]}
    )
    now = timezone.now()
    if not created:
        # Only the old digest is kept, so a call still sending the old key can be told when it was replaced.
        RetiredProgramKey.objects.update_or_create(
            digest=key.digest, defaults={"program": program, "mode": mode, "retired_at": now}
        )
    key.set_secret(raw, _PREFIX_BY_MODE[mode])
    key.created_at = now
    key.rotation_marked_at = None
    key.rotation_deadline = None
    key.save()
    return raw


def program_key_install(*, program: Program, raw_key: str, mode: str = ProgramKey.Mode.LIVE) -> ProgramKey:
    """Installs a key issued elsewhere, such as one from before the `aff_` prefix existed.
    Authentication matches the exact key, so such keys keep working."""
    key, _ = ProgramKey.objects.get_or_create(program=program, mode=mode, defaults={"last4": raw_key[-4:]})
    key.set_secret(raw_key, key_prefix_of(raw_key))
    key.rotation_marked_at = None
    key.rotation_deadline = None
    key.save()
    return key


def program_key_mark_rotation(*, key: ProgramKey, deadline: datetime) -> ProgramKey:
    """Flags a key: before the deadline responses warn, from the deadline on it is refused."""
    key.rotation_marked_at = timezone.now()
    key.rotation_deadline = deadline
    key.save(update_fields=["rotation_marked_at", "rotation_deadline"])
    return key


class AgentKeyInvalid(ValueError):
    """An agent key that cannot be issued as asked (unknown scope, program of another workspace)."""


def agent_key_scopes_check(scopes: Iterable[str]) -> list[str]:
    """The scopes, deduplicated in the canonical order; AgentKeyInvalid names any unknown one."""
    wanted = set(scopes)
    unknown = sorted(wanted - set(AGENT_SCOPES))
    if unknown:
        raise AgentKeyInvalid(f"Unknown scope(s): {', '.join(unknown)}. Known: {', '.join(AGENT_SCOPES)}")
    return [scope for scope in AGENT_SCOPES if scope in wanted]


def agent_key_issue(*, key: AgentKey) -> str:
    """Saves a new agent key and returns its raw value, the only time it is visible."""
    key.scopes = agent_key_scopes_check(key.scopes)
    raw = generate_key(AGENT_KEY_PREFIX)
    key.digest = key_digest(raw)
    key.last4 = raw[-4:]
    key.save()
    return raw


@transaction.atomic
def agent_key_create(
    *,
    workspace: Workspace,
    name: str,
    scopes: Iterable[str],
    programs: Iterable[Program] = (),
    expires_at: datetime | None = None,
) -> tuple[AgentKey, str]:
    """Issues a key for the workspace (limited to `programs` when given). Returns the key and its raw value,
    the only time that value is visible."""
    programs = list(programs)
    foreign = [program.pk for program in programs if program.workspace_id != workspace.pk]
    if foreign:
        raise AgentKeyInvalid(f"Program(s) {', '.join(map(str, foreign))} are not in workspace {workspace.pk}")
    key = AgentKey(workspace=workspace, name=name, scopes=list(scopes), expires_at=expires_at)
    raw = agent_key_issue(key=key)
    key.programs.set(programs)
    return key, raw


def agent_key_revoke(*, key: AgentKey) -> bool:
    """Revokes the key from now on. False when it was already revoked (the first revocation time stays)."""
    changed = AgentKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    key.refresh_from_db(fields=["revoked_at"])
    return bool(changed)


def commission_rate_check(*, commission_type: str, rate: Decimal) -> None:
    """A percentage rate (percent, recurring_percent) is at most 100. Raises BadRequestError."""
    if commission_type in PERCENT_TYPES and rate > 100:
        raise BadRequestError(messages.PROGRAM_RATE_OVER_100)


def program_settings_update(*, program_id: int, changes: SettingsChanges) -> Program:
    """Saves validated changes in one transaction. The row is locked first and the rate checked against it as
    it is now: two concurrent updates (one to a percent type, one raising the rate) would otherwise each pass
    against the old row and together break the percent-at-most-100 rule. Raises BadRequestError; nothing is
    saved then."""
    with transaction.atomic():
        program = Program.objects.select_for_update().get(pk=program_id)
        commission_rate_check(
            commission_type=changes.get("commission_type", program.commission_type),
            rate=changes.get("commission_rate", program.commission_rate),
        )
        if changes:
            for field, value in changes.items():
                setattr(program, field, value)
            # save() (not update()) so the link cache, which holds cookie_duration, is cleared.
            program.save(update_fields=list(changes))
    return program


def program_applications_set(*, program_id: int, applications_open: bool, applications_auto_approve: bool) -> Program:
    """Opens or closes the program's public application page (portal.applications) and says whether what
    arrives is approved at once. The row is locked while it is saved, as program_settings_update locks it, so the
    two writers of a program's settings take turns; the program returned is the row as saved."""
    with transaction.atomic():
        program = Program.objects.select_for_update().get(pk=program_id)
        program.applications_open = applications_open
        program.applications_auto_approve = applications_auto_approve
        # save() (not update()), as every program write, so post_save's receivers (the link cache) hear of it.
        program.save(update_fields=["applications_open", "applications_auto_approve"])
    return program


# --- Partners and referral links ---------------------------------------------------------------------------


def partner_create(*, workspace: Workspace, name: str, email: str = "") -> Partner:
    return Partner.objects.create(workspace=workspace, name=name, email=email)


def partner_update(*, partner_id: int, name: str | None = None, email: str | None = None) -> Partner:
    """Changes what is given; the row is locked so two updates never interleave."""
    with transaction.atomic():
        partner = Partner.objects.select_for_update().get(pk=partner_id)
        changed: list[str] = []
        if name is not None:
            partner.name = name
            changed.append("name")
        if email is not None:
            partner.email = email
            changed.append("email")
        if changed:
            partner.save(update_fields=changed)
    return partner


def partner_enroll(*, partner: Partner, program: Program) -> tuple[PartnerProgram, bool]:
    """Enrolls the partner in the program; True when it was not enrolled before. The unique (partner, program)
    constraint makes two concurrent enrolments one. Raises CrossWorkspace for a partner of another workspace."""
    same_workspace(program=program, partner=partner)
    with transaction.atomic():
        enrolment, created = PartnerProgram.objects.get_or_create(partner=partner, program=program)
        if created:
            event_emit(
                program_id=program.pk,
                type=EventType.PARTNER_ENROLLED,
                livemode=True,
                data=partner_enrolled_data(enrolment=enrolment, partner=partner),
                object_id=enrolment.pk,
            )
    return enrolment, created


# What tracking can match as an `aff` value and the column holds.
SHORT_LINK_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,100}")
_SLUG_MAX = 40
_GENERATED_ATTEMPTS = 5


class ReferralLinkInvalid(ValueError):
    """The link cannot be made as asked (partner not enrolled, malformed short link)."""


class PartnerNotEnrolled(ReferralLinkInvalid):
    pass


class ShortLinkInvalid(ReferralLinkInvalid):
    pass


class ShortLinkTaken(ReferralLinkInvalid):
    pass


def short_link_generate(partner: Partner) -> str:
    """A readable code from the partner's name with a random suffix, e.g. `ada-lovelace-k3x9q2`."""
    slug = slugify(partner.name)[:_SLUG_MAX].strip("-") or "link"
    return f"{slug}-{secrets.token_hex(3)}"


def referral_link_create(*, program: Program, partner: Partner, short_link: str | None = None) -> ReferralLink:
    """A live link of an enrolled partner (tracking refuses a link whose partner is not in its program).
    A chosen short_link already taken raises ShortLinkTaken; the unique constraint decides, so two concurrent
    creates of one code make one link. A generated code is retried on the rare collision."""
    try:
        same_workspace(program=program, partner=partner)
    except CrossWorkspace as error:
        raise PartnerNotEnrolled(error.message) from None
    if not PartnerProgram.objects.filter(partner=partner, program=program).exists():
        raise PartnerNotEnrolled("the partner is not enrolled in the program")
    if short_link is not None and not SHORT_LINK_PATTERN.fullmatch(short_link):
        raise ShortLinkInvalid("short_link must be 1 to 100 of A-Z a-z 0-9 _ -")
    attempts = 1 if short_link is not None else _GENERATED_ATTEMPTS
    for _ in range(attempts):
        code = short_link if short_link is not None else short_link_generate(partner)
        try:
            # A savepoint: a collision must not break the caller's transaction.
            with transaction.atomic():
                return ReferralLink.objects.create(short_link=code, partner=partner, program=program)
        except IntegrityError:
            continue
    raise ShortLinkTaken("short_link is taken")


def referral_link_deactivate(*, link_id: int) -> bool:
    """Turns the link off; False when it already was. save() (not update()) so tracking's link cache is cleared
    and the next click on it is refused at once."""
    with transaction.atomic():
        link = ReferralLink.objects.select_for_update().get(pk=link_id)
        if not link.is_active:
            return False
        link.is_active = False
        link.save(update_fields=["is_active"])
    return True


# --- Partner state (the dashboard's Partners page) -------------------------------------------------------------


class PartnerInactive(ReferralLinkInvalid):
    """The partner is deactivated: their links stay off until an owner reactivates them."""


def partner_deactivate(*, partner_id: int) -> int | None:
    """Deactivates the partner and turns off every active link of theirs, in one transaction; the number of links
    turned off, or None when the partner already was inactive. Each link is saved (not update()d) so tracking's
    link cache is cleared and the click's INSERT, which re-checks the row, refuses the next click at once (410).
    Commissions and the ledger are not touched: what the partner earned stays as it is."""
    with transaction.atomic():
        partner = Partner.objects.select_for_update().get(pk=partner_id)
        if not partner.is_active:
            return None
        links = list(ReferralLink.objects.select_for_update().filter(partner=partner, is_active=True).order_by("pk"))
        for link in links:
            link.is_active = False
            link.save(update_fields=["is_active"])
        partner.is_active = False
        partner.save(update_fields=["is_active"])
    return len(links)


def partner_reactivate(*, partner_id: int) -> bool:
    """Reactivates the partner; False when they already were active. Their links stay off: without a column
    saying why a link is off, the links the deactivation turned off cannot be told from those an owner had turned
    off before, so the owner turns on the ones they want (referral_link_activate)."""
    with transaction.atomic():
        partner = Partner.objects.select_for_update().get(pk=partner_id)
        if partner.is_active:
            return False
        partner.is_active = True
        partner.save(update_fields=["is_active"])
    return True


def partner_notes_update(*, partner_id: int, notes: str) -> Partner:
    with transaction.atomic():
        partner = Partner.objects.select_for_update().get(pk=partner_id)
        partner.notes = notes
        partner.save(update_fields=["notes"])
    return partner


def partner_link_create(*, program: Program, partner_id: int, short_link: str | None = None) -> ReferralLink:
    """referral_link_create for an active partner. The partner's row is locked first, so a deactivation running
    at the same time either waits for the new link (and turns it off) or is seen here (PartnerInactive)."""
    with transaction.atomic():
        partner = Partner.objects.select_for_update().get(pk=partner_id)
        if not partner.is_active:
            raise PartnerInactive("the partner is deactivated")
        return referral_link_create(program=program, partner=partner, short_link=short_link)


def referral_link_activate(*, link_id: int) -> bool:
    """Turns the link on; False when it already was on. A deactivated partner's link stays off (PartnerInactive);
    the partner's row is locked first, as in partner_deactivate, so the two never interleave."""
    with transaction.atomic():
        partner_id = ReferralLink.objects.filter(pk=link_id).values_list("partner_id", flat=True).get()
        if partner_id is not None and not Partner.objects.select_for_update().get(pk=partner_id).is_active:
            raise PartnerInactive("the partner is deactivated")
        link = ReferralLink.objects.select_for_update().get(pk=link_id)
        if link.is_active:
            return False
        link.is_active = True
        link.save(update_fields=["is_active"])
    return True
