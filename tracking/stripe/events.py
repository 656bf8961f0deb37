"""Processing of stored Stripe events from connected accounts. Every handler answers an outcome in words
(kept on the event for operators); anything unexpected raises, rolls the event back whole and is retried."""

import logging
from functools import partial
from typing import Any

import stripe
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from commissions.models import Commission
from programs.models import Program

from ..models import IMPORTED_PROVIDER_PREFIX, Customer, ProcessorEvent, SaleEvent
from ..payment_attribution import PaymentParties
from ..payments import (
    Outcome,
    Payment,
    ignored,
    locked_commission,
    payment_record,
    refund_applied,
    sales_for_payment,
    sales_outcome,
)
from .codes import carried_code_named, invoice_codes, session_codes
from .old_platforms import OLD_PLATFORM_STEP, old_platform_customer

logger = logging.getLogger("svc.stripe")

# Keyed by Stripe's (interval, interval_count), looked up with whatever the event carries.
INTERVALS: dict[tuple[object, object], str] = {
    ("month", 1): "monthly",
    ("month", 3): "quarterly",
    ("year", 1): "annual",
}


def _record_payment(program: Program, payment: Payment, livemode: bool) -> Outcome:
    return payment_record(program, payment, provider="stripe", livemode=livemode, name_code=carried_code_named)


def handle_checkout_completed(program: Program, session: dict[str, Any], livemode: bool) -> Outcome:
    if session.get("mode") != "payment":
        return ignored("subscription checkout: its invoice records the sale")
    if session.get("payment_status") != "paid":
        return ignored(f"checkout not paid ({session.get('payment_status')})")
    details = session.get("customer_details") or {}
    payment = Payment(
        transaction_id=session.get("payment_intent") or session["id"],
        amount=int(session.get("amount_total") or 0),
        currency=session.get("currency") or "",
        parties=PaymentParties(
            metadata=session.get("metadata") or {},
            email=details.get("email") or session.get("customer_email") or "",
            processor_customer_id=session.get("customer") or "",
            client_reference_id=session.get("client_reference_id") or "",
        ),
        promotion_codes=partial(session_codes, program, session),
    )
    return _record_payment(program, payment, livemode)


def _subscription_details(invoice: dict[str, Any]) -> dict[str, Any]:
    # Newer API versions nest it under parent; older ones put it at the top level.
    parent = (invoice.get("parent") or {}).get("subscription_details")
    return parent or invoice.get("subscription_details") or {}


def handle_invoice_paid(program: Program, invoice: dict[str, Any], livemode: bool) -> Outcome:
    details = _subscription_details(invoice)
    subscription_id = details.get("subscription") or invoice.get("subscription") or ""
    if not subscription_id:
        return ignored("not a subscription invoice")
    lines = (invoice.get("lines") or {}).get("data") or [{}]
    price = lines[0].get("price") or lines[0].get("plan") or {}
    recurring = price.get("recurring") or price
    interval = INTERVALS.get((recurring.get("interval"), recurring.get("interval_count", 1)), "")
    metadata = details.get("metadata") or lines[0].get("metadata") or {}
    payment = Payment(
        transaction_id=invoice.get("payment_intent") or invoice.get("charge") or invoice["id"],
        amount=int(invoice.get("amount_paid") or 0),
        currency=invoice.get("currency") or "",
        parties=PaymentParties(
            metadata=metadata,
            email=invoice.get("customer_email") or "",
            processor_customer_id=invoice.get("customer") or "",
            client_reference_id="",
        ),
        sale_type="subscription",
        is_recurring=invoice.get("billing_reason") == "subscription_cycle",
        subscription_id=subscription_id,
        subscription_interval=interval,
        product_id=str(price.get("product") or ""),
        promotion_codes=partial(invoice_codes, program, invoice),
    )
    return _record_payment(program, payment, livemode)


