"""The admin's Payout minimums take the minimum in ASCII digits only: Django's IntegerField runs int(), which reads
"١" as 1 (issue 37)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from payouts.models import PayoutMinimum
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db

ADD = "/admin/payouts/payoutminimum/add/"


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123"))
    return client


@pytest.mark.parametrize("typed", ["١٠٠", "５０", "1٠"])
def test_a_minimum_in_another_scripts_digits_is_refused(operator, typed):
    program = ProgramFactory()
    response = operator.post(ADD, {"program": program.pk, "currency": "USD", "minimum_cents": typed})
    assert response.status_code == 200  # the form again, with the error
    assert "Enter a whole number in ASCII digits" in response.content.decode()
    assert not PayoutMinimum.objects.exists()


def test_a_minimum_in_ascii_digits_is_saved(operator):
    program = ProgramFactory()
    response = operator.post(ADD, {"program": program.pk, "currency": "USD", "minimum_cents": "5000"})
    assert response.status_code == 302
    assert PayoutMinimum.objects.get().minimum_cents == 5_000
