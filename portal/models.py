"""The portal's own rows: a partner account's email preferences (the portal keeps nothing else of its own)."""

from django.db import models
from django.utils import timezone

from programs.models import PartnerAccount


class EmailKind(models.TextChoices):
    """The emails a partner may unsubscribe from, one by one. Invitations and approvals of a partner are
    transactional: always sent, never listed here."""

    COMMISSION_APPROVED = "commission_approved", "A commission is approved"
    COMMISSION_REFUNDED = "commission_refunded", "A commission is refunded or reversed"


class EmailPreference(models.Model):
    """A kind of email the account chose not to get (or chose again: unsubscribed False). No row: sent."""

    account = models.ForeignKey(PartnerAccount, on_delete=models.CASCADE, related_name="email_preferences")
    kind = models.CharField(max_length=32, choices=EmailKind.choices)
    unsubscribed = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "kind"], name="portal_email_preference_once")]

    def __str__(self) -> str:
        return f"{self.account_id} {self.kind} {'off' if self.unsubscribed else 'on'}"


class CommissionEmail(models.Model):
    """An email sent about a commission: its approval (step 0) or one refund step (the commission's refund_count
    then). Written in the transaction that sends it, so the after-commit task, its retries and the catch-up sweep
    never send one twice, and a send that fails leaves no row (the next try sends it)."""

    commission = models.ForeignKey("commissions.Commission", on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16)  # approved | refunded | reversed
    step = models.PositiveIntegerField(default=0)
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["commission", "event", "step"], name="portal_commission_email_once")
        ]

    def __str__(self) -> str:
        return f"{self.commission_id} {self.event} {self.step}"
