import dataclasses
import logging
import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, TypedDict, cast

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from commissions.calculations import NoCommission
from commissions.models import Commission
from commissions.services import SaleCommission
from core import messages
from core.currency import Currency
from core.errors import BadRequestError, ConflictError, InternalServerError, UnprocessableEntityError
from core.sql import capabilities, insert_family, model_from_row
from groups.codes import code_normalized, code_partner_id
from groups.terms import enrolment_get
from programs.keys import key_digest
from programs.models import Program, ProgramKey
from programs.selectors import program_key_from_row, program_key_get_by_raw
from programs.sql import KEY_WITH_PROGRAM_COLUMNS
from webhooks.events import event_new, event_saved
from webhooks.models import EventType
from webhooks.payloads import sale_data

from ..attribution import attribution_window
from ..models import Customer, CustomerStatus, SaleEvent
from ..sql import CUSTOMER_BY_CLICK_ID, CUSTOMER_BY_KEY, customer_select_sql, key_and_customer_sql
from .common import TestEventRecorded, sale_is_test, tracking_log
from .settlement import commission_create_for_sale, sale_settled_at_once

logger = logging.getLogger("svc.tracking")

SUPPORTED_CURRENCIES = frozenset(Currency.values)

SaleProvider = Literal[
    "stripe", "polar", "dodo", "paddle", "lemonsqueezy", "creem", "sepay", "payos", "apipay", "x402", "other"
]
# The values of tracking.models.SaleType and SubscriptionInterval, as the types a validated body holds.
SaleTypeValue = Literal["payment", "subscription"]
IntervalValue = Literal["monthly", "quarterly", "annual"]


class SaleInput(TypedDict, total=False):
    """A sale as tracking.api's SaleInputSerializer validates it: an optional field the body leaves out is
    absent; the nullable ones may be None. transaction_id and amount_cents are required of a live sale
    only: a test sale may leave them out or send null."""

    transaction_id: str | None
    amount_cents: int | None
    occurred_at: datetime | None
    provider: SaleProvider | None
    provider_payment_id: str | None
    livemode: bool | None
    currency: str | None
    customer_key: str
    click_id: str
    tax_cents: int | None
    sale_type: SaleTypeValue | None
    line_items: dict[str, Any] | list[Any] | None
    is_recurring: bool | None
    subscription_id: str
    subscription_interval: IntervalValue | Literal[""] | None
    product_id: str
    additional_data: dict[str, Any]
    coupon_code: str


@dataclass(frozen=True)
class SaleFields:
    """A sale's columns as the sale route's body or a processor's payment gives them, up to its insert; the
    customer's part (customer, partner_id, click_id, attributed) is set once the customer is known. A column left
    at its default here is the model's default."""

    program: Program
    processor_event_id: str | None
    amount_cents: int
    currency: str
    sale_type: str
    is_recurring: bool
    provider: str
    provider_payment_id: str
    subscription_id: str
    subscription_interval: str
    product_id: str
    is_test: bool
    sale_date: datetime
    created_at: datetime
    tax_cents: int | None = None
    occurred_at: datetime | None = None
    line_items: dict[str, Any] | list[Any] | None = None
    attributed_by: str = ""
    customer: Customer | None = None
    partner_id: int | None = None
    click_id: str = ""
    attributed: bool = True

    def columns(self) -> dict[str, Any]:
        """The SaleEvent keyword arguments (the rows are kept as they are: no copy)."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


@dataclass(frozen=True)
class PrefetchedCustomer:
    """The live customer a sale's click_id names (None: nobody), read in the same round trip as the sale's key
    (key_and_customer_get): the sale's click_id lookup is then not sent again."""

    click_id: str
    customer: Customer | None


def _customer_for_sale(
    *, program: Program, customer_key: str, click_id: str, is_test: bool, prefetched: PrefetchedCustomer | None = None
) -> tuple[Customer | None, str]:
    """customer_key first (the earliest customer with it keeps the attribution), then click_id. Returns the
    customer and the lookup that found it (kept on the sale as attributed_by), or (None, "")."""
    if customer_key:
        customer = _customer_fetch(customer_select_sql(CUSTOMER_BY_KEY), [program.pk, customer_key, is_test])
        if customer is not None:
            return customer, "customer_key"
    if click_id:
        if prefetched is not None and prefetched.click_id == click_id and not is_test:
            customer = prefetched.customer
        else:
            customer = _customer_fetch(customer_select_sql(CUSTOMER_BY_CLICK_ID), [click_id, is_test])
        if customer is not None:
            return customer, "click_id"
    return None, ""


