"""The emails partners get about their commissions (approved; refunded or reversed), each with a one-click
unsubscribe link for its kind, and the tokens of those links.

Only partners with a portal account get them (Partner.account's email): a partner row without an account has no
place to unsubscribe from, so it is never written to. The money paths only call commission_email_later: the
email goes out after their transaction commits, through a task, and nothing about it (a broker outage, a
refused send) ever reaches their answer or their transaction."""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.utils import timezone

from commissions.models import Commission, CommissionKind, CommissionStatus
from core.money import money
from core.tasks import enqueue, service_task
from core.urls import public_url
from programs.models import PartnerAccount

from .models import CommissionEmail, EmailKind, EmailPreference

logger = logging.getLogger("svc.portal")

UNSUBSCRIBE_SALT = "portal.emails.unsubscribe"
# How far back the catch-up looks for approvals not emailed (the hold-end job runs every five minutes).
CATCH_UP = timedelta(hours=1)
# The commission's status the email tells of, and the kind a partner unsubscribes from for it.
KIND_OF_STATUS = {
    CommissionStatus.APPROVED: EmailKind.COMMISSION_APPROVED,
    CommissionStatus.REFUNDED: EmailKind.COMMISSION_REFUNDED,
    CommissionStatus.REVERSED: EmailKind.COMMISSION_REFUNDED,
}
SUBJECTS = {
    CommissionStatus.APPROVED: "Commission approved: {amount} from {program}",
    CommissionStatus.REFUNDED: "Commission reduced by a refund: {program}",
    CommissionStatus.REVERSED: "Commission reversed: {program}",
}
WHAT = {
    CommissionStatus.APPROVED: "was approved: {amount} is added to your balance.",
    CommissionStatus.REFUNDED: "was reduced: its sale was partly refunded.",
    CommissionStatus.REVERSED: "was reversed: its sale was refunded.",
}
# A milestone bonus has no sale: a refund reverses it when it takes the partner's figure below its threshold.
BONUS_REVERSED = "was reversed: a refund took your figure below the bonus's threshold."
BODY = """Commission #{pk} in {program} {what}{reason}

See your commissions: {commissions}

You get this email because you are a partner of {program}. To stop emails like this one ("{kind}"):
{unsubscribe}"""


def unsubscribe_token(account_id: int, kind: str) -> str:
    """A signed token naming the account and the kind: the link works without signing in, and only for them."""
    return signing.dumps([account_id, kind], salt=UNSUBSCRIBE_SALT, compress=False)


def unsubscribe_token_read(token: str) -> tuple[PartnerAccount, EmailKind] | None:
    """The account and kind a token names; None for a forged, damaged or stale one (an account gone)."""
    if not token or len(token) > 200:
        return None
    try:
        account_id, kind = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        return None
    if not isinstance(account_id, int) or kind not in EmailKind.values:
        return None
    account = PartnerAccount.objects.filter(pk=account_id).first()
    return None if account is None else (account, EmailKind(kind))


def unsubscribed_kinds(account: PartnerAccount) -> set[str]:
    return set(EmailPreference.objects.filter(account=account, unsubscribed=True).values_list("kind", flat=True))


def preference_set(account: PartnerAccount, kind: str, *, unsubscribed: bool) -> None:
    EmailPreference.objects.update_or_create(account=account, kind=kind, defaults={"unsubscribed": unsubscribed})


def commission_email_later(commission: Commission | None) -> None:
    """Called by the money paths where a commission becomes approved (off the sale's path: the hold-end job, an
    owner's early approval or release), refunded or reversed; its status says which (any other status, or None:
    nothing). Sends the partner's email after the caller's transaction commits (at once when there is none),
    through a task; nothing it does can fail the caller. A commission approved as its sale is stored (hold 0) is
    emailed by commission_emails_catch_up instead: the sale's path queues no message of its own."""
    if commission is None or commission.status not in KIND_OF_STATUS:
        return
    status = str(commission.status)
    step = 0 if status == CommissionStatus.APPROVED else commission.refund_count
    transaction.on_commit(lambda: enqueue(commission_email_task, commission.pk, status, step), robust=True)


