import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from django.db import transaction
from django.utils import timezone

from core import messages
from core.errors import BadRequestError
from core.ids import id_parse
from programs.models import LeadAuth, ProgramKey
from webhooks.events import event_emit
from webhooks.models import EventType
from webhooks.payloads import lead_data

from ..counters import partner_program_add
from ..models import Customer, CustomerStatus, LeadEvent
from .common import TestEventRecorded, check_test_program, is_test_mode, tracking_log

logger = logging.getLogger("svc.tracking")


def _customer_for_lead(
    *, click_id: str, customer_key: str, key: ProgramKey | None, additional: dict[str, Any]
) -> Customer:
    customers = Customer.objects.select_related("program")
    if click_id:
        customer = customers.filter(click_id=click_id).first()
    else:
        # Server mode with only customer_key: it is saved on the customer only once a lead settled,
        # so a first lead sent this way finds nobody.
        assert key is not None  # lead_record refuses a browser lead without click_id
        customer = customers.filter(program_id=key.program_id, customer_key=customer_key).order_by("pk").first()
    if customer is None:
        raise BadRequestError(messages.LEAD_CUSTOMER_NOT_FOUND)
    if key is not None:
        if customer.program_id != key.program_id:
            raise BadRequestError(messages.LEAD_CUSTOMER_OTHER_PROGRAM)
    elif "program_id" in additional and id_parse(additional["program_id"]) != customer.program_id:
        raise BadRequestError(messages.LEAD_CUSTOMER_NOT_FOUND)
    return customer


class LeadInput(TypedDict, total=False):
    """A lead as tracking.api's LeadInputSerializer validates it: every field is optional, and one the
    body leaves out is absent."""

    click_id: str
    customer_key: str
    email: str
    session_id: str
    page_url: str
    additional_data: dict[str, Any]


class LeadEventFields(TypedDict):
    """The columns of a stored lead: lead_record's, or a Stripe payment's settling a provisional lead
    (tracking.stripe.events), which has no page to record."""

    program_id: int
    customer: Customer
    partner_id: int | None
    click_id: str
    customer_key: str
    email: str
    session_id: NotRequired[str]
    page_url: NotRequired[str]
    server_mode: bool
    lead_timestamp: datetime
    created_at: datetime


@dataclass(frozen=True)
class LeadRecorded:
    """A real lead; provisional while a server_required program waits for its server's confirmation."""

    lead: LeadEvent
    click_id: str
    provisional: bool = False


def lead_record(*, data: LeadInput, key: ProgramKey | None, request_id: str = "") -> LeadRecorded | TestEventRecorded:
    """Moves a clicked customer on to `lead`. Server mode (key) settles at once; browser mode settles at
    once too, except on a server_required program, where it waits as a provisional lead.

    Raises BadRequestError for missing ids, an unknown or foreign customer, or a customer past `click`;
    ForbiddenError for a test call naming another program than the key's."""
    click_id = data.get("click_id") or ""
    customer_key = data.get("customer_key") or ""
    email = data.get("email") or ""
    additional = data.get("additional_data") or {}
    test_mode = is_test_mode(additional, key)
    if test_mode:
        check_test_program(additional_data=additional, key=key)
    if not click_id and not customer_key:
        raise BadRequestError(messages.LEAD_ID_REQUIRED)
    if key is None and not click_id:
        raise BadRequestError(messages.LEAD_CLICK_ID_REQUIRED_BROWSER)

    customer = _customer_for_lead(click_id=click_id, customer_key=customer_key, key=key, additional=additional)
    if customer.is_test and not test_mode:
        raise BadRequestError(messages.LEAD_CUSTOMER_NOT_FOUND)
    now = timezone.now()
    event_fields: LeadEventFields = {
        "program_id": customer.program_id,
        "customer": customer,
        "partner_id": customer.first_partner_id,
        "click_id": customer.click_id,
        "customer_key": customer_key,
        "email": email,
        "session_id": data.get("session_id", ""),
        "page_url": data.get("page_url", ""),
        "server_mode": key is not None,
        "lead_timestamp": now,
        "created_at": now,
    }

    if test_mode and not customer.is_test:
        # A test lead against a real customer is recorded and changes nothing real.
        with transaction.atomic():
            event = LeadEvent.objects.create(**event_fields, is_test=True)
            lead_created_emit(event)
        tracking_log(program_id=customer.program_id, event="lead", outcome="test", is_test=True, request_id=request_id)
        return TestEventRecorded(event=event, message=messages.LEAD_TEST_RECORDED)

    if customer.customer_status != CustomerStatus.CLICK:
        raise BadRequestError(messages.LEAD_STATUS_CONFLICT.format(status=customer.customer_status))

    if key is None and customer.program.lead_auth == LeadAuth.SERVER_REQUIRED:
        event = _provisional_lead_store(customer=customer, event_fields=event_fields, is_test=test_mode)
        return LeadRecorded(lead=event, click_id=customer.click_id, provisional=True)

    event = lead_settle(customer=customer, event_fields=event_fields, is_test=test_mode)
    if test_mode:
        tracking_log(program_id=customer.program_id, event="lead", outcome="test", is_test=True, request_id=request_id)
        return TestEventRecorded(event=event, message=messages.LEAD_TEST_RECORDED)
    return LeadRecorded(lead=event, click_id=customer.click_id)