def _invoice_sales_known(program: Program) -> bool:
    """Whether any live sale of the program is known by a Stripe invoice id: imported ones by the invoice the old
    platform kept (Dub's invoiceId), recorded ones by the invoice itself (an invoice with no payment intent on it)."""
    sales = SaleEvent.objects.filter(program=program, is_test=False)
    return (
        sales.filter(provider__startswith=IMPORTED_PROVIDER_PREFIX, provider_payment_id__startswith="in_").exists()
        or sales.filter(processor_event_id__startswith="in_").exists()
    )


def _sales_for_invoices_paid_by(program: Program, payment_intent: Any) -> list[SaleEvent]:
    """The sales known by an invoice the payment intent paid. From Stripe API version 2025-03-31 ("basil") a Charge
    no longer names its invoice and a Refund never did: Stripe's InvoicePayment objects map payments to invoices, so
    the program's connected account is asked GET /v1/invoice_payments?payment[type]=payment_intent&
    payment[payment_intent]=<id>. Asked only when a sale of the program is known by an invoice id and this
    installation holds the platform key. A Stripe error raises: the event rolls back whole and is retried (nothing
    was applied; a refund applied on a later attempt is applied once, by its refund id)."""
    if not isinstance(payment_intent, str) or not payment_intent.startswith("pi_"):
        return []
    if not settings.STRIPE_SECRET_KEY or not program.stripe_account_id or not _invoice_sales_known(program):
        return []
    found = stripe.InvoicePayment.list(
        payment={"type": "payment_intent", "payment_intent": payment_intent},
        status="paid",
        limit=100,
        api_key=settings.STRIPE_SECRET_KEY,
        stripe_account=program.stripe_account_id,
    )
    invoices: list[str] = []
    for invoice_payment in found.auto_paging_iter():
        invoice = invoice_payment.invoice
        invoice_id = invoice if isinstance(invoice, str) else getattr(invoice, "id", None)
        if isinstance(invoice_id, str) and invoice_id not in invoices:
            invoices.append(invoice_id)
    return sales_for_payment(program, *invoices)


# A Refund's statuses that take money back; requires_action, failed and canceled ones do not.
APPLICABLE_REFUND_STATUSES = (None, "succeeded", "pending")


