"""The webhooks page in real headless Chromium against the live service: an owner adds an endpoint through the form,
sees its signing secret once (and not after a reload), then resends a failed delivery from the log; the service
sends it to a real local receiver, which verifies the signature with the secret the page showed.
Screenshots go to test-artifacts/webhooks-*.png."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from programs.models import Role
from tests.dashboard.pages.webhook_rows import delivery_make
from tests.factories import MembershipFactory, ProgramFactory
from webhooks.models import DeliveryStatus, WebhookEndpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PASSWORD = "pass-word-123"  # UserFactory's


class Receiver:
    """A local receiver answering 200 and keeping each request's headers and body."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    # The receiver is on loopback, which endpoints may name only when private URLs are allowed (self-hosted).
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    server = Receiver()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


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
    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    assert headers["webhook-id"] == delivery.event.public_id
    Webhook(secret).verify(body, headers)  # raises unless signed with the secret the page showed
    page.click(f"[data-attempts-for='{delivery.pk}'] summary")
    third = page.locator(f"[data-attempts-for='{delivery.pk}'] [data-attempt='3']")
    assert "manual" in third.inner_text().lower() and "200" in third.inner_text()
    screenshot(page, "webhooks-resent.png")