def key_and_customer_get(raw_key: str, click_id: str) -> tuple[ProgramKey | None, PrefetchedCustomer | None]:
    """The key raw_key is (as program_key_get_by_raw finds it) and the live customer click_id names, in one round
    trip: a sale's two reads before it writes. The customer is read whatever the key's program; sale_record checks
    that it is the program's, as it does for one it reads itself. Without a LATERAL join (SQLite): the key alone,
    and no customer read ahead (None)."""
    if not capabilities().lateral_join:
        return program_key_get_by_raw(raw_key), None
    digest = key_digest(raw_key)
    with connection.cursor() as cursor:
        cursor.execute(key_and_customer_sql(), [click_id, False, digest])
        row = cursor.fetchone()
    if row is None:
        return None, PrefetchedCustomer(click_id=click_id, customer=None)
    key = program_key_from_row(row, digest=digest)
    customer_row = row[KEY_WITH_PROGRAM_COLUMNS:]
    customer = None if customer_row[0] is None else cast(Customer, model_from_row(Customer, customer_row))
    return key, PrefetchedCustomer(click_id=click_id, customer=customer)


def _customer_fetch(sql: str, params: list[Any]) -> Customer | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else cast(Customer, model_from_row(Customer, row))


def sale_insert(*, fields: SaleFields, unflushed: bool = False) -> SaleEvent:
    """Inserts the sale, with its sale.created webhook event, on its own: it stays recorded even if the
    commission fails next, and the unique constraint on processor_event_id is what stops a duplicate, even a
    concurrent one. The sale and its event commit together (core.sql.insert_family: on PostgreSQL one statement,
    atomic by itself); inside a caller's transaction (processor events) a savepoint keeps a duplicate from
    breaking it.

    `unflushed` (outside a transaction, when the caller commits the sale's settlement right after): on
    PostgreSQL the sale's commit does not wait for the WAL flush (core.sql.insert_unflushed). The sale is
    visible, and a duplicate refused, at once; the settlement's commit, which waits for its flush, makes the
    sale durable too before the call is answered."""
    sale = SaleEvent(**fields.columns())
    event = _sale_created(sale)
    try:
        insert_family(sale, [(event, {"object_id": "{first_id}"})], unflushed=unflushed, savepoint=True)
    except IntegrityError:
        duplicate = _duplicate_of(fields)
        if duplicate is None:
            raise
        raise duplicate from None
    event_saved(event)
    return sale


def _duplicate_of(fields: SaleFields) -> ConflictError | None:
    """The 409 of a sale whose transaction_id another sale took (None: no sale has it)."""
    if not fields.processor_event_id:
        return None
    first = (
        SaleEvent.objects.filter(processor_event_id=fields.processor_event_id, is_test=fields.is_test)
        .values_list("pk", flat=True)
        .first()
    )
    if first is None:
        return None
    return ConflictError(messages.SALE_DUPLICATE, code="duplicate_transaction", details={"sale_id": first})


def _sale_created(sale: SaleEvent) -> Any:
    return event_new(
        program_id=sale.program_id, type=EventType.SALE_CREATED, livemode=not sale.is_test, data=sale_data(sale)
    )


def _sale_fields(*, data: SaleInput, program: Program, now: datetime, is_test: bool, attributed_by: str) -> SaleFields:
    return SaleFields(
        program=program,
        processor_event_id=data.get("transaction_id") or None,
        amount_cents=data.get("amount_cents") or 0,
        tax_cents=data.get("tax_cents"),
        currency=data.get("currency") or Currency.USD,
        sale_type=data.get("sale_type") or "payment",
        is_recurring=bool(data.get("is_recurring")),
        provider=data.get("provider") or "",
        provider_payment_id=data.get("provider_payment_id") or "",
        subscription_id=data.get("subscription_id") or "",
        subscription_interval=data.get("subscription_interval") or "",
        product_id=data.get("product_id") or "",
        occurred_at=data.get("occurred_at"),
        line_items=data.get("line_items"),
        is_test=is_test,
        sale_date=now,
        created_at=now,
        attributed_by=attributed_by,
    )


@dataclass(frozen=True)
class SaleRecorded:
    """An attributed sale, with its commission or, when there is none, the message saying why."""

    sale: SaleEvent
    commission: Commission | None
    message: str


@dataclass(frozen=True)
class SaleWindowExpired:
    """The converting sale came after the attribution window: nothing was recorded."""

    click_age_days: float
    window_days: int


