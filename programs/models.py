from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import ClassVar

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.signals import m2m_changed
from django.dispatch import receiver
from django.utils import timezone
from django.utils.functional import cached_property

from .keys import key_digest, mask_key
from .link_aliases import validate_link_aliases


class Workspace(models.Model):
    """The advertiser account: owns programs, has members."""

    name = models.CharField(max_length=200)
    is_blocked = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return self.name


# --- One workspace per relation --------------------------------------------------------------------------------
# A row that ties objects together (an enrolment, a link, a commission, a ledger entry, an event) ties objects of
# one workspace: a partner of one workspace is never in another's program. The rows' clean() checks it (so every
# admin form does, raw-id fields included) and so do the services that write them.

CROSS_WORKSPACE = "{name} #{pk} belongs to workspace {workspace}, not to workspace {expected} of {anchor} #{anchor_pk}"


AGENT_KEY_WITHOUT_WORKSPACE = "Agent key #{pk} belongs to no workspace, so it cannot be limited to programs"


class CrossWorkspace(ValidationError):
    """Objects of different workspaces in one relation; the message names both."""


def workspace_id_of(obj: models.Model) -> int | None:
    """The workspace a row belongs to: its own (a program, partner, agent key), else its program's (a link, a
    customer, an event, a commission), else its partner's or its commission's. None when nothing says."""
    if isinstance(obj, Workspace):
        return obj.pk
    own: int | None = getattr(obj, "workspace_id", None)
    if own is not None:
        return own
    for via in ("program", "partner", "commission"):
        if getattr(obj, f"{via}_id", None) is not None:
            return workspace_id_of(getattr(obj, via))
    return None


def same_workspace(**objects: models.Model | None) -> None:
    """Raises CrossWorkspace unless every object given (None: not set, skipped) belongs to the workspace of the
    first one that says which; the keywords only order them."""
    anchor: tuple[models.Model, int] | None = None
    for obj in objects.values():
        workspace_id = workspace_id_of(obj) if obj is not None else None
        if obj is None or workspace_id is None:
            continue
        if anchor is None:
            anchor = (obj, workspace_id)
        elif workspace_id != anchor[1]:
            raise CrossWorkspace(
                CROSS_WORKSPACE.format(
                    name=str(obj._meta.verbose_name).capitalize(),
                    pk=obj.pk,
                    workspace=workspace_id,
                    expected=anchor[1],
                    anchor=anchor[0]._meta.verbose_name,
                    anchor_pk=anchor[0].pk,
                )
            )


def related_set(instance: models.Model, *fields: str) -> dict[str, models.Model | None]:
    """The objects the instance's foreign keys name, None for a key not set or naming no row (which the field's
    own validation reports)."""
    related: dict[str, models.Model | None] = {}
    for field in fields:
        try:
            related[field] = getattr(instance, field) if getattr(instance, f"{field}_id") is not None else None
        except ObjectDoesNotExist:
            related[field] = None
    return related


WORKSPACE_MOVE_REFUSED = "{name} #{pk} has {related} in workspace {workspace}, so it stays in that workspace"


def workspace_move_check(instance: models.Model, *related_names: str) -> None:
    """For a row others point at (a program, a partner): its workspace may change only while no row of
    `related_names` ties it to its workspace, as moving it would leave those rows tying two workspaces."""
    if instance.pk is None:
        return
    stored = type(instance)._default_manager.filter(pk=instance.pk).values_list("workspace_id", flat=True).first()
    if stored is None or stored == getattr(instance, "workspace_id", None):
        return
    for name in related_names:
        related = getattr(instance, name)
        if related.exists():
            raise CrossWorkspace(
                WORKSPACE_MOVE_REFUSED.format(
                    name=str(instance._meta.verbose_name).capitalize(),
                    pk=instance.pk,
                    related=related.model._meta.verbose_name_plural,
                    workspace=stored,
                )
            )


class SameWorkspace:
    """Model mixin: clean() refuses a row whose related objects (`workspace_relations`, foreign key names, the
    first the reference) belong to different workspaces."""

    workspace_relations: ClassVar[tuple[str, ...]] = ()

    def clean(self) -> None:
        super().clean()  # type: ignore[misc]
        assert isinstance(self, models.Model)
        same_workspace(**related_set(self, *self.workspace_relations))


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"


