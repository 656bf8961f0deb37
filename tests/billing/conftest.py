"""The billing platforms' tests. `billing_served` is the real server (gunicorn, 3 workers, eager tasks: an event is
processed in the request's worker right after it is stored) on the test database, under this process's SECRET_KEY so
it can decrypt the connections' secrets the tests store. Its tests commit their data (transactional_db) and need
PostgreSQL."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from billing.models import BillingConnection
from billing.services import ConnectionDetails, connection_create
from tests.gunicorn import free_port, gunicorn_serving
from tests.served.conftest import _test_database_url

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class BillingServed:
    url: str
    log: Path

    def post(
        self,
        connection: BillingConnection,
        body: bytes,
        headers: dict[str, str],
        *,
        auth: tuple[str, str] | None = None,
    ) -> httpx.Response:
        return httpx.post(
            f"{self.url}{webhook_path(connection)}",
            content=body,
            headers={"Content-Type": "application/json", **headers},
            auth=auth,
            timeout=30,
        )


def webhook_path(connection: BillingConnection) -> str:
    return f"/webhooks/billing/{connection.platform}/{connection.token}"


@pytest.fixture(scope="session")
def billing_served(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[BillingServed]:
    from django.conf import settings

    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        pytest.skip("the served layer needs PostgreSQL")
    tmp = tmp_path_factory.mktemp("billing-served")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / "gunicorn.log"
    env = {
        "DATABASE_URL": _test_database_url(),
        "DEBUG": "true",
        "SECRET_KEY": settings.SECRET_KEY,
        "REDIS_URL": "",
        "RATELIMIT_SHARED": "false",
        "PUBLIC_BASE_URL": url,
        "FAST_PASSWORD_HASHER": "true",
    }
    with django_db_blocker.unblock(), gunicorn_serving(env=env, log=log, workers=3, port=port):
        yield BillingServed(url=url, log=log)


def connect(program, platform: str, secret: str, **details: str) -> BillingConnection:
    return connection_create(program=program, platform=platform, details=ConnectionDetails(secret=secret, **details))