def sale_record(
    *, data: SaleInput, key: ProgramKey, request_id: str = "", prefetched: PrefetchedCustomer | None = None
) -> SaleRecorded | SaleWindowExpired | TestEventRecorded:
    """Records a sale for the key's program and, when attributable, its commission.

    Raises UnprocessableEntityError (currency), BadRequestError (no_attribution; partnerId required after
    the sale is stored), ConflictError (duplicate transaction_id) and InternalServerError (the commission
    failed after the sale was stored: the transaction_id stays consumed)."""
    program = key.program
    currency = data.get("currency") or Currency.USD
    if currency not in SUPPORTED_CURRENCIES:
        raise UnprocessableEntityError(
            messages.SALE_UNSUPPORTED_CURRENCY.format(currency=currency), code="unsupported_currency"
        )
    now = timezone.now()
    customer_key = data.get("customer_key") or ""
    click_id = data.get("click_id") or ""

    if sale_is_test(data=data, key=key):
        return _test_sale_record(data=data, program=program, now=now, request_id=request_id)

    customer, found_by = _customer_for_sale(
        program=program, customer_key=customer_key, click_id=click_id, is_test=False, prefetched=prefetched
    )
    coupon_code = data.get("coupon_code") or ""
    if customer is None and coupon_code:
        fields = _sale_fields(data=data, program=program, now=now, is_test=False, attributed_by="coupon_code")
        # The customer the code brings is kept only with its sale: a duplicate or a failure leaves neither.
        with transaction.atomic():
            customer = coupon_customer_make(program=program, code=coupon_code, customer_key=customer_key, now=now)
            if customer is not None:
                return sale_record_for_customer(
                    program=program, customer=customer, fields=fields, now=now, request_id=request_id
                )
    if customer is None:
        raise _no_attribution(program, messages.SALE_CUSTOMER_NOT_FOUND, request_id, click_id, coupon_code)
    if customer.program_id != program.pk:
        raise _no_attribution(program, messages.SALE_NO_ATTRIBUTION, request_id, click_id)
    if customer.first_partner_id is not None and (
        enrolment_get(partner_id=customer.first_partner_id, program_id=program.pk) is None
    ):
        raise _no_attribution(program, messages.SALE_NO_PARTNER_PROGRAM, request_id, click_id)

    fields = _sale_fields(data=data, program=program, now=now, is_test=False, attributed_by=found_by)
    return sale_record_for_customer(program=program, customer=customer, fields=fields, now=now, request_id=request_id)


def sale_record_for_customer(
    *, program: Program, customer: Customer, fields: SaleFields, now: datetime, request_id: str = ""
) -> SaleRecorded | SaleWindowExpired:
    """Records an attributed sale: the sale endpoint and the processor's payment events both come here.
    The attribution window applies to the sale that converts the customer; renewals follow the customer.
    Raises ConflictError (duplicate), BadRequestError (customer has no partner; the sale is stored) and
    InternalServerError (the commission failed; the sale is stored)."""
    window = attribution_window(
        program=program, clicked_at=customer.last_clicked_at, sale_at=now, first_sale_at=customer.first_sale_at
    )
    if window.refused:
        tracking_log(
            program_id=program.pk,
            event="sale",
            outcome="attribution_window_expired",
            is_test=False,
            request_id=request_id,
            transaction_id=fields.processor_event_id,
            # What insight.explain tells of a sale refused here (nothing else of it is stored).
            click_id=customer.click_id,
            click_age_days=window.shown_age_days,
            window_days=window.window_days,
            attributed_by=fields.attributed_by,
        )
        return SaleWindowExpired(click_age_days=window.age_days, window_days=window.window_days)

    sale_fields = replace(
        fields,
        customer=customer,
        partner_id=customer.first_partner_id,
        click_id=customer.click_id,
        attributed=customer.first_partner_id is not None,
    )
    if customer.first_partner_id is not None:
        at_once = _sale_settled_at_once(program=program, customer=customer, fields=sale_fields, now=now)
        if at_once is not None:
            sale, settled = at_once
            return SaleRecorded(
                sale=sale, commission=settled.commission, message=sale_message(settled, program=program)
            )
    # The commission's commit that follows waits for the WAL flush, which makes the sale durable too: the
    # sale's own commit need not wait for one (sale_insert).
    settled_next = customer.first_partner_id is not None and not transaction.get_connection().in_atomic_block
    sale = sale_insert(fields=sale_fields, unflushed=settled_next)
    if customer.first_partner_id is None:
        tracking_log(
            program_id=program.pk,
            event="sale",
            outcome="no_partner",
            is_test=False,
            request_id=request_id,
            sale_id=sale.pk,
        )
        raise BadRequestError(messages.SALE_PARTNER_REQUIRED, code="no_attribution")

    try:
        settled = commission_create_for_sale(sale=sale, customer=customer, program=program, now=now)
    except Exception:
        logger.exception("sale.commission_failed", extra={"sale_id": sale.pk})
        raise InternalServerError(messages.SALE_COMMISSION_FAILED, code="internal_error") from None

    return SaleRecorded(sale=sale, commission=settled.commission, message=sale_message(settled, program=program))


