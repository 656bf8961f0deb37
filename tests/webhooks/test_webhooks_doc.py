"""docs/webhooks.md documents every event type with a sample whose data has exactly the keys the service sends."""

import json
import re

import pytest
from django.conf import settings

from payouts.models import Payout
from payouts.payloads import payout_event_data
from tests.factories import CommissionFactory, PartnerProgramFactory, SaleFactory
from tracking.models import LeadEvent
from webhooks.models import EventType
from webhooks.payloads import EXAMPLE_DATA, commission_data, lead_data, partner_enrolled_data, refund_data, sale_data

DOC = (settings.BASE_DIR / "docs" / "webhooks.md").read_text()
SAMPLES = {sample["type"]: sample for sample in map(json.loads, re.findall(r"```json\n(.*?)\n```", DOC, re.S))}
ENVELOPE = {"id", "type", "created_at", "program_id", "livemode", "data"}
WITHOUT_OBJECT_ID = {EventType.REFUND_APPLIED}


def test_it_documents_every_event_type_with_its_envelope():
    assert set(SAMPLES) == set(EventType.values)
    for event_type, sample in SAMPLES.items():
        assert set(sample) == ENVELOPE, event_type
        assert f"`{event_type}`" in DOC.split("## Events")[1]


@pytest.mark.parametrize("event_type", EventType.values)
def test_it_documents_the_data_keys_the_examples_have(event_type):
    documented = set(SAMPLES[event_type]["data"]) - {"id"}
    assert documented == set(EXAMPLE_DATA[event_type])
    assert ("id" in SAMPLES[event_type]["data"]) == (event_type not in WITHOUT_OBJECT_ID)


@pytest.mark.django_db
def test_it_builds_real_payloads_with_the_documented_keys():
    sale = SaleFactory()
    commission = CommissionFactory(sale=sale)
    lead = LeadEvent(program=sale.program, customer=sale.customer, click_id="c", lead_timestamp=sale.sale_date)
    enrolment = PartnerProgramFactory()
    payout = Payout(run_id=1, program=sale.program, partner=sale.partner, amount_cents=100, currency="USD")
    built = {
        EventType.LEAD_CREATED: lead_data(lead),
        EventType.SALE_CREATED: sale_data(sale),
        EventType.COMMISSION_CREATED: commission_data(commission),
        EventType.REFUND_APPLIED: refund_data(
            sale=sale, commission=commission, refund_id="re_1", amount=100, deduction=20, reason=""
        ),
        EventType.PARTNER_ENROLLED: partner_enrolled_data(enrolment=enrolment, partner=enrolment.partner),
        **dict.fromkeys(
            (EventType.PAYOUT_CREATED, EventType.PAYOUT_PAID, EventType.PAYOUT_FAILED), payout_event_data(payout)
        ),
    }
    for event_type, data in built.items():
        assert set(data) == set(EXAMPLE_DATA[event_type]), event_type
        json.dumps(data)  # serialisable as sent