class Action:
    TRACKING_LIST = "tracking:list"
    TRACKING_TEST = "tracking:test"
    PROGRAM_MANAGE = "program:manage"
    PROGRAM_REGENERATE_KEY = "program:regenerate_key"


ROLE_ACTIONS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(
        {Action.TRACKING_LIST, Action.TRACKING_TEST, Action.PROGRAM_MANAGE, Action.PROGRAM_REGENERATE_KEY}
    ),
    Role.ADMIN: frozenset({Action.TRACKING_LIST, Action.TRACKING_TEST, Action.PROGRAM_MANAGE}),
    Role.MEMBER: frozenset({Action.TRACKING_LIST}),
}


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"

    def allows(self, action: str) -> bool:
        return self.is_active and action in ROLE_ACTIONS.get(self.role, frozenset())


class CommissionType(models.TextChoices):
    PERCENT = "percent", "Percent of every sale except renewals"
    FIXED = "fixed", "Fixed amount on every sale except renewals"
    RECURRING_PERCENT = "recurring_percent", "Percent of every sale, renewals included, for duration_months"
    RECURRING_FIXED = "recurring_fixed", "Fixed amount on every sale, renewals included, for duration_months"


PERCENT_TYPES = frozenset({CommissionType.PERCENT, CommissionType.RECURRING_PERCENT})
RECURRING_TYPES = frozenset({CommissionType.RECURRING_PERCENT, CommissionType.RECURRING_FIXED})


class LeadAuth(models.TextChoices):
    BROWSER_ALLOWED = "browser_allowed", "Browser leads settle at once"
    SERVER_REQUIRED = "server_required", "Browser leads stay provisional until confirmed"


# What an owner may change on an existing program (PATCH /api/v1/programs/:id/settings), in check order.
EDITABLE_SETTINGS = (
    "name",
    "domain",
    "commission_type",
    "commission_rate",
    "duration_months",
    "cookie_duration",
    "hold_days",
    "lead_auth",
    "link_aliases",
)
# The rate column holds 14 digits, 4 after the point; a larger rate would fail in the database.
COMMISSION_RATE_MAX = Decimal("9999999999.9999")
# A hundred years. Larger values would overflow the date arithmetic of the recurring period.
DURATION_MONTHS_MAX = 1200