def _sale_settled_at_once(
    *, program: Program, customer: Customer, fields: SaleFields, now: datetime
) -> tuple[SaleEvent, SaleCommission] | None:
    """The sale, its event and its settlement in one statement where that is possible (settlement.
    sale_settled_at_once); None when it is not, or when the statement failed for any reason but a transaction_id
    already taken: then nothing is written, and the two-step path that follows writes, and answers, as ever."""
    sale = SaleEvent(**fields.columns())
    try:
        settled = sale_settled_at_once(
            sale=sale, sale_event=_sale_created(sale), customer=customer, program=program, now=now
        )
    except DatabaseError:
        duplicate = _duplicate_of(fields)
        if duplicate is not None:
            raise duplicate from None
        return None
    return None if settled is None else (sale, settled)


def sale_message(settled: SaleCommission, *, program: Program) -> str:
    """The sale response's message: the commission was created, or the reason it was not."""
    if settled.no_commission == NoCommission.RENEWAL_NOT_RECURRING:
        return messages.SALE_RECORDED_RENEWAL_NOT_PAID
    if settled.no_commission == NoCommission.RECURRING_PERIOD_ENDED:
        months = settled.terms.duration_months if settled.terms is not None else program.duration_months
        return messages.SALE_RECORDED_RECURRING_ENDED.format(months=months)
    return messages.SALE_RECORDED


def _no_attribution(
    program: Program, message: str, request_id: str, click_id: str = "", coupon_code: str = ""
) -> BadRequestError:
    # The click id sent, if any, so a refused sale can be traced to its click (a bot's has no customer), and the
    # coupon code no partner holds (insight.readiness names such codes).
    tracking_log(
        program_id=program.pk,
        event="sale",
        outcome="no_attribution",
        is_test=False,
        request_id=request_id,
        message=message,
        **({"click_id": click_id} if click_id else {}),
        **({"coupon_code": code_normalized(coupon_code)} if coupon_code else {}),
    )
    return BadRequestError(message, code="no_attribution")


def coupon_customer_make(*, program: Program, code: str, customer_key: str, now: datetime) -> Customer | None:
    """The customer a sale carrying a coupon code brings, credited to the code's partner (groups.codes.
    code_partner_id): a new customer, with the sale's customer_key when it sent one so later sales follow it by
    key. None when no partner holds the code. Its click_id is made up ("coupon_" and a random part): no click
    ever carried it."""
    partner_id = code_partner_id(program_id=program.pk, code=code)
    if partner_id is None:
        return None
    return Customer.objects.create(
        program=program,
        click_id=f"coupon_{secrets.token_urlsafe(18)}",
        customer_key=customer_key or None,
        first_partner_id=partner_id,
        first_clicked_at=now,
        last_clicked_at=now,
        # Converted by the sale it is made for, in the same transaction (sale_record): no lock to take after.
        first_sale_at=now,
        customer_status=CustomerStatus.CONVERTED,
        created_at=now,
    )


def sale_record_unattributed(*, fields: SaleFields) -> SaleEvent:
    """A payment nobody could be credited for: stored (so it counts once and dedupes), no commission."""
    return sale_insert(fields=replace(fields, customer=None, partner_id=None, attributed=False))


def _test_sale_record(*, data: SaleInput, program: Program, now: datetime, request_id: str) -> TestEventRecorded:
    """Test sales are stored flagged, attached to a test customer when one matches, and create no
    commission, no fee and no metrics. Their transaction ids are unique among test sales only."""
    customer, found_by = _customer_for_sale(
        program=program,
        customer_key=data.get("customer_key") or "",
        click_id=data.get("click_id") or "",
        is_test=True,
    )
    if customer is not None and customer.program_id != program.pk:
        customer, found_by = None, ""
    fields = _sale_fields(data=data, program=program, now=now, is_test=True, attributed_by=found_by)
    sale = sale_insert(
        fields=replace(
            fields,
            customer=customer,
            partner_id=customer.first_partner_id if customer else None,
            click_id=customer.click_id if customer else (data.get("click_id") or ""),
            attributed=customer is not None,
        )
    )
    if customer is not None and customer.first_sale_at is None:
        Customer.objects.filter(pk=customer.pk).update(first_sale_at=now, customer_status=CustomerStatus.CONVERTED)
    tracking_log(
        program_id=program.pk,
        event="sale",
        outcome="test",
        is_test=True,
        request_id=request_id,
        sale_id=sale.pk,
        attributed=customer is not None,
    )
    return TestEventRecorded(event=sale, message=messages.SALE_TEST_RECORDED)
