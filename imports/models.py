"""Imports from another affiliate platform: each run, and every source row it brought over.

A run commits in batches; each batch writes its objects together with their ImportedRecords, so a crash leaves whole
batches only and a rerun of the same files resumes after them (the unique ImportedRecord stops a second copy). A run
that did not reach "complete" is shown as interrupted until a rerun completes it."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from programs.models import Program

# A running import touches its run at every batch; one silent for longer than this died with its process.
STALE_AFTER = timedelta(minutes=15)


class ImportRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        COMPLETE = "complete", "Complete"
        FAILED = "failed", "Failed"

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="import_runs")
    platform = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # SHA-256 over the files' names and contents: a rerun of the same files resumes this run.
    files_digest = models.CharField(max_length=64)
    file_names = models.JSONField(default=list, blank=True)
    # {"partner": {"created": n, "matched": n, "skipped": n, "refused": n}, ...} as of the last finished batch.
    counts = models.JSONField(default=dict, blank=True)
    # [[where, kind, reason], ...] of the last pass over the files (parser's and engine's).
    refusals = models.JSONField(default=list, blank=True)
    # What the run did about commissions imported before that the old platform paid or voided since (engine
    # ImportReport.changes), one line each.
    changes = models.JSONField(default=list, blank=True)
    batches_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["program", "platform", "files_digest"], name="import_run_resume")]

    def __str__(self) -> str:
        return f"import #{self.pk} {self.platform} ({self.state})"

    @property
    def is_interrupted(self) -> bool:
        """Stopped before the end: failed, or running with no batch for STALE_AFTER (its process is gone)."""
        if self.status == self.Status.FAILED:
            return True
        return self.status == self.Status.RUNNING and timezone.now() - self.updated_at > STALE_AFTER

    @property
    def state(self) -> str:
        """What the owner reads: running, complete or interrupted."""
        return "interrupted" if self.is_interrupted else str(self.status)


class ImportedRecord(models.Model):
    """One source row brought over (or matched): which object it became. Unique per program, platform, kind and
    source id, so an import run twice creates nothing twice, even when two runs race."""

    class Kind(models.TextChoices):
        PARTNER = "partner", "Partner"
        LINK = "link", "Link"
        REFERRAL = "referral", "Referral"
        COMMISSION = "commission", "Commission"
        GROUP = "group", "Group"
        MOVE = "move", "Partner placed in a group"
        CODE = "code", "Coupon code"

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+")
    platform = models.CharField(max_length=32)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    source_id = models.CharField(max_length=255)
    # The Partner, ReferralLink, Customer, Commission, PartnerGroup or CouponCode id (by kind; a move's is the
    # group the partner was placed in).
    object_id = models.BigIntegerField()
    # False when the row matched an object that was already here (same email, same code): nothing was created.
    created = models.BooleanField(default=True)
    run = models.ForeignKey(ImportRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="records")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["program", "platform", "kind", "source_id"], name="imported_record_unique_source"
            )
        ]
        indexes = [models.Index(fields=["program", "kind", "object_id"], name="imported_record_object")]

    def __str__(self) -> str:
        return f"{self.platform} {self.kind} {self.source_id} -> #{self.object_id}"


class ImportUpload(models.Model):
    """Files uploaded on the dashboard, kept between the dry run and the confirmation (and for the task that runs
    them). Size-limited by the view; the digest ties the confirmation to exactly the files the owner saw."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+")
    platform = models.CharField(max_length=32)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    files_digest = models.CharField(max_length=64)
    size = models.PositiveIntegerField(default=0)
    # The currency the owner named for a platform whose files carry none (Platform.asks_currency); "" when not asked.
    currency = models.CharField(max_length=3, blank=True, default="")
    # The dry run's report as shown: {"counts": {...}, "refusals": [[where, kind, reason], ...]} and
    # ImportReport.summary() (the money per currency, the partners arriving deactivated, the link steps).
    report = models.JSONField(default=dict, blank=True)
    run = models.ForeignKey(ImportRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="uploads")
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"upload #{self.pk} {self.platform} ({self.size} bytes)"


class ImportUploadFile(models.Model):
    upload = models.ForeignKey(ImportUpload, on_delete=models.CASCADE, related_name="files")
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=255)
    content = models.BinaryField()

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.name
