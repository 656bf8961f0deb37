"""The Stripe rail: partners' Express accounts on the operator's Connect platform, and one transfer per payout.

Every call goes through the stripe library with STRIPE_SECRET_KEY (the platform's key). A transfer is made with an
idempotency key derived from the payout and tagged with its transfer_group, so a retry, a second worker or a crash
between the call and recording its answer never pays twice: before sending again after an unknown outcome, the
transfers of the payout's group are listed, and one found settles the payout as paid."""

import logging
import re
from datetime import datetime, timedelta
from typing import Any

import stripe
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.tasks import service_task
from programs.models import PartnerAccount

from .ledger import PayoutError, payout_account_for, payout_mark_failed, payout_mark_paid
from .models import Payout, PayoutAccount, PayoutStatus, Rail

logger = logging.getLogger("svc.payouts")

# A payout sent whose answer was never recorded (a crash, a lost connection) is looked up after this long.
UNSETTLED_AFTER = timedelta(minutes=5)


def stripe_payouts_configured() -> bool:
    return bool(settings.STRIPE_SECRET_KEY)


def _api_key() -> str:
    if not stripe_payouts_configured():
        raise PayoutError("Stripe payouts are not configured on this installation (STRIPE_SECRET_KEY)")
    return str(settings.STRIPE_SECRET_KEY)


# --- Express accounts -------------------------------------------------------------------------------------------


REQUIREMENT = re.compile(r"[A-Za-z0-9_.\[\]-]{1,200}")


def account_state_store(payout_account: PayoutAccount, account: stripe.Account | dict[str, Any]) -> PayoutAccount:
    """Keeps what Stripe says of the connected account (from an API answer or an account.updated event)."""
    fields = account.to_dict() if isinstance(account, stripe.StripeObject) else account
    capabilities = fields.get("capabilities")
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    requirements = fields.get("requirements")
    requirements = requirements if isinstance(requirements, dict) else {}
    payout_account.payouts_enabled = fields.get("payouts_enabled") is True
    payout_account.details_submitted = fields.get("details_submitted") is True
    payout_account.transfers_active = capabilities.get("transfers") == "active"
    due: list[str] = []
    for key in ("currently_due", "past_due"):
        items = requirements.get(key)
        for item in items if isinstance(items, list) else []:
            # Requirement names are short ASCII paths (individual.verification.document); anything else is dropped.
            if isinstance(item, str) and REQUIREMENT.fullmatch(item) and item not in due:
                due.append(item)
    payout_account.requirements_due = due[:50]
    reason = requirements.get("disabled_reason")
    payout_account.disabled_reason = reason[:255].replace("\x00", "") if isinstance(reason, str) else ""
    if payout_account.transfers_active and payout_account.stripe_account_id:
        payout_account.rail = Rail.STRIPE  # onboarding finished: Stripe replaces a manual rail chosen before
    payout_account.save(
        update_fields=[
            "rail",
            "payouts_enabled",
            "details_submitted",
            "transfers_active",
            "requirements_due",
            "disabled_reason",
            "updated_at",
        ]
    )
    return payout_account


def express_account_ensure(account: PartnerAccount) -> PayoutAccount:
    """The partner's Express account, created on first use with the transfers capability (once: the idempotency
    key names the partner account, and the row is locked while it is made)."""
    api_key = _api_key()
    with transaction.atomic():
        payout_account = PayoutAccount.objects.select_for_update().get(pk=payout_account_for(account).pk)
        if not payout_account.stripe_account_id:
            created = stripe.Account.create(
                type="express",
                email=account.email,
                capabilities={"transfers": {"requested": True}},
                metadata={"partner_account_id": str(account.pk)},
                api_key=api_key,
                idempotency_key=f"svc-partner-account-{account.pk}-express",
            )
            payout_account.stripe_account_id = created["id"]
            if not payout_account.destination or payout_account.rail == Rail.STRIPE:
                # A partner paid by PayPal or Wise stays so until Stripe can receive transfers (account_state_store).
                payout_account.rail = Rail.STRIPE
            payout_account.save(update_fields=["stripe_account_id", "rail", "updated_at"])
            account_state_store(payout_account, created)
    return payout_account