class Program(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="programs")
    name = models.CharField(max_length=200)
    domain = models.CharField(max_length=253)
    commission_type = models.CharField(max_length=32, choices=CommissionType.choices, default=CommissionType.PERCENT)
    # Percent for the percent types (at most 100), an amount in the smallest currency unit otherwise.
    commission_rate = models.DecimalField(
        max_digits=14,
        decimal_places=4,
        default=Decimal("20"),
        validators=[MinValueValidator(Decimal("0.0001"))],
    )
    duration_months = models.PositiveIntegerField(default=0, help_text="Recurring commissions: 0 = lifetime")
    cookie_duration = models.PositiveSmallIntegerField(
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(365)],
        help_text="Attribution window, days",
    )
    hold_days = models.PositiveIntegerField(default=30, help_text="Commission hold period, days")
    lead_auth = models.CharField(max_length=32, choices=LeadAuth.choices, default=LeadAuth.BROWSER_ALLOWED)
    # The connected Stripe account whose payment events record sales for this program.
    stripe_account_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    stripe_connected_at = models.DateTimeField(null=True, blank=True)
    partner_codes_allowed = models.BooleanField(
        default=False,
        help_text="Partners may make links with codes of their own choosing in the partner portal (/portal/links)",
    )
    applications_open = models.BooleanField(
        default=False, help_text="Anyone may apply to become a partner on the program's public page (/join/<id>)"
    )
    applications_auto_approve = models.BooleanField(
        default=False, help_text="Applications are approved as they arrive (otherwise an owner or admin decides)"
    )
    # Extra query parameters a landing URL may carry the code in, after aff and via (programs.link_aliases).
    link_aliases = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_link_aliases],
        help_text="Query parameters read like ?via= (e.g. fpr), in order, after aff and via. Empty: off",
    )
    # The last first-party call (the tracker served from the shop's own origin, tracking.services.first_party),
    # written at most once an hour: readiness names the cookie's mode from it.
    first_party_seen_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(commission_rate__gt=0), name="program_rate_positive"),
            models.CheckConstraint(
                condition=Q(cookie_duration__gte=1, cookie_duration__lte=365), name="program_cookie_range"
            ),
            models.CheckConstraint(
                condition=~Q(commission_type__in=sorted(PERCENT_TYPES)) | Q(commission_rate__lte=100),
                name="program_percent_at_most_100",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"

    def clean(self) -> None:
        super().clean()
        workspace_move_check(self, "partner_links", "links", "agent_keys", "commissions")

    @property
    def cookie_window_days(self) -> int:
        return self.cookie_duration

    @property
    def api_token_masked(self) -> str:
        live = next((key for key in self.keys.all() if key.is_live), None)
        return live.masked if live else ""


class ProgramKeyQuerySet(models.QuerySet["ProgramKey"]):
    def live(self) -> "ProgramKeyQuerySet":
        """Live keys: the one rule for "a program's live key" (ProgramKey.is_live for rows already read)."""
        return self.filter(mode=ProgramKey.Mode.LIVE)


class ProgramKey(models.Model):
    """A program API key, kept only as its SHA-256 digest. One live and one test key per program;
    regenerating rewrites the row, so the old value stops matching at once."""

    class Mode(models.TextChoices):
        LIVE = "live", "Live"
        TEST = "test", "Test"

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="keys")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.LIVE)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, blank=True, default="")
    last4 = models.CharField(max_length=4)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    rotation_marked_at = models.DateTimeField(null=True, blank=True)
    rotation_deadline = models.DateTimeField(null=True, blank=True)

    objects = ProgramKeyQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["program", "mode"], name="program_key_one_per_mode")]

    def __str__(self) -> str:
        return f"{self.masked} ({self.mode}, program #{self.program_id})"

    @property
    def is_live(self) -> bool:
        """ProgramKeyQuerySet.live's rule, for keys already read (prefetched)."""
        return self.mode == self.Mode.LIVE

    @property
    def masked(self) -> str:
        return mask_key(self.prefix, self.last4)

    @property
    def is_test(self) -> bool:
        return self.mode == self.Mode.TEST

    @property
    def rotation_flagged(self) -> bool:
        return self.rotation_deadline is not None

    def is_retired(self, now: datetime | None = None) -> bool:
        return self.rotation_deadline is not None and (now or timezone.now()) >= self.rotation_deadline

    def rotation(self, now: datetime | None = None) -> "KeyRotation":
        return KeyRotation(
            flagged=self.rotation_flagged,
            retired=self.is_retired(now),
            marked_at=self.rotation_marked_at,
            deadline=self.rotation_deadline,
        )

    def set_secret(self, raw_key: str, prefix: str) -> None:
        self.digest = key_digest(raw_key)
        self.prefix = prefix
        self.last4 = raw_key[-4:]


