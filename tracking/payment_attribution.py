"""Which customer a billing platform's payment belongs to (Stripe's, and every platform of the billing app), in the
spec's order: 1. svc_click_id in metadata; 2. the buyer's email against the lead record; 3. the platform's customer
id saved after an earlier attributed payment; 4. client_reference_id, only when metadata has no click (the tracker
writes the click there on payment links, buy buttons and pricing tables); 5. svc_customer_key alone,
against the lead record. Then, for a program that imported from another platform, 6. that platform's own
metadata key (imports.stripe_attribution)."""

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from programs.models import Program

from .models import Customer, LeadEvent
from .stripe.old_platforms import OLD_PLATFORM_STEP, old_platform_customer


@dataclass(frozen=True)
class PaymentParties:
    metadata: dict[str, Any]
    email: str
    processor_customer_id: str
    client_reference_id: str


def _real(program: Program) -> QuerySet[Customer]:
    return Customer.objects.filter(program=program, is_test=False)


def payment_customer_attribute(*, program: Program, parties: PaymentParties) -> tuple[Customer | None, str]:
    """The customer and how it was found (for the event's outcome), or (None, "unattributed")."""
    metadata = parties.metadata
    named_program = str(metadata.get("program_id") or "").strip()
    # Metadata written for another program says nothing about this one.
    if named_program and named_program != str(program.pk):
        metadata = {}
    click_id = str(metadata.get("svc_click_id") or "").strip()
    customer_key = str(metadata.get("svc_customer_key") or "").strip()

    if click_id:
        customer = _real(program).filter(click_id=click_id).first()
        if customer:
            return customer, "svc_click_id"
    if parties.email:
        lead = (
            LeadEvent.objects.filter(program=program, email__iexact=parties.email, is_test=False)
            .select_related("customer")
            .order_by("pk")
            .first()
        )
        if lead:
            return lead.customer, "email"
        customer = _real(program).filter(email__iexact=parties.email).order_by("pk").first()
        if customer:
            return customer, "email"
    if parties.processor_customer_id:
        customer = _real(program).filter(processor_customer_id=parties.processor_customer_id).order_by("pk").first()
        if customer:
            return customer, "processor_customer_id"
    if parties.client_reference_id and not click_id:
        customer = _real(program).filter(click_id=parties.client_reference_id).first()
        if customer:
            return customer, "client_reference_id"
    if customer_key:
        customer = _real(program).filter(customer_key=customer_key).order_by("pk").first()
        if customer is None:
            lead = (
                LeadEvent.objects.filter(program=program, customer_key=customer_key, is_test=False)
                .select_related("customer")
                .order_by("pk")
                .first()
            )
            customer = lead.customer if lead else None
        if customer:
            return customer, "svc_customer_key"
    customer = old_platform_customer(program=program, metadata=metadata, email=parties.email)
    if customer:
        return customer, OLD_PLATFORM_STEP
    return None, "unattributed"