def _provisional_lead_store(*, customer: Customer, event_fields: LeadEventFields, is_test: bool) -> LeadEvent:
    """One provisional lead per customer: a repeated browser signup refreshes it."""
    with transaction.atomic():
        existing = (
            LeadEvent.objects.select_for_update().filter(customer=customer, provisional=True).order_by("pk").first()
        )
        if existing is None:
            return LeadEvent.objects.create(**event_fields, provisional=True, is_test=is_test)
        existing.customer_key = event_fields["customer_key"] or existing.customer_key
        existing.email = event_fields["email"] or existing.email
        existing.lead_timestamp = event_fields["lead_timestamp"]
        existing.save(update_fields=["customer_key", "email", "lead_timestamp"])
        return existing


def lead_created_emit(lead: LeadEvent) -> None:
    """lead.created, in the transaction that made the lead count (a provisional lead announces nothing)."""
    event_emit(
        program_id=lead.program_id,
        type=EventType.LEAD_CREATED,
        livemode=not lead.is_test,
        data=lead_data(lead),
        object_id=lead.pk,
    )


def lead_settle(*, customer: Customer, event_fields: LeadEventFields, is_test: bool = False) -> LeadEvent:
    """click -> lead, saving customer_key (and email) on the customer, settling any provisional lead.
    The status move is a conditional UPDATE, so of two racing leads exactly one settles; the other
    gets the status error. The processor's payment events settle provisional leads through here too."""
    customer_key = event_fields.get("customer_key") or ""
    email = event_fields.get("email") or ""
    now = event_fields["lead_timestamp"]
    with transaction.atomic():
        changes: dict[str, Any] = {"customer_status": CustomerStatus.LEAD}
        provisional = LeadEvent.objects.filter(customer=customer, provisional=True).order_by("pk").first()
        customer_key = customer_key or (provisional.customer_key if provisional else "")
        email = email or (provisional.email if provisional else "")
        if customer_key:
            changes["customer_key"] = customer_key
        if email:
            changes["email"] = email
        moved = Customer.objects.filter(pk=customer.pk, customer_status=CustomerStatus.CLICK).update(**changes)
        if not moved:
            current = Customer.objects.filter(pk=customer.pk).values_list("customer_status", flat=True).first()
            raise BadRequestError(messages.LEAD_STATUS_CONFLICT.format(status=current))
        if provisional is not None:
            LeadEvent.objects.filter(customer=customer, provisional=True).update(
                provisional=False,
                settled_at=now,
                server_mode=event_fields.get("server_mode", False),
                customer_key=customer_key,
                email=email,
            )
            provisional.refresh_from_db()
            event = provisional
        else:
            event = LeadEvent.objects.create(
                **{**event_fields, "customer_key": customer_key, "email": email},
                is_test=is_test,
                settled_at=now,
            )
        lead_created_emit(event)
    customer.customer_status = CustomerStatus.LEAD
    customer.customer_key = customer_key or customer.customer_key
    if not is_test and customer.first_partner_id:
        try:
            partner_program_add(partner_id=customer.first_partner_id, program_id=customer.program_id, leads=1)
        except Exception:
            logger.exception("lead.metrics_failed", extra={"customer_id": customer.pk})
    return event
