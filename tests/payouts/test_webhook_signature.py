"""The payouts' Stripe webhook takes a signature only within the tolerance either side of now (issue 37): Stripe's
library checks only that it is not too old, so one dated an hour ahead would stay replayable for an hour. The
signature is computed here the way Stripe computes it, not by the code under test."""

import hashlib
import hmac
import json
import time

import pytest
from django.test import Client

from tests.stripe_fake.events import event

pytestmark = pytest.mark.django_db

SECRET = "whsec_payouts_signature_test"
WEBHOOK = "/api/payouts/stripe/webhook"


def stripe_signature(body: str, secret: str, timestamp: int) -> str:
    """Stripe's scheme: HMAC-SHA256 of "<t>.<body>" with the endpoint's secret, sent as t=…,v1=…."""
    digest = hmac.new(secret.encode(), f"{timestamp}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def post_signed(offset: int):
    body = json.dumps(event("account.updated", {"id": "acct_nobody", "object": "account"}))
    signature = stripe_signature(body, SECRET, int(time.time()) + offset)
    return Client().post(WEBHOOK, body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature)


@pytest.fixture(autouse=True)
def secrets(settings):
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = ["whsec_other_endpoint", SECRET]


@pytest.mark.parametrize("offset", [3600, 301, -301, -3600])
def test_a_signature_outside_the_tolerance_either_way_is_refused(offset):
    response = post_signed(offset)
    assert response.status_code == 400
    assert response.json() == {"received": False, "error": "Invalid or expired signature"}


@pytest.mark.parametrize("offset", [240, 0, -240])
def test_a_signature_within_the_tolerance_is_taken(offset):
    response = post_signed(offset)
    assert response.status_code == 200 and response.json()["received"] is True
