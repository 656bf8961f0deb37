"""`svc login` sessions and tokens, and the bookkeeping of `svc test-event`.

Secrets (the session `state`, the login token) are kept only as SHA-256 digests, like program keys."""

from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from programs.keys import mask_key
from programs.models import Partner, Program, ReferralLink

LOGIN_TOKEN_PREFIX = "svcl_"


class LoginStatus(models.TextChoices):
    PENDING = "pending", "Waiting for sign-in"
    AUTHENTICATED = "authenticated", "Signed in, token not collected yet"
    DENIED = "denied", "Refused in the browser"
    CONSUMED = "consumed", "Token handed out"
    EXPIRED = "expired", "Expired"


class CliLoginSession(models.Model):
    """One `svc login`: opened by auth/start, signed in through the browser (auth/callback), and closed by the
    first poll after sign-in, which hands out the login token. Lives 5 minutes."""

    state_digest = models.CharField(max_length=64, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="cli_login_sessions",
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    authenticated_at = models.DateTimeField(null=True, blank=True)
    denied_at = models.DateTimeField(null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "CLI login session"

    def __str__(self) -> str:
        return f"CLI login #{self.pk} ({self.status()})"

    def is_expired(self, now: datetime | None = None) -> bool:
        return (now or timezone.now()) >= self.expires_at

    def status(self, now: datetime | None = None) -> str:
        if self.consumed_at:
            return LoginStatus.CONSUMED
        if self.is_expired(now):
            return LoginStatus.EXPIRED
        if self.denied_at:
            return LoginStatus.DENIED
        if self.authenticated_at:
            return LoginStatus.AUTHENTICATED
        return LoginStatus.PENDING


class CliToken(models.Model):
    """A login token (`svcl_…`) for POST /api/v1/cli/init and GET /api/v1/cli/programs. Stored as its digest;
    expires after CLI_TOKEN_LIFETIME_DAYS and can be revoked (admin action, POST /api/v1/cli/auth/logout).

    The user link is kept nullable so a token whose user was deleted still exists and answers "User not found"
    rather than looking like a typo."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="cli_tokens"
    )
    session = models.OneToOneField(
        CliLoginSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="token"
    )
    digest = models.CharField(max_length=64, unique=True, editable=False)
    last4 = models.CharField(max_length=4, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "CLI login token"

    def __str__(self) -> str:
        return f"{self.masked} ({self.user or 'deleted user'})"

    @property
    def masked(self) -> str:
        return mask_key(LOGIN_TOKEN_PREFIX, self.last4)

    def is_usable(self, now: datetime | None = None) -> bool:
        return self.revoked_at is None and (now or timezone.now()) < self.expires_at


class CliTestRun(models.Model):
    """One POST /api/v1/cli/test-event. Counted in the database, not a cache, so the cap of 10 runs per program
    per hour holds across server instances."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="cli_test_runs")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    run_id = models.CharField(max_length=32, blank=True, default="")
    success = models.BooleanField(null=True, blank=True)

    class Meta:
        verbose_name = "CLI test run"
        indexes = [models.Index(fields=["program", "created_at"], name="cli_test_run_window")]

    def __str__(self) -> str:
        return f"Test run #{self.pk} of program #{self.program_id}"


class CliTestFixture(models.Model):
    """The partner and referral link `svc test-event` created so a program without any usable link can still run
    the synthetic chain. Recorded so it is reused (and repaired) instead of multiplied."""

    program = models.OneToOneField(Program, on_delete=models.CASCADE, related_name="cli_test_fixture")
    partner = models.ForeignKey(Partner, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    link = models.ForeignKey(ReferralLink, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    refreshed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "CLI test fixture"

    def __str__(self) -> str:
        return f"Test fixture of program #{self.program_id}"
