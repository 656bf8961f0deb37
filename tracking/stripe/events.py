"""Processing of stored Stripe events from connected accounts. Every handler answers an outcome in words
(kept on the event for operators); anything unexpected raises, rolls the event back whole and is retried."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

import stripe
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from commissions.models import Commission
from commissions.services import refund_apply
from core.errors import BadRequestError, ConflictError
from groups.codes import code_normalized
from programs.models import Program

from ..amounts import MAX_AMOUNT_CENTS
from ..models import IMPORTED_PROVIDER_PREFIX, Customer, CustomerStatus, LeadEvent, ProcessorEvent, SaleEvent
from ..services.common import tracking_log
from ..services.lead import lead_settle
from ..services.sale import (
    SUPPORTED_CURRENCIES,
    SaleFields,
    SaleWindowExpired,
    coupon_customer_make,
    sale_insert,
    sale_record_for_customer,
    sale_record_unattributed,
)
from .attribution import PaymentParties, stripe_customer_attribute
from .codes import CarriedCode, carried_code_named, invoice_codes, session_codes
from .old_platforms import OLD_PLATFORM_STEP, old_platform_customer

logger = logging.getLogger("svc.stripe")

# A Stripe-attributed sale's attributed_by: this, then the step of stripe_customer_attribute that matched, or
# PROMOTION_CODE_STEP.
STRIPE_ATTRIBUTED_BY = "stripe:"
# The step after stripe_customer_attribute's: the promotion code the payment carried (tracking.stripe.codes).
PROMOTION_CODE_STEP = "promotion_code"

# Keyed by Stripe's (interval, interval_count), looked up with whatever the event carries.
INTERVALS: dict[tuple[object, object], str] = {
    ("month", 1): "monthly",
    ("month", 3): "quarterly",
    ("year", 1): "annual",
}


@dataclass(frozen=True)
class Outcome:
    text: str
    status: str = ProcessorEvent.Status.PROCESSED
    sale: SaleEvent | None = None


def ignored(text: str) -> Outcome:
    return Outcome(text=text, status=ProcessorEvent.Status.IGNORED)


@dataclass(frozen=True)
class Payment:
    transaction_id: str
    amount: int
    currency: str
    parties: PaymentParties
    sale_type: str = "payment"
    is_recurring: bool = False
    subscription_id: str = ""
    subscription_interval: str = ""
    product_id: str = ""
    # The promotion codes the payment carried, read only when nothing else attributes it (an invoice's may be
    # asked of Stripe).
    promotion_codes: Callable[[], list[CarriedCode]] = list


def _record_payment(program: Program, payment: Payment, livemode: bool) -> Outcome:
    currency = payment.currency.upper()
    if currency not in SUPPORTED_CURRENCIES:
        return ignored(f"currency {currency} is not supported")
    if payment.amount <= 0:
        return ignored("nothing was paid")
    if payment.amount > MAX_AMOUNT_CENTS:
        # Refused as the sale route refuses it: acknowledged (a retry would bring the same amount) and logged.
        logger.warning(
            "stripe.amount_out_of_range",
            extra={"transaction_id": payment.transaction_id, "amount": payment.amount, "program_id": program.pk},
        )
        return ignored(f"amount {payment.amount} is above the ceiling of {MAX_AMOUNT_CENTS}")
    now = timezone.now()
    fields = SaleFields(
        program=program,
        processor_event_id=payment.transaction_id,
        amount_cents=payment.amount,
        currency=currency,
        sale_type=payment.sale_type,
        is_recurring=payment.is_recurring,
        provider="stripe",
        provider_payment_id=payment.transaction_id,
        subscription_id=payment.subscription_id,
        subscription_interval=payment.subscription_interval,
        product_id=payment.product_id,
        is_test=not livemode,
        sale_date=now,
        created_at=now,
    )
    if not livemode:
        try:
            sale = sale_insert(fields=replace(fields, attributed=False))
        except ConflictError as duplicate:
            return Outcome(f"test payment already recorded as sale #{duplicate.details['sale_id']}")
        return Outcome("test payment recorded (no commission)", sale=sale)

    customer, found_by = stripe_customer_attribute(program=program, parties=payment.parties)
    if customer is None:
        return _record_by_code(program, payment, fields, now)

    _settle_provisional_lead(customer=customer, parties=payment.parties, now=now)
    try:
        return _record_attributed(program, payment, fields, customer=customer, found_by=found_by, now=now)
    except ConflictError as duplicate:
        return Outcome(f"already recorded as sale #{duplicate.details['sale_id']}")


def _record_by_code(program: Program, payment: Payment, fields: SaleFields, now: datetime) -> Outcome:
    """After every other step: the first promotion code the payment carried that a partner holds brings that
    partner a new customer (tracking.services.sale.coupon_customer_make, as the sale API's coupon_code does) and
    the sale. Otherwise the payment is recorded unattributed, and the code it carried is logged for readiness."""
    carried: list[CarriedCode] = []
    for found in payment.promotion_codes():
        named = carried_code_named(program, found)
        carried.append(named)
        if not named.code:
            continue
        try:
            # The customer the code brings is kept only with its sale: a duplicate leaves neither.
            with transaction.atomic():
                customer = coupon_customer_make(program=program, code=named.code, customer_key="", now=now)
                if customer is not None:
                    return _record_attributed(
                        program, payment, fields, customer=customer, found_by=PROMOTION_CODE_STEP, now=now
                    )
        except ConflictError as duplicate:
            return Outcome(f"already recorded as sale #{duplicate.details['sale_id']}")
    try:
        sale = sale_record_unattributed(fields=fields)
    except ConflictError as duplicate:
        return Outcome(f"already recorded as sale #{duplicate.details['sale_id']}")
    if carried:
        # The code no partner holds, as the sale API logs a refused sale's coupon_code (insight.readiness).
        shown = next((c for c in carried if c.code), carried[0])
        tracking_log(
            program_id=program.pk,
            event="sale",
            outcome="unattributed",
            is_test=False,
            sale_id=sale.pk,
            transaction_id=payment.transaction_id,
            promotion_code=shown.promotion_code_id,
            **({"coupon_code": code_normalized(shown.code)} if shown.code else {}),
        )
    return Outcome("unattributed payment recorded (no commission)", sale=sale)


def _record_attributed(
    program: Program, payment: Payment, fields: SaleFields, *, customer: Customer, found_by: str, now: datetime
) -> Outcome:
    """The sale of an attributed customer. Raises ConflictError (the payment is recorded already)."""
    try:
        result = sale_record_for_customer(
            program=program,
            customer=customer,
            fields=replace(fields, customer=customer, attributed_by=f"{STRIPE_ATTRIBUTED_BY}{found_by}"),
            now=now,
        )
    except BadRequestError as refused:
        return Outcome(f"recorded without commission: {refused.message}")
    if payment.parties.processor_customer_id and not customer.processor_customer_id:
        # Renewals are matched by this id from now on.
        type(customer).objects.filter(pk=customer.pk).update(
            processor_customer_id=payment.parties.processor_customer_id
        )
    if isinstance(result, SaleWindowExpired):
        return Outcome("attribution window expired (nothing recorded)")
    commission = f", commission #{result.commission.pk}" if result.commission else f", no commission ({result.message})"
    return Outcome(f"sale #{result.sale.pk} attributed by {found_by}{commission}", sale=result.sale)


def _settle_provisional_lead(*, customer: Customer, parties: PaymentParties, now: datetime) -> None:
    """A payment proves the signup: a provisional browser lead settles here, as the lead endpoint would."""
    if customer.customer_status != CustomerStatus.CLICK:
        return
    if not LeadEvent.objects.filter(customer=customer, provisional=True).exists():
        return
    lead_settle(
        customer=customer,
        event_fields={
            "program_id": customer.program_id,
            "customer": customer,
            "partner_id": customer.first_partner_id,
            "click_id": customer.click_id,
            "customer_key": str(parties.metadata.get("svc_customer_key") or ""),
            "email": parties.email,
            "server_mode": True,
            "lead_timestamp": now,
            "created_at": now,
        },
    )


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


def _sales_for_payment(program: Program, *ids: str | None) -> list[SaleEvent]:
    """The live sales a processor refund of a payment known by these ids (payment intent, charge, invoice) reverses:
    the sale recorded with one of them as its own processor id; when there is none, the imported sales that kept one
    of them as the processor's payment id (imports keep Rewardful's sale.stripe_charge_id, Tolt's charge_id, Dub's
    invoiceId there), each commission of a sale two imported commissions shared having its own sale. The one lookup
    rule of every refund event."""
    wanted = [i for i in ids if i]
    if not wanted:
        return []
    live = SaleEvent.objects.filter(program=program, is_test=False)
    own = live.filter(processor_event_id__in=wanted).first()
    if own is not None:
        return [own]
    imported = live.filter(provider__startswith=IMPORTED_PROVIDER_PREFIX, provider_payment_id__in=wanted)
    return list(imported.order_by("pk"))


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
    return _sales_for_payment(program, *invoices)


def _apply(sale: SaleEvent, *, amount: int, refund_id: str, reason: str) -> str:
    result = refund_apply(sale=sale, amount=amount, refund_id=refund_id, reason=reason)
    if result.status in ("reversed", "refunded"):
        return f"{result.status}: commission #{result.commission_id} reduced by {result.deduction}"
    return result.reason or result.message or result.status


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


def _locked_commission(sale: SaleEvent) -> Commission | None:
    # Held until the event commits: refund_apply locks the same row, so a concurrent event's refund of this sale
    # waits and then sees what this one applied.
    return Commission.objects.select_for_update().filter(sale_id=sale.pk).first()


def _charge_refunds(sale: SaleEvent, charge: dict[str, Any], refunds: list[dict[str, Any]] | None) -> str:
    with transaction.atomic():
        commission = _locked_commission(sale)
        if refunds is not None and not _counted_by_total(commission, charge.get("id")):
            # Each refund by its own id, as refund.created applies it: the two events apply a refund once in any
            # order.
            results = [
                _apply(sale, amount=int(r["amount"]), refund_id=r["id"], reason=r.get("reason") or "")
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
        return _apply(sale, amount=delta, refund_id=refund_id, reason="")


def _refund(sale: SaleEvent, refund: dict[str, Any]) -> str:
    with transaction.atomic():
        commission = _locked_commission(sale)
        charge_id = refund.get("charge")
        applied = commission.applied_refund_ids if commission else []
        if _counted_by_total(commission, charge_id) and refund["id"] not in applied:
            # The charge's refunded total counted every refund made before it; a later one is counted by the
            # charge.refunded Stripe sends for it, with the new total.
            return f"counted by charge {charge_id}'s refunded total (charge.refunded)"
        return _apply(sale, amount=int(refund["amount"]), refund_id=refund["id"], reason=refund.get("reason") or "")


def _outcome(sales: list[SaleEvent], results: list[str]) -> Outcome:
    if len(sales) == 1:
        return Outcome(results[0], sale=sales[0])
    # Imported sales sharing the payment: each sale's result, named.
    return Outcome("; ".join(f"sale #{s.pk}: {r}" for s, r in zip(sales, results, strict=True)), sale=sales[0])


def handle_charge_refunded(program: Program, charge: dict[str, Any], livemode: bool) -> Outcome:
    if not livemode:
        return ignored("test payment refund")
    sales = _sales_for_payment(program, charge.get("payment_intent"), charge.get("id"), charge.get("invoice"))
    if not sales and "invoice" not in charge:
        # API versions from 2025-03-31 send no Charge.invoice (older ones send null when there is none).
        sales = _sales_for_invoices_paid_by(program, charge.get("payment_intent"))
    if not sales:
        return ignored("no recorded sale for this payment")
    refunds = _charge_refund_list(program, charge)
    return _outcome(sales, [_charge_refunds(sale, charge, refunds) for sale in sales])


def handle_refund_created(program: Program, refund: dict[str, Any], livemode: bool) -> Outcome:
    if not livemode:
        return ignored("test payment refund")
    if refund.get("status") not in APPLICABLE_REFUND_STATUSES:
        return ignored(f"refund {refund.get('status')}")
    sales = _sales_for_payment(program, refund.get("payment_intent"), refund.get("charge"))
    if not sales:
        # A Refund names its charge and payment intent only, on every API version: the invoice is asked of Stripe.
        sales = _sales_for_invoices_paid_by(program, refund.get("payment_intent"))
    if not sales:
        return ignored("no recorded sale for this payment")
    return _outcome(sales, [_refund(sale, refund) for sale in sales])


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
