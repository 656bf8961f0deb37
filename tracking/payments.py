"""A payment or a refund a billing platform reports (Stripe's connected accounts, and the platforms of the `billing`
app): recorded through the same sale and refund services as the API, with the platform as `provider` and its
payment id as the sale's transaction id, so the platform's retry and the integrator's own API call answer as one
sale (the spec's 409 rule). Each platform's reader turns its event into a `Payment` or a refund and calls here;
what became of it is an `Outcome` in words, kept on the stored event for operators."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from commissions.models import Commission
from commissions.services import refund_apply
from core.errors import BadRequestError, ConflictError
from groups.codes import code_normalized
from programs.models import Program

from .amounts import MAX_AMOUNT_CENTS
from .models import IMPORTED_PROVIDER_PREFIX, Customer, CustomerStatus, LeadEvent, ProcessorEvent, SaleEvent
from .payment_attribution import PaymentParties as PaymentParties  # the readers build their payments with it
from .payment_attribution import payment_customer_attribute
from .services.common import tracking_log
from .services.lead import lead_settle
from .services.sale import (
    SUPPORTED_CURRENCIES,
    SaleFields,
    SaleWindowExpired,
    coupon_customer_make,
    sale_insert,
    sale_record_for_customer,
    sale_record_unattributed,
)

# The step after payment_customer_attribute's: a coupon or promotion code the payment carried.
PROMOTION_CODE_STEP = "promotion_code"


@dataclass(frozen=True)
class Outcome:
    text: str
    status: str = ProcessorEvent.Status.PROCESSED
    sale: SaleEvent | None = None


def ignored(text: str) -> Outcome:
    return Outcome(text=text, status=ProcessorEvent.Status.IGNORED)


@dataclass(frozen=True)
class CarriedCode:
    """A code a payment carried: Stripe's promotion code id and, when known, the customer-facing code (the other
    platforms name the code only)."""

    promotion_code_id: str
    code: str = ""


def _code_as_carried(program: Program, carried: CarriedCode) -> CarriedCode:
    return carried


@dataclass(frozen=True)
class Payment:
    """A paid payment as a platform reports it. `transaction_id` is the platform's payment id: the sale's
    transaction id (its duplicate key) and its provider_payment_id. `amount` is in minor units."""

    transaction_id: str
    amount: int
    currency: str
    parties: PaymentParties
    sale_type: str = "payment"
    is_recurring: bool = False
    subscription_id: str = ""
    subscription_interval: str = ""
    product_id: str = ""
    tax_cents: int | None = None
    occurred_at: datetime | None = None
    # The codes the payment carried, read only when nothing else attributes it (a Stripe invoice's may be asked of
    # Stripe).
    promotion_codes: Callable[[], list[CarriedCode]] = list


def payment_record(
    program: Program,
    payment: Payment,
    *,
    provider: str,
    livemode: bool,
    name_code: Callable[[Program, CarriedCode], CarriedCode] = _code_as_carried,
) -> Outcome:
    """Records the payment as a sale of the program, attributed in the spec's order
    (tracking.payment_attribution), then by the code it carried. A test-mode payment is a test sale (no
    commission). A currency the service does not record, nothing paid or an amount above the ceiling records
    nothing and is logged (a retry would bring the same). The sale's attributed_by is "<provider>:<step>"."""
    currency = payment.currency.upper()
    if currency not in SUPPORTED_CURRENCIES:
        # Logged under the platform's own name (svc.stripe, svc.paddle, …), as each platform's events are.
        logging.getLogger(f"svc.{provider}").warning(
            f"{provider}.currency_unsupported",
            extra={"program_id": program.pk, "transaction_id": payment.transaction_id, "currency": currency[:8]},
        )
        return ignored(f"currency {currency[:8]} is not supported")
    if payment.amount <= 0:
        return ignored("nothing was paid")
    if payment.amount > MAX_AMOUNT_CENTS:
        # Refused as the sale route refuses it: acknowledged (a retry would bring the same amount) and logged.
        logging.getLogger(f"svc.{provider}").warning(
            f"{provider}.amount_out_of_range",
            extra={"program_id": program.pk, "transaction_id": payment.transaction_id, "amount": payment.amount},
        )
        return ignored(f"amount {payment.amount} is above the ceiling of {MAX_AMOUNT_CENTS}")
    now = timezone.now()
    fields = SaleFields(
        program=program,
        processor_event_id=payment.transaction_id,
        amount_cents=payment.amount,
        tax_cents=payment.tax_cents,
        currency=currency,
        sale_type=payment.sale_type,
        is_recurring=payment.is_recurring,
        provider=provider,
        provider_payment_id=payment.transaction_id,
        subscription_id=payment.subscription_id,
        subscription_interval=payment.subscription_interval,
        product_id=payment.product_id,
        occurred_at=payment.occurred_at,
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

    customer, found_by = payment_customer_attribute(program=program, parties=payment.parties)
    if customer is None:
        return _record_by_code(program, payment, fields, provider=provider, name_code=name_code, now=now)

    _settle_provisional_lead(customer=customer, parties=payment.parties, now=now)
    try:
        return _record_attributed(program, payment, fields, customer=customer, found_by=found_by, now=now)
    except ConflictError as duplicate:
        return Outcome(f"already recorded as sale #{duplicate.details['sale_id']}")


def _record_by_code(
    program: Program,
    payment: Payment,
    fields: SaleFields,
    *,
    provider: str,
    name_code: Callable[[Program, CarriedCode], CarriedCode],
    now: datetime,
) -> Outcome:
    """After every other step: the first code the payment carried that a partner holds brings that partner a new
    customer (tracking.services.sale.coupon_customer_make, as the sale API's coupon_code does) and the sale.
    Otherwise the payment is recorded unattributed, and the code it carried is logged for readiness."""
    carried: list[CarriedCode] = []
    for found in payment.promotion_codes():
        named = name_code(program, found)
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
            **({"promotion_code": shown.promotion_code_id} if shown.promotion_code_id else {}),
            **({"coupon_code": code_normalized(shown.code)} if shown.code else {}),
            **({"provider": provider} if provider != "stripe" else {}),
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
            fields=replace(fields, customer=customer, attributed_by=f"{fields.provider}:{found_by}"),
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


def sales_for_payment(program: Program, *ids: str | None, provider: str = "") -> list[SaleEvent]:
    """The live sales a platform's refund of a payment known by these ids reverses: the sale recorded with one of
    them as its own transaction id; else, for a platform other than Stripe, the integrator's own API sale that named
    the payment as `provider` and `provider_payment_id` (so a refund in the platform reverses a sale the backend
    sent itself); else the imported sales that kept one of them as the processor's payment id (imports keep
    Rewardful's sale.stripe_charge_id, Tolt's charge_id, Dub's invoiceId there), each commission of a sale two
    imported commissions shared having its own sale. The one lookup rule of every refund event."""
    wanted = [i for i in ids if i]
    if not wanted:
        return []
    live = SaleEvent.objects.filter(program=program, is_test=False)
    own = live.filter(processor_event_id__in=wanted).first()
    if own is not None:
        return [own]
    if provider and provider != "stripe":
        sent = live.filter(provider=provider, provider_payment_id__in=wanted).order_by("pk").first()
        if sent is not None:
            return [sent]
    imported = live.filter(provider__startswith=IMPORTED_PROVIDER_PREFIX, provider_payment_id__in=wanted)
    return list(imported.order_by("pk"))


def locked_commission(sale: SaleEvent) -> Commission | None:
    # Held until the event commits: refund_apply locks the same row, so a concurrent event's refund of this sale
    # waits and then sees what this one applied.
    return Commission.objects.select_for_update().filter(sale_id=sale.pk).first()


def refund_applied(sale: SaleEvent, *, amount: int | None, refund_id: str, reason: str) -> str:
    """The spec's refund logic for one refund of the sale, applied once by its id; what it did, in words."""
    result = refund_apply(sale=sale, amount=amount, refund_id=refund_id, reason=reason)
    if result.status in ("reversed", "refunded"):
        return f"{result.status}: commission #{result.commission_id} reduced by {result.deduction}"
    return result.reason or result.message or result.status


def sales_outcome(sales: list[SaleEvent], results: list[str]) -> Outcome:
    if len(sales) == 1:
        return Outcome(results[0], sale=sales[0])
    # Imported sales sharing the payment: each sale's result, named.
    return Outcome("; ".join(f"sale #{s.pk}: {r}" for s, r in zip(sales, results, strict=True)), sale=sales[0])


def payment_refund_record(
    program: Program,
    *payment_ids: str | None,
    provider: str,
    livemode: bool,
    refund_id: str,
    amount: int | None,
    reason: str = "refund",
) -> Outcome:
    """One refund (or chargeback) of a payment, known by its own id: applied once, whatever order or how often the
    platform sends it. `amount` in minor units; None takes the whole sale back."""
    if not livemode:
        return ignored("test payment refund")
    sales = sales_for_payment(program, *payment_ids, provider=provider)
    if not sales:
        return ignored("no recorded sale for this payment")
    results = [refund_applied(sale, amount=amount, refund_id=refund_id, reason=reason) for sale in sales]
    return sales_outcome(sales, results)


def payment_refunded_total_record(
    program: Program, payment_id: str, *, provider: str, livemode: bool, refunded_total: int, reason: str = "refund"
) -> Outcome:
    """A refund a platform reports only as the payment's refunded total so far (Lemon Squeezy's refunded_amount):
    what the total adds to what was applied before is applied, read under the commission's lock, as a refund known
    by "<payment id>:<total>", so the same total sent again applies nothing."""
    if not livemode:
        return ignored("test payment refund")
    sales = sales_for_payment(program, payment_id, provider=provider)
    if not sales:
        return ignored("no recorded sale for this payment")
    results = []
    for sale in sales:
        with transaction.atomic():
            commission = locked_commission(sale)
            already = commission.sale_refunded_cents if commission else 0
            delta = refunded_total - already
            if delta <= 0:
                results.append("refund already applied")
                continue
            results.append(
                refund_applied(sale, amount=delta, refund_id=f"{payment_id}:{refunded_total}", reason=reason)
            )
    return sales_outcome(sales, results)