class RetiredProgramKey(models.Model):
    """The digest of a key that regeneration replaced: never the key itself, only enough to recognise it when a
    backend still sends it and say when it was replaced (the integration debugger's diagnosis)."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="retired_keys")
    digest = models.CharField(max_length=64, unique=True)
    mode = models.CharField(max_length=8, choices=ProgramKey.Mode.choices, default=ProgramKey.Mode.LIVE)
    retired_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"retired {self.mode} key of program #{self.program_id}"


@dataclass(frozen=True)
class KeyRotation:
    """Where a key stands in its rotation: flagged once marked for it (answers carry warnings), retired once
    its deadline has passed (every call is refused). A missing key is neither."""

    flagged: bool = False
    retired: bool = False
    marked_at: datetime | None = None
    deadline: datetime | None = None

    @classmethod
    def of(cls, key: ProgramKey | None, now: datetime | None = None) -> "KeyRotation":
        return key.rotation(now) if key is not None else cls()


# Agent API scopes: read and write per resource. Write includes read (as with Stripe's restricted keys).
AGENT_RESOURCES = ("programs", "partners", "links", "events", "commissions", "payouts", "webhooks", "groups")
AGENT_SCOPES = tuple(f"{resource}:{access}" for resource in AGENT_RESOURCES for access in ("read", "write"))


class AgentKey(models.Model):
    """Operator-issued key for the agent API (`agt_`): one workspace, optionally only some of its programs,
    with scopes and an optional expiry. Issued in admin or with `manage.py agent_key`, never through the API."""

    name = models.CharField(max_length=200)
    # Nullable only for keys issued before keys were bound to a workspace; such a key never authenticates.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agent_keys", null=True, blank=True)
    programs = models.ManyToManyField(
        Program, blank=True, related_name="agent_keys", help_text="Leave empty for every program of the workspace"
    )
    digest = models.CharField(max_length=64, unique=True, editable=False)
    last4 = models.CharField(max_length=4, editable=False)
    scopes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.masked})"

    @property
    def masked(self) -> str:
        return mask_key("agt_", self.last4)

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and (now or timezone.now()) >= self.expires_at

    @cached_property
    def limited_program_ids(self) -> list[int] | None:
        """The programs the key is limited to, or None for every program of its workspace (read once)."""
        return sorted(self.programs.values_list("pk", flat=True)) or None

    def allows(self, scope: str) -> bool:
        """`resource:read` is granted by `resource:read` or `resource:write`."""
        resource, _, access = scope.partition(":")
        return scope in self.scopes or (access == "read" and f"{resource}:write" in self.scopes)


class PartnerAccount(models.Model):
    """A person who signs in to the partner portal (/portal/): one sign-in for every Partner row, of any workspace,
    that names it. Never a dashboard user: owners sign in as django.contrib.auth users, with their own session
    cookie; a partner's sign-in has its own cookie, limited to /portal/ (portal.session)."""

    email = models.EmailField(unique=True)  # stored lowercased (partner_account_email)
    password = models.CharField(max_length=128)  # django.contrib.auth.hashers; "" until one is set
    is_active = models.BooleanField(default=True)
    # Moved on by "sign out everywhere" and a password change: a portal session made before holds no more.
    session_epoch = models.PositiveIntegerField(default=0)
    last_login = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return self.email


class Partner(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="partners")
    name = models.CharField(max_length=200)
    email = models.EmailField(blank=True, default="")
    # Who signs in to the portal as this partner (set when they accept an invitation); null: nobody yet.
    account = models.ForeignKey(
        PartnerAccount, on_delete=models.SET_NULL, null=True, blank=True, related_name="partners"
    )
    # Deactivated by an owner: the partner's links answer 410, their unpaid commissions stay as they are.
    is_active = models.BooleanField(default=True)
    # The owners' own notes on the partner; never shown to the partner.
    notes = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        workspace_move_check(self, "program_links", "links", "commissions", "ledger", "withdrawals")


class PartnerProgram(SameWorkspace, models.Model):
    """A partner's membership in a program, with its running counts (real events only). Sales and revenue are
    gross (refunds do not change them); what the partner's commissions pay is read from the commissions."""

    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="program_links")
    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="partner_links")
    clicks = models.PositiveBigIntegerField(default=0)
    leads = models.PositiveBigIntegerField(default=0)
    sales = models.PositiveBigIntegerField(default=0)
    revenue_cents = models.BigIntegerField(default=0)
    # The partner's group in this program (groups.models.PartnerGroup); NULL is the program's default group.
    group = models.ForeignKey(
        "groups.PartnerGroup", on_delete=models.RESTRICT, null=True, blank=True, related_name="enrolments"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("program", "partner")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["partner", "program"], name="partner_program_unique")]

    def __str__(self) -> str:
        return f"{self.partner} in {self.program}"


class ReferralLink(SameWorkspace, models.Model):
    short_link = models.CharField(max_length=100, unique=True)
    # Both nullable so a half-configured link is representable; tracking refuses it with a clear error.
    partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, blank=True, related_name="links")
    program = models.ForeignKey(Program, on_delete=models.SET_NULL, null=True, blank=True, related_name="links")
    is_active = models.BooleanField(default=True)
    # Made by the service itself (the `svc test-event` verification link), not a real partner's link:
    # readiness does not count it as the program's referral set-up.
    is_synthetic = models.BooleanField(default=False)
    clicks = models.PositiveBigIntegerField(default=0)
    last_clicked = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("program", "partner")

    def __str__(self) -> str:
        return self.short_link