def _charge_refund_list(program: Program, charge: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Every refund of the charge, or None when it is not known. Since Stripe API version 2022-11-15 a Charge no
    longer includes its `refunds` list (and an included one may be cut short, `has_more` telling): the program's
    connected account is then asked GET /v1/refunds?charge=<id>, every page, when this installation holds the
    platform key. A Stripe error raises: the event rolls back whole and is retried (nothing was applied)."""
    included = charge.get("refunds")
    included = included if isinstance(included, dict) else {}
    data = included.get("data")
    listed = [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []
    if listed and not included.get("has_more"):
        return listed
    charge_id = charge.get("id")
    if not settings.STRIPE_SECRET_KEY or not program.stripe_account_id or not isinstance(charge_id, str):
        return listed or None
    try:
        found = stripe.Refund.list(
            charge=charge_id, limit=100, api_key=settings.STRIPE_SECRET_KEY, stripe_account=program.stripe_account_id
        )
        return [refund.to_dict() for refund in found.auto_paging_iter()]
    except (stripe.AuthenticationError, stripe.PermissionError, stripe.InvalidRequestError) as error:
        # Asking again will not help (a revoked key, an account that no longer grants access): the refunded total
        # is applied instead, so the refund is still taken back. Stripe being down or slow raises, and is retried.
        logger.warning(
            "stripe.refund_list_refused",
            extra={"program_id": program.pk, "charge": charge_id, "error": type(error).__name__},
        )
        return listed or None


def _total_id_prefix(charge_id: str) -> str:
    # A refund applied by the charge's refunded total is recorded as "<charge id>:<amount_refunded>".
    return f"{charge_id}:"


def _counted_by_total(commission: Commission | None, charge_id: Any) -> bool:
    """Whether the charge's refunds were applied to the commission by its refunded total (a charge.refunded with
    no refund list). Its refunds are then told apart by that total only, never by their ids: which ids a total
    covered is not known, so applying one by its id could take back what the total already did."""
    if commission is None or not isinstance(charge_id, str) or not charge_id:
        return False
    prefix = _total_id_prefix(charge_id)
    return any(isinstance(i, str) and i.startswith(prefix) for i in commission.applied_refund_ids)


def _charge_refunds(sale: SaleEvent, charge: dict[str, Any], refunds: list[dict[str, Any]] | None) -> str:
    with transaction.atomic():
        commission = locked_commission(sale)
        if refunds is not None and not _counted_by_total(commission, charge.get("id")):
            # Each refund by its own id, as refund.created applies it: the two events apply a refund once in any
            # order.
            results = [
                refund_applied(sale, amount=int(r["amount"]), refund_id=r["id"], reason=r.get("reason") or "")
                for r in sorted(refunds, key=lambda r: r.get("created") or 0)
                if r.get("status") in APPLICABLE_REFUND_STATUSES
            ]
            return "; ".join(results) or "no applicable refunds"
        # Without the refund list, refund what Stripe reports beyond what was already applied (read under the
        # lock, so a refund.created applied meanwhile is counted).
        already = commission.sale_refunded_cents if commission else 0
        delta = int(charge.get("amount_refunded") or 0) - already
        if delta <= 0:
            return "refund already applied"
        refund_id = f"{_total_id_prefix(charge['id'])}{charge.get('amount_refunded')}"
        return refund_applied(sale, amount=delta, refund_id=refund_id, reason="")


def _refund(sale: SaleEvent, refund: dict[str, Any]) -> str:
    with transaction.atomic():
        commission = locked_commission(sale)
        charge_id = refund.get("charge")
        applied = commission.applied_refund_ids if commission else []
        if _counted_by_total(commission, charge_id) and refund["id"] not in applied:
            # The charge's refunded total counted every refund made before it; a later one is counted by the
            # charge.refunded Stripe sends for it, with the new total.
            return f"counted by charge {charge_id}'s refunded total (charge.refunded)"
        reason = refund.get("reason") or ""
        return refund_applied(sale, amount=int(refund["amount"]), refund_id=refund["id"], reason=reason)


def handle_charge_refunded(program: Program, charge: dict[str, Any], livemode: bool) -> Outcome:
    if not livemode:
        return ignored("test payment refund")
    sales = sales_for_payment(program, charge.get("payment_intent"), charge.get("id"), charge.get("invoice"))
    if not sales and "invoice" not in charge:
        # API versions from 2025-03-31 send no Charge.invoice (older ones send null when there is none).
        sales = _sales_for_invoices_paid_by(program, charge.get("payment_intent"))
    if not sales:
        return ignored("no recorded sale for this payment")
    refunds = _charge_refund_list(program, charge)
    return sales_outcome(sales, [_charge_refunds(sale, charge, refunds) for sale in sales])


def handle_refund_created(program: Program, refund: dict[str, Any], livemode: bool) -> Outcome:
    if not livemode:
        return ignored("test payment refund")
    if refund.get("status") not in APPLICABLE_REFUND_STATUSES:
        return ignored(f"refund {refund.get('status')}")
    sales = sales_for_payment(program, refund.get("payment_intent"), refund.get("charge"))
    if not sales:
        # A Refund names its charge and payment intent only, on every API version: the invoice is asked of Stripe.
        sales = _sales_for_invoices_paid_by(program, refund.get("payment_intent"))
    if not sales:
        return ignored("no recorded sale for this payment")
    return sales_outcome(sales, [_refund(sale, refund) for sale in sales])


def handle_customer_saved(program: Program, stripe_customer: dict[str, Any], livemode: bool) -> Outcome:
    """customer.created / customer.updated: a Stripe customer tagged by the platform the program imported from
    (its metadata key, imports.stripe_attribution) is tied to the customer that names, so every payment of that
    Stripe customer is attributed by its id (step 3), as the old platform attributed it."""
    if not livemode:
        return ignored("test customer")
    stripe_id = stripe_customer.get("id")
    metadata = stripe_customer.get("metadata")
    if not isinstance(stripe_id, str) or not stripe_id.isascii() or not stripe_id.startswith("cus_"):
        return ignored("not a Stripe customer")
    if not isinstance(metadata, dict):
        return ignored("no metadata")
    known = Customer.objects.filter(program=program, is_test=False, processor_customer_id=stripe_id).first()
    if known is not None:
        # Already tied (an earlier event, or an attributed payment): an update never makes a second customer.
        return ignored(f"Stripe customer {stripe_id} is customer #{known.pk} already")
    email = stripe_customer.get("email")
    customer = old_platform_customer(program=program, metadata=metadata, email=email if isinstance(email, str) else "")
    if customer is None:
        return ignored("no old platform's referral in the customer's metadata")
    if customer.processor_customer_id and customer.processor_customer_id != stripe_id:
        return ignored(f"customer #{customer.pk} already has Stripe customer {customer.processor_customer_id}")
    Customer.objects.filter(pk=customer.pk, processor_customer_id="").update(processor_customer_id=stripe_id)
    return Outcome(f"Stripe customer {stripe_id} tied to customer #{customer.pk} by {OLD_PLATFORM_STEP}")


HANDLERS = {
    "checkout.session.completed": handle_checkout_completed,
    "customer.created": handle_customer_saved,
    "customer.updated": handle_customer_saved,
    "invoice.payment_succeeded": handle_invoice_paid,
    "charge.refunded": handle_charge_refunded,
    "refund.created": handle_refund_created,
}


def processor_event_process(*, event_pk: int) -> ProcessorEvent:
    """Processes one stored event once. The event row is locked for the whole run, so a redelivered or
    replayed task cannot process it twice; on an error the whole event rolls back and can be retried."""
    with transaction.atomic():
        # of=self: the program join is nullable, and PostgreSQL will not lock the outer side of a join.
        event = ProcessorEvent.objects.select_for_update(of=("self",)).select_related("program").get(pk=event_pk)
        if event.status in (ProcessorEvent.Status.PROCESSED, ProcessorEvent.Status.IGNORED):
            return event
        handler = HANDLERS.get(event.event_type)
        if event.program is None:
            outcome = ignored(f"no program is connected to account {event.account_id or '(none)'}")
        elif handler is None:
            outcome = ignored(f"{event.event_type} is not used")
        else:
            outcome = handler(event.program, event.payload["data"]["object"], event.livemode)
        event.status = outcome.status
        event.outcome = outcome.text[:255]
        event.sale = outcome.sale
        event.attempts += 1
        event.last_error = ""
        event.processed_at = timezone.now()
        event.save()
    logger.info("stripe.event_processed", extra={"event_id": event.event_id, "outcome": event.outcome})
    return event


def processor_event_failed(*, event_pk: int, error: str) -> None:
    ProcessorEvent.objects.filter(pk=event_pk).exclude(status=ProcessorEvent.Status.PROCESSED).update(
        status=ProcessorEvent.Status.FAILED, last_error=error[:2000], attempts=F("attempts") + 1
    )


def processor_event_attempt(*, event_pk: int) -> str:
    """One processing attempt, as the worker runs it: a failure is recorded on the event (status, attempts,
    last error, for operators) and raised again so the task's retry policy tries later. Returns the status."""
    try:
        return processor_event_process(event_pk=event_pk).status
    except Exception as exc:
        processor_event_failed(event_pk=event_pk, error=f"{type(exc).__name__}: {exc}")
        raise
