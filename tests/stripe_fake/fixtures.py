"""`stripe_server`: a StripeFake on a free 127.0.0.1 port for one test, with the stripe library pointed at it.

Module-style calls (stripe.Transfer.create) go to it through stripe.api_base and stripe.api_key; a StripeClient
needs the address given: StripeClient(key, base_addresses={"api": stripe.api_base}). settings.STRIPE_SECRET_KEY is
the fake's key. Network retries are off, so a lost answer reaches the code under test as APIConnectionError at
once; a test that wants the library's retries sets stripe.max_network_retries (they then wait no time)."""

from collections.abc import Iterator

import pytest
import stripe
from stripe._http_client import HTTPClient

from tests.stripe_fake.server import StripeFake

PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]


@pytest.fixture
def stripe_server(monkeypatch: pytest.MonkeyPatch, settings) -> Iterator[StripeFake]:
    # requests reads proxies from the environment; a proxy would take 127.0.0.1 traffic elsewhere.
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    server = StripeFake().start()
    monkeypatch.setattr(stripe, "api_base", server.url)
    monkeypatch.setattr(stripe, "api_key", server.api_key)
    monkeypatch.setattr(stripe, "max_network_retries", 0)
    monkeypatch.setattr(stripe, "proxy", None)
    monkeypatch.setattr(stripe, "enable_telemetry", False)
    # A fresh HTTP client per test: no pooled connection to an earlier test's server.
    monkeypatch.setattr(stripe, "default_http_client", None)
    monkeypatch.setattr(HTTPClient, "INITIAL_DELAY", 0)
    monkeypatch.setattr(HTTPClient, "MAX_DELAY", 0)
    settings.STRIPE_SECRET_KEY = server.api_key
    try:
        yield server
    finally:
        server.stop()
