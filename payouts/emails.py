"""The emails a partner gets about a payout: paid, or failed with the reason (the money is back on their balance).
Transactional: always sent to the partner's portal account, never more than once per payout and event."""

import logging

from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction

from core.money import money
from core.tasks import service_task
from core.urls import public_url

from .models import Payout, PayoutEmail

logger = logging.getLogger("svc.payouts")

SUBJECTS = {
    "paid": "Payout sent: {amount} from {program}",
    "failed": "Payout failed: {amount} from {program} is back on your balance",
}
BODY = {
    "paid": "Your payout #{pk} of {amount} from {program} was sent by {rail}.",
    "failed": (
        "Your payout #{pk} of {amount} from {program} could not be sent: {reason}\n"
        "The amount is back on your balance and will be paid in the next run once this is fixed."
    ),
}
FOOTER = "\n\nSee your payouts: {url}\n"


def payout_email_send(*, payout_id: int, event: str) -> bool:
    """Sends the email once: its row and the send share one transaction, so a failed send leaves no row."""
    payout = Payout.objects.select_related("partner__account", "program").filter(pk=payout_id).first()
    if payout is None or event not in SUBJECTS:
        return False
    account = payout.partner.account
    if account is None or not account.is_active:
        return False
    amount = money(payout.amount_cents, payout.currency)
    if event == "failed":
        amount = money(
            -sum(entry.amount_cents for entry in payout.ledger_entries.filter(amount_cents__lt=0)), payout.currency
        )
    words = {
        "pk": payout.pk,
        "amount": amount,
        "program": payout.program.name,
        "rail": payout.get_rail_display(),
        "reason": payout.failure_message or payout.failure_code or "the payment was refused",
    }
    try:
        with transaction.atomic():
            PayoutEmail.objects.create(payout=payout, event=event)
            EmailMessage(
                subject=SUBJECTS[event].format(**words),
                body=BODY[event].format(**words) + FOOTER.format(url=public_url(None, "/portal/payouts")),
                to=[account.email],
            ).send()
    except IntegrityError:
        return False  # sent already
    logger.info("payouts.email_sent", extra={"payout_id": payout.pk, "event": event})
    return True


@service_task("payouts.email")
def payout_email_task(payout_id: int, event: str) -> bool:
    return payout_email_send(payout_id=payout_id, event=event)
