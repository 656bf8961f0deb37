"""A Stripe account's read API, local: GET /v1/refunds?charge= and GET /v1/invoice_payments answered in Stripe's list
shape (docs.stripe.com/api/pagination: `object`, `data`, `has_more`, `url`; `limit` and `starting_after`), for the
calls the Stripe webhook makes of a connected account. Every request is kept (path, query, key, Stripe-Account)."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import stripe
from stripe._http_client import HTTPClient

from tests.stripe_fake.fixtures import PROXY_VARIABLES


class StripeAccount:
    """`refunds` and `payments` (Invoice Payment objects) are what the account holds; `fail` answers the next
    requests with Stripe's api_error 500; `page_size` caps a page below the asked `limit`."""

    def __init__(self, secret_key: str) -> None:
        self.secret_key = secret_key
        self.refunds: list[dict[str, Any]] = []
        self.payments: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.fail = 0
        self.page_size = 100
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()

    def _answer(self, path: str, query: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append({"path": path, "query": query, **headers})
            if headers.get("authorization") != f"Bearer {self.secret_key}":
                return 401, {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}
            if self.fail:
                self.fail -= 1
                return 500, {"error": {"type": "api_error", "message": "An unknown error occurred"}}
            if path == "/v1/refunds":
                found = sorted(
                    (r for r in self.refunds if r["charge"] == query.get("charge")), key=lambda r: -r["created"]
                )
            elif path == "/v1/invoice_payments":
                found = [
                    p
                    for p in self.payments
                    if p["payment"].get("payment_intent") == query.get("payment[payment_intent]")
                    and query.get("payment[type]") == "payment_intent"
                    and query.get("status", p["status"]) == p["status"]
                ]
            else:
                unknown = f"Unrecognized request URL ({path})"
                return 404, {"error": {"type": "invalid_request_error", "message": unknown}}
            after = query.get("starting_after")
            if after:
                found = found[[r["id"] for r in found].index(after) + 1 :]
            size = min(int(query.get("limit", 10)), self.page_size)
            return 200, {"object": "list", "data": found[:size], "has_more": len(found) > size, "url": path}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                headers = {
                    "authorization": self.headers.get("Authorization", ""),
                    "stripe_account": self.headers.get("Stripe-Account", ""),
                }
                status, body = fake._answer(url.path, dict(parse_qsl(url.query)), headers)
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Request-Id", "req_fake")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def stripe_account_serving(monkeypatch: pytest.MonkeyPatch, settings: Any, secret_key: str) -> Iterator[StripeAccount]:
    """The stripe SDK pointed at a StripeAccount, with `secret_key` as the platform key; no retries, no proxy."""
    # requests reads proxies from the environment; a proxy would take 127.0.0.1 traffic elsewhere.
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    fake = StripeAccount(secret_key)
    monkeypatch.setattr(stripe, "api_base", fake.url)
    monkeypatch.setattr(stripe, "max_network_retries", 0)
    monkeypatch.setattr(stripe, "proxy", None)
    monkeypatch.setattr(stripe, "enable_telemetry", False)
    monkeypatch.setattr(stripe, "default_http_client", None)
    monkeypatch.setattr(HTTPClient, "INITIAL_DELAY", 0)
    monkeypatch.setattr(HTTPClient, "MAX_DELAY", 0)
    settings.STRIPE_SECRET_KEY = secret_key
    try:
        yield fake
    finally:
        fake.stop()
