"""Settling an attributed live sale's commission: the sale endpoint, the processor's payment events and the
reconciler all come here. Tracking owns the sale and its customer (conversion, the recorded reason a sale
pays nothing); commissions owns the policy and the money (commissions.services.commission_settle)."""

from contextlib import nullcontext
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import Model

from commissions.approval import commission_dependents, commission_events
from commissions.calculations import NoCommission
from commissions.models import Commission
from commissions.services import SaleCommission, commission_for_sale, commission_settle
from core.sql import SqlValue, family_commits_alone, insert_family
from programs.models import CrossWorkspace, Program
from webhooks.events import event_saved
from webhooks.models import WebhookEvent

from ..models import Customer, CustomerStatus, SaleEvent
from ..quality import SaleNotStored, sale_review
from ..sql import DATA_WITH_SALE_ID


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
    # credit, or the reason on the sale. Where that statement commits by itself (core.sql.family_commits_alone)
    # it runs without BEGIN and COMMIT; a first sale locks the customer, in a transaction, and a database that
    # writes the commission's rows one at a time writes them in one. Inside a caller's transaction, a savepoint
    # keeps a duplicate from breaking it.
    one_statement = family_commits_alone() and not customer_conversion_due(customer=customer, sale_at=sale.sale_date)
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
    but not the foreign-key checks of other rows that name the customer (FOR KEY SHARE): the customer's other
    sales and commissions being written meanwhile never wait for a conversion."""
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


def sale_settled_at_once(
    *, sale: SaleEvent, sale_event: WebhookEvent, customer: Customer, program: Program, now: datetime
) -> SaleCommission | None:
    """Inserts an attributed live sale not stored yet, its sale.created event and what commission_create_for_sale
    would then write (the commission with its rows and events, or the reason it pays nothing, on the sale) in one
    statement: one round trip and one commit where there were two, when that is all there is to write. That is
    where the statement commits by itself (core.sql.family_commits_alone: PostgreSQL, whose jsonb the events' data
    is completed with, in autocommit), for a customer converted by an earlier sale (no lock to take), whose
    program's sale rules do not count the customer's stored sales (sale_velocity counts this one too). Otherwise
    answers None and writes nothing: the caller stores the sale, then settles it.

    The decision is commission_create_for_sale's, made with the same inputs. Raises what the statement raises
    (IntegrityError for a transaction_id already taken) with nothing written; the caller then tells a duplicate
    from a failure the two-step path reports (the sale stored, the commission failed)."""
    if not family_commits_alone():
        return None
    if customer_conversion_due(customer=customer, sale_at=sale.sale_date):
        return None
    assert customer.first_sale_at is not None  # converted before this sale
    try:
        flags = sale_review(
            program_id=program.pk, customer=customer, partner_id=sale.partner_id, sale=sale, stored=False
        )
        settled = commission_for_sale(
            sale=sale, customer=customer, first_sale_at=customer.first_sale_at, program=program, now=now, flags=flags
        )
    except (SaleNotStored, CrossWorkspace):
        return None
    dependents: list[tuple[Model, dict[str, str | SqlValue]]] = [(sale_event, {"object_id": "{first_id}"})]
    events = [sale_event]
    if settled.commission is None:
        sale.no_commission_reason = settled.no_commission or ""
    else:
        commission = settled.commission
        commission_announced = commission_events(commission)
        dependents.append((commission, {"sale_id": "{first_id}"}))
        # The commission is the second dependent; its events name the sale, whose id is the statement's too.
        for row, refers in commission_dependents(commission, commission_announced, commission_id="{dependent_2_id}"):
            dependents.append(
                (row, {**refers, "data": _with_sale_id(row)} if isinstance(row, WebhookEvent) else refers)
            )
        events += commission_announced
    insert_family(sale, dependents)
    for event in events:
        event_saved(event)
    return settled


def _with_sale_id(event: WebhookEvent) -> SqlValue:
    """The event's data with its sale_id set to the id of the sale the statement inserts."""
    data = WebhookEvent._meta.get_field("data").get_db_prep_save(event.data, connection)
    return DATA_WITH_SALE_ID, [data]