def commission_email_send(*, commission_id: int, status: str, step: int = 0) -> bool:
    """Emails the partner's portal account that the commission is now `status` (`step`: the refund step, 0 for
    the approval); False when nobody is written to (no such commission, no account or an inactive one, the
    account unsubscribed from the kind, or this email was sent already). A send error is raised, and leaves
    nothing written: the task's retries, or the catch-up, send it again."""
    if status not in KIND_OF_STATUS:
        return False
    commission = Commission.objects.select_related("program", "partner__account").filter(pk=commission_id).first()
    if commission is None or commission.partner.account is None:
        return False
    account = commission.partner.account
    kind = KIND_OF_STATUS[CommissionStatus(status)]
    if not account.is_active or kind in unsubscribed_kinds(account):
        return False
    with transaction.atomic():
        try:
            with transaction.atomic():
                CommissionEmail.objects.create(commission=commission, event=status, step=step)
        except IntegrityError:
            return False  # sent already (or being sent by a concurrent try, which commits first)
        _message(commission, account, CommissionStatus(status), kind).send()
    return True


def _message(
    commission: Commission, account: PartnerAccount, status: CommissionStatus, kind: EmailKind
) -> EmailMessage:
    unsubscribe = public_url(None, f"/portal/unsubscribe/{unsubscribe_token(account.pk, kind)}")
    amount = money(commission.amount_cents, commission.currency)
    program = commission.program.name
    refunded = status != CommissionStatus.APPROVED
    reason = f" Reason: {commission.refund_reason}." if refunded and commission.refund_reason else ""
    return EmailMessage(
        subject=SUBJECTS[status].format(amount=amount, program=program),
        body=BODY.format(
            pk=commission.pk,
            program=program,
            what=BONUS_REVERSED
            if status == CommissionStatus.REVERSED and commission.kind == CommissionKind.BONUS
            else WHAT[status].format(amount=amount),
            reason=reason,
            commissions=public_url(None, "/portal/commissions"),
            kind=kind.label,
            unsubscribe=unsubscribe,
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[account.email],
        headers={"List-Unsubscribe": f"<{unsubscribe}>"},
    )


def commission_emails_catch_up(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Emails the approvals of the last CATCH_UP not emailed yet: those made as their sale was stored (hold 0),
    and any whose task was lost. Run by the hold-end job (commissions_approve_due); a failure is logged and never
    stops the job. Returns how many were sent."""
    now = now or timezone.now()
    sent = 0
    try:
        due = list(
            Commission.objects.filter(
                status=CommissionStatus.APPROVED,
                updated_at__gte=now - CATCH_UP,  # indexed (commission_updated_at); an approval sets it too
                approved_at__gte=now - CATCH_UP,
                partner__account__isnull=False,
                partner__account__is_active=True,
            )
            .exclude(pk__in=CommissionEmail.objects.filter(event=CommissionStatus.APPROVED).values("commission_id"))
            .order_by("approved_at")
            .values_list("pk", flat=True)[:batch_size]
        )
    except Exception:
        logger.exception("portal.commission_emails_catch_up_failed")
        return 0
    for commission_id in due:
        try:
            sent += commission_email_send(commission_id=commission_id, status=CommissionStatus.APPROVED)
        except Exception:
            logger.exception("portal.commission_email_failed", extra={"commission_id": commission_id})
    return sent


# Declared beside its sender (as payouts' email task is): commission_email_later, above, queues it.
@service_task("portal.commission_email")
def commission_email_task(commission_id: int, status: str, step: int = 0) -> bool:
    return commission_email_send(commission_id=commission_id, status=status, step=step)
