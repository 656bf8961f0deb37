from django.db import models
from django.utils import timezone

from programs.models import AgentKey, SameWorkspace, Workspace


class AgentAuditEntry(SameWorkspace, models.Model):
    """One write made through the agent API: which key, what it did to which object, the object before and after.
    Written in the transaction of the write itself, so there is no write without its entry."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agent_audit_entries")
    # The entry outlives the key: a revoked or deleted key's history stays readable by its masked value.
    key = models.ForeignKey(AgentKey, on_delete=models.SET_NULL, null=True, related_name="audit_entries")
    key_masked = models.CharField(max_length=32)
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True, default="")
    idempotency_key = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    workspace_relations = ("workspace", "key")

    class Meta:
        verbose_name_plural = "agent audit entries"
        indexes = [models.Index(fields=["workspace", "-created_at"], name="agent_audit_workspace_time")]

    def __str__(self) -> str:
        return f"{self.key_masked} {self.action} {self.object_type}#{self.object_id}"


class AgentIdempotencyRecord(models.Model):
    """The first response to a write sent with an Idempotency-Key, replayed for a retry of the same request. The
    unique constraint makes a concurrent retry wait for the first to commit, then replay it."""

    key = models.ForeignKey(AgentKey, on_delete=models.CASCADE, related_name="idempotency_records")
    idempotency_key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    # The response as sent, as text: a JSON column could reorder its keys, and a replay answers it as it was.
    response_body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "idempotency_key"], name="agent_idempotency_once_per_key")
        ]
        indexes = [models.Index(fields=["created_at"], name="agent_idempotency_created")]

    def __str__(self) -> str:
        return f"{self.idempotency_key} ({self.status_code})"