class PartnerInvitation(SameWorkspace, models.Model):
    """A one-time link that lets a person become `partner` in the portal and enrols the partner in `program`. Only
    the token's SHA-256 is stored (programs.keys.key_digest): the link is shown in the email alone. Used once
    (accepted_at), and never after expires_at."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="invitations")
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    digest = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)

    workspace_relations = ("program", "partner")

    def __str__(self) -> str:
        return f"{self.email} to {self.program}"


class PartnerApplication(models.Model):
    """Someone's application to become a partner of `program`, from its public page (/join/<id>). Approval makes
    (or reuses) the workspace's partner with that email and sends an invitation to the portal; a refusal keeps the
    row, so the same person is not asked about again unnoticed."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a decision"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="applications")
    name = models.CharField(max_length=200)
    email = models.EmailField()
    website = models.URLField(max_length=500, blank=True, default="")
    promotion = models.TextField(max_length=2000, help_text="How they will promote the program")
    # Sent from a group's own page (/join/<program>/<slug>): approval puts the partner in that group while it is
    # still open to applications; NULL for the program's own page. answers: that page's questions as asked, each
    # {"question": str, "answer": str}.
    group = models.ForeignKey(
        "groups.PartnerGroup", on_delete=models.SET_NULL, null=True, blank=True, related_name="applications"
    )
    answers = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Set on approval: the partner row the applicant became.
    partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            # One open application per email and program: a second one while the first waits changes nothing.
            models.UniqueConstraint(
                fields=["program", "email"], condition=Q(status="pending"), name="application_one_pending"
            )
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.program} ({self.status})"


class ApiCall(models.Model):
    """One call to a program's API (tracking, tracker, readiness, CLI program routes), kept for the integration
    debugger: what was called, how it was answered, with which key, and a safe excerpt of the body (allow-listed
    fields only: never a key, never a full email). Bounded by programs.calllog.api_calls_purge."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, null=True, blank=True, related_name="api_calls")
    created_at = models.DateTimeField(default=timezone.now)
    method = models.CharField(max_length=8)
    route = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    error_code = models.CharField(max_length=64, blank=True, default="")
    message = models.CharField(max_length=300, blank=True, default="")
    request_id = models.CharField(max_length=64, blank=True, default="")
    key_masked = models.CharField(max_length=40, blank=True, default="")
    key_mode = models.CharField(max_length=8, blank=True, default="")
    latency_ms = models.PositiveIntegerField(default=0)
    excerpt = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["program", "-created_at"], name="api_call_program_time"),
            models.Index(fields=["created_at"], name="api_call_time"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.route} {self.status}"


@receiver(m2m_changed, sender=AgentKey.programs.through)
def agent_key_programs_same_workspace(
    sender: type[models.Model], instance: models.Model, action: str, reverse: bool, pk_set: set[int] | None, **_: object
) -> None:
    """A key's programs are of its workspace however they are added: admin checks its form, and code calling
    key.programs.add() or program.agent_keys.add() is held to the same rule here, before any row is written."""
    if action != "pre_add" or not pk_set:
        return
    if reverse:
        assert isinstance(instance, Program)
        key = AgentKey.objects.filter(pk__in=pk_set).exclude(workspace_id=instance.workspace_id).order_by("pk").first()
        if key is not None:
            same_workspace(program=instance, key=key)
        return
    assert isinstance(instance, AgentKey)
    workspace_id = instance.workspace_id
    if workspace_id is None:
        # A key issued before keys were bound to a workspace never authenticates; it has no programs to limit to.
        raise CrossWorkspace(AGENT_KEY_WITHOUT_WORKSPACE.format(pk=instance.pk))
    program = Program.objects.filter(pk__in=pk_set).exclude(workspace_id=workspace_id).order_by("pk").first()
    if program is not None:
        same_workspace(key=instance, program=program)