def onboarding_link(*, account: PartnerAccount, return_url: str, refresh_url: str) -> str:
    """Where the partner finishes (or resumes) Stripe's onboarding; Stripe sends them back to return_url."""
    payout_account = express_account_ensure(account)
    link = stripe.AccountLink.create(
        account=payout_account.stripe_account_id,
        type="account_onboarding",
        return_url=return_url,
        refresh_url=refresh_url,
        api_key=_api_key(),
    )
    return str(link["url"])


def account_refresh(payout_account: PayoutAccount) -> PayoutAccount:
    """Reads the connected account again (the partner came back from onboarding)."""
    if not payout_account.stripe_account_id:
        return payout_account
    account = stripe.Account.retrieve(payout_account.stripe_account_id, api_key=_api_key())
    return account_state_store(payout_account, account)


# --- Transfers --------------------------------------------------------------------------------------------------


def _claim(payout_id: int, now: datetime) -> Payout | None:
    """Takes the payout for sending: pending becomes processing (a refund no longer reduces it), and one already
    processing is taken again only by the reconciler's resend. None: nothing to send."""
    with transaction.atomic():
        payout = Payout.objects.select_for_update().filter(pk=payout_id, rail=Rail.STRIPE).first()
        if payout is None or payout.status not in (PayoutStatus.PENDING, PayoutStatus.PROCESSING):
            return None
        if payout.stripe_transfer_id:
            return None
        if payout.amount_cents == 0:
            return None
        payout.status = PayoutStatus.PROCESSING
        payout.attempts += 1
        payout.sent_at = payout.sent_at or now
        payout.save(update_fields=["status", "attempts", "sent_at", "updated_at"])
        return payout


def transfer_of(payout: Payout) -> stripe.Transfer | None:
    """The transfer Stripe already made for the payout, if any (by its transfer_group)."""
    found = stripe.Transfer.list(transfer_group=payout.transfer_group, limit=1, api_key=_api_key())
    return found.data[0] if found.data else None


# Stripe errors that say the transfer will not be made as asked: the payout fails and its money goes back.
REFUSED = (stripe.InvalidRequestError, stripe.PermissionError, stripe.CardError)


def payout_send(*, payout_id: int, now: datetime | None = None) -> str:
    """Sends one Stripe payout as a transfer and settles it by the answer. Returns what happened: "paid",
    "failed", "unknown" (no answer: left processing for a retry or the reconciler) or "" (nothing to send).
    A connection error or Stripe's own 5xx raise after leaving the payout processing, so the task retries."""
    now = now or timezone.now()
    payout = _claim(payout_id, now)
    if payout is None:
        return ""
    if payout.attempts > 1:
        existing = transfer_of(payout)
        if existing is not None:
            payout_mark_paid(payout_id=payout.pk, transfer_id=existing["id"], now=now)
            return "paid"
    try:
        transfer = stripe.Transfer.create(
            amount=payout.amount_cents,
            currency=payout.currency.lower(),
            destination=payout.destination,
            transfer_group=payout.transfer_group,
            description=f"Payout #{payout.pk}",
            metadata={"payout_id": str(payout.pk), "partner_id": str(payout.partner_id)},
            api_key=_api_key(),
            idempotency_key=payout.idempotency_key,
        )
    except REFUSED as exc:
        logger.warning(
            "payouts.transfer_refused", extra={"payout_id": payout.pk, "stripe_code": getattr(exc, "code", "")}
        )
        payout_mark_failed(
            payout_id=payout.pk,
            code=str(getattr(exc, "code", "") or type(exc).__name__),
            message=str(getattr(exc, "user_message", "") or "Stripe refused the transfer"),
            now=now,
        )
        return "failed"
    except stripe.APIError as exc:
        if (exc.http_status or 0) >= 500:
            # Stripe stored this answer for the key and would replay it: the next attempt lists the payout's
            # transfers first, then sends under a new key.
            Payout.objects.filter(pk=payout.pk, key_generation=payout.key_generation).update(
                key_generation=payout.key_generation + 1
            )
        raise
    payout_mark_paid(payout_id=payout.pk, transfer_id=transfer["id"], now=now)
    return "paid"


