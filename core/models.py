from django.db import models
from django.utils import timezone


class IntegrityRun(models.Model):
    """One run of the integrity checks (core.integrity): when, whether every invariant held, and what did not.
    Written by beat's daily core.verify_integrity (and by `manage.py verify_integrity --record`); the readiness
    checklist shows the latest."""

    started_at = models.DateTimeField(default=timezone.now, editable=False)
    seconds = models.FloatField(default=0)
    passed = models.BooleanField()
    # How many checks ran, and each failed one as core.integrity.CheckFailure.as_dict() gives it:
    # {check, title, noun, count, examples, programs: {program id: offending rows}}.
    checks = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list, blank=True)

    class Meta:
        indexes = [models.Index(fields=["-started_at"], name="integrity_run_latest")]

    def __str__(self) -> str:
        return f"integrity run #{self.pk} ({'passed' if self.passed else 'failed'})"
