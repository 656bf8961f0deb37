"""The webhooks page in real headless Chromium against the live service: an owner adds an endpoint through the form,
sees its signing secret once (and not after a reload), then resends a failed delivery from the log; the service
sends it to a real local receiver, which verifies the signature with the secret the page showed.
Screenshots go to test-artifacts/webhooks-*.png."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from programs.models import Role
from tests.dashboard.pages.webhook_rows import delivery_make
from tests.factories import MembershipFactory, ProgramFactory
from tests.webhook_receiver import Receiver, receiving
from webhooks.models import DeliveryStatus, WebhookEndpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PASSWORD = "pass-word-123"  # UserFactory's


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    # The receiver is on loopback, which endpoints may name only when private URLs are allowed (self-hosted).
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    with receiving() as server:
        yield server


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_an_owner_adds_an_endpoint_sees_its_secret_once_and_resends_a_failed_delivery(tab, live_server, receiver):
    program = ProgramFactory(name="Acme Pro", domain="acme.example.com")
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    page = tab.page
    page.goto(f"{live_server.url}/programs/{program.pk}/webhooks")
    page.fill("#id_username", owner.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/programs/{program.pk}/webhooks")

    page.click("#add-endpoint")
    page.fill("input[name=url]", receiver.url)
    page.check("input[name=event_types][value='sale.created']")
    page.fill("input[name=description]", "Local receiver")
    screenshot(page, "webhooks-add-form.png")
    page.click("#save-endpoint")

    page.wait_for_selector("#new-secret")
    secret = page.inner_text("#new-secret-value").strip()
    endpoint = WebhookEndpoint.objects.get()
    assert page.url == f"{live_server.url}/programs/{program.pk}/webhooks/{endpoint.pk}"
    assert secret.startswith("whsec_") and endpoint.secret_last4 == secret[-4:]
    assert endpoint.url == receiver.url and endpoint.event_types == ["sale.created"]
    screenshot(page, "webhooks-secret-once.png")

    page.reload()
    assert page.locator("#new-secret").count() == 0
    assert secret not in page.content()
    assert page.inner_text("[data-masked-secret]") == f"whsec_…{secret[-4:]}"

    delivery = delivery_make(endpoint, status=DeliveryStatus.FAILED, attempts=2)
    page.reload()
    assert page.get_attribute(f"#delivery-{delivery.pk}", "data-status") == "failed"
    page.click(f"[data-resend='{delivery.pk}']")

    # The resend is queued on commit and, with tasks in-process here, sent before the log page comes back.
    page.wait_for_selector(f"#delivery-{delivery.pk}[data-status='succeeded']")
    assert delivery.event.public_id in page.inner_text(".messages")
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 3
    [request] = receiver.requests
    assert request.webhook_id == delivery.event.public_id
    receiver.verified_payloads(secret)  # fails unless signed with the secret the page showed
    page.click(f"[data-attempts-for='{delivery.pk}'] summary")
    third = page.locator(f"[data-attempts-for='{delivery.pk}'] [data-attempt='3']")
    assert "manual" in third.inner_text().lower() and "200" in third.inner_text()
    screenshot(page, "webhooks-resent.png")