def payouts_reconcile(*, now: datetime | None = None, limit: int = 200) -> dict[str, int]:
    """Stripe payouts left behind: pending ones never sent (the task was lost), and processing ones whose answer
    was never recorded (a crash, a timeout). Each is looked up by its transfer_group and settled, or sent again
    with the same idempotency key. Returns counts by outcome."""
    now = now or timezone.now()
    stale = list(
        Payout.objects.filter(
            rail=Rail.STRIPE,
            status__in=(PayoutStatus.PENDING, PayoutStatus.PROCESSING),
            stripe_transfer_id="",
            updated_at__lt=now - UNSETTLED_AFTER,
        )
        .order_by("updated_at")
        .values_list("pk", flat=True)[:limit]
    )
    outcomes: dict[str, int] = {}
    for payout_id in stale:
        try:
            outcome = payout_send(payout_id=payout_id, now=now) or "skipped"
        except stripe.StripeError as exc:
            error = type(exc).__name__
            logger.warning("payouts.reconcile_failed", extra={"payout_id": payout_id, "stripe_error": error})
            outcome = "unknown"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


# --- Events from Stripe -----------------------------------------------------------------------------------------


# A Stripe id as we store and compare it: ASCII letters, digits and underscores (never a NUL, which PostgreSQL's
# text cannot hold), within the column.
STRIPE_ID = re.compile(r"[A-Za-z0-9_]{1,255}")
PAYOUT_ID = re.compile(r"[1-9][0-9]{0,17}")


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _minor(value: object) -> int:
    """An amount as Stripe sends it: an integer (a bool or anything else reads as 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def connect_event_apply(event: dict[str, Any]) -> str:
    """Applies one verified Stripe event about payouts; returns what it did ("" when it is not ours). Signed by
    Stripe, yet read defensively: a field of an unexpected type or shape makes the event not ours, never an error."""
    kind = _text(event.get("type"))
    data = event.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    if not isinstance(obj, dict):
        return ""
    if kind == "account.updated":
        account_id = _text(obj.get("id"))
        if not STRIPE_ID.fullmatch(account_id):
            return ""
        payout_account = PayoutAccount.objects.filter(stripe_account_id=account_id).first()
        if payout_account is None:
            return ""
        account_state_store(payout_account, obj)
        return "account updated"
    if kind in ("transfer.created", "transfer.updated", "transfer.reversed"):
        payout = _payout_of_transfer(obj)
        if payout is None:
            return ""
        amount, amount_reversed = _minor(obj.get("amount")), _minor(obj.get("amount_reversed"))
        reversed_whole = obj.get("reversed") is True or amount_reversed >= amount > 0
        if kind == "transfer.reversed" or reversed_whole:
            if not reversed_whole:
                return "partly reversed: left as is"
            done = payout_mark_failed(
                payout_id=payout.pk,
                code="transfer_reversed",
                message="The transfer was reversed on Stripe",
                after_paid=True,
            )
            return "payout failed" if done else "already settled"
        transfer_id = _text(obj.get("id"))
        if not STRIPE_ID.fullmatch(transfer_id):
            return ""
        done = payout_mark_paid(payout_id=payout.pk, transfer_id=transfer_id)
        return "payout paid" if done else "already settled"
    return ""


def _payout_of_transfer(transfer: dict[str, Any]) -> Payout | None:
    metadata = transfer.get("metadata")
    payout_id = _text(metadata.get("payout_id")) if isinstance(metadata, dict) else ""
    group = _text(transfer.get("transfer_group"))
    if not payout_id and group.startswith("payout_"):
        payout_id = group.removeprefix("payout_")
    if not PAYOUT_ID.fullmatch(payout_id):
        return None
    payout = Payout.objects.filter(pk=int(payout_id), rail=Rail.STRIPE).first()
    if payout is None or (payout.destination and transfer.get("destination") not in (None, payout.destination)):
        return None
    return payout


# The tasks that run this rail (payouts.tasks lists every payouts task for the worker).
@service_task("payouts.send")
def payout_send_task(payout_id: int) -> str:
    return payout_send(payout_id=payout_id)


@service_task("payouts.reconcile")
def payouts_reconcile_task() -> dict[str, int]:
    return payouts_reconcile()
