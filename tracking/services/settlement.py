"""Settling an attributed live sale's commission: the sale endpoint, the processor's payment events and the
reconciler all come here. Tracking owns the sale and its customer (conversion, the recorded reason a sale
pays nothing); commissions owns the policy and the money (commissions.services.commission_settle)."""

from contextlib import nullcontext
from datetime import datetime

from django.db import IntegrityError, transaction

from commissions.calculations import NoCommission
from commissions.models import Commission
from commissions.services import SaleCommission, commission_settle
from core.sql import insert_pair_supported
from programs.models import Program

from ..models import Customer, CustomerStatus, SaleEvent
from ..quality import sale_review


def commission_create_for_sale(
    *, sale: SaleEvent, customer: Customer, program: Program, now: datetime
) -> SaleCommission:
    """The single entry point that gives an attributed live sale its commission.

    In one transaction: converts the customer on their first sale, then creates the commission or records on
    the sale why it pays nothing (commission_settle decides, at the sale's own time). A crash before the
    commit leaves none of it, so a later run settles the sale as this one would have; a sale already settled
    is returned as it is (created False). `now` is when the commission is created and its hold starts."""
    if sale.no_commission_reason:
        return SaleCommission(commission=None, no_commission=NoCommission(sale.no_commission_reason))
    # A repeat sale (the customer is converted already) writes one statement: the commission with its
    # credit, or the reason on the sale. On PostgreSQL that statement is atomic by itself, so it runs
    # without BEGIN and COMMIT; a first sale locks the customer, and SQLite writes the credit apart, in a
    # transaction. Inside a caller's transaction, a savepoint keeps a duplicate from breaking it.
    one_statement = (
        insert_pair_supported()
        and not transaction.get_connection().in_atomic_block
        and not customer_conversion_due(customer=customer, sale_at=sale.sale_date)
    )
    try:
        with nullcontext() if one_statement else transaction.atomic():
            return _settle(sale=sale, customer=customer, program=program, now=now)
    except IntegrityError:
        # The sale's one-to-one commission already exists: settled by a concurrent run.
        existing = Commission.objects.filter(sale_id=sale.pk).first()
        if existing is None:
            raise
        return SaleCommission(commission=existing)


def _settle(*, sale: SaleEvent, customer: Customer, program: Program, now: datetime) -> SaleCommission:
    first_sale_at = customer_convert(customer=customer, sale_at=sale.sale_date)
    flags = sale_review(program_id=program.pk, customer=customer, partner_id=sale.partner_id, sale=sale)
    settled = commission_settle(
        sale=sale, customer=customer, first_sale_at=first_sale_at, program=program, now=now, flags=flags
    )
    if settled.no_commission is not None:
        SaleEvent.objects.filter(pk=sale.pk).update(no_commission_reason=settled.no_commission)
        sale.no_commission_reason = settled.no_commission
    return settled


def customer_convert(*, customer: Customer, sale_at: datetime) -> datetime:
    """Marks the customer converted by their earliest live sale and returns that sale's time. Only a sale
    earlier than any seen so far locks the customer row, so concurrent first sales convert them once and a
    later sale (the common case) takes no lock. The lock is FOR NO KEY UPDATE: it excludes other conversions
    but not the foreign-key checks of other sales' rows (FOR KEY SHARE, at their commit), which would otherwise
    wait for it while holding their partner-program counter row, which this one needs next: a deadlock."""
    if customer.first_sale_at is not None and customer.first_sale_at <= sale_at:
        return customer.first_sale_at
    first_sale_at = (
        Customer.objects.select_for_update(no_key=True).values_list("first_sale_at", flat=True).get(pk=customer.pk)
    )
    if first_sale_at is None or first_sale_at > sale_at:
        Customer.objects.filter(pk=customer.pk).update(first_sale_at=sale_at, customer_status=CustomerStatus.CONVERTED)
        first_sale_at = sale_at
    customer.first_sale_at = first_sale_at
    return first_sale_at


def customer_conversion_due(*, customer: Customer, sale_at: datetime) -> bool:
    """Whether a sale at sale_at may be the customer's first (customer_convert then locks the customer)."""
    return customer.first_sale_at is None or customer.first_sale_at > sale_at
