"""Each tracking service's typed input names exactly what its input serializer produces: a field added to one
and not the other fails here, not in a request."""

import pytest

from tracking.api.serializers import (
    ClickInputSerializer,
    LeadInputSerializer,
    RefundInputSerializer,
    SaleInputSerializer,
)
from tracking.api.tracker import VisitTrackApi
from tracking.services.click import ClickInput
from tracking.services.lead import LeadInput
from tracking.services.refund import RefundInput
from tracking.services.sale import SaleInput
from tracking.services.tracker import VisitInput

PAIRS = [
    (ClickInputSerializer, ClickInput),
    (LeadInputSerializer, LeadInput),
    (SaleInputSerializer, SaleInput),
    (RefundInputSerializer, RefundInput),
    (VisitTrackApi.InputSerializer, VisitInput),
]


@pytest.mark.parametrize(("serializer", "typed_input"), PAIRS, ids=[typed.__name__ for _, typed in PAIRS])
def test_it_declares_the_fields_of_its_serializer(serializer, typed_input):
    fields = serializer().fields
    assert set(fields) == set(typed_input.__annotations__)
    required = {name for name, field in fields.items() if field.required}
    assert required <= typed_input.__required_keys__ | typed_input.__optional_keys__
    assert typed_input.__required_keys__ <= required
