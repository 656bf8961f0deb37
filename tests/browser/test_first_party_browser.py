"""First-party mode in real headless Chromium: the shop's pages and the service both on the shop's origin, nginx in
front (the recipe deploy/first-party/nginx.conf itself, tests/first_party_proxies.py) serving the pages and sending
/_svc/ to the live service (TRUSTED_PROXY_COUNT=1). The tracker loads from /_svc/js/svc-tracker.js; the click's answer
sets svc_click_id, which the browser's own cookie store keeps for the program's window, readable by the page; the
page reaches no other host; readiness names the mode; and a lead and a sale the integrator's backend sends 8 days
later (the server's clock moved) are the partner's. Safari keeps a cookie written by script 7 days: in script mode
that sale would be lost."""

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone

from commissions.models import Commission
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.first_party_proxies import nginx_serving
from tracking.models import ClickEvent, LeadEvent, PageVisit, SaleEvent
from tracking.services.first_party import SEEN_CACHE_KEY, first_party_seen_forget

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DAY = 86400
WINDOW_DAYS = 30
LATER = timedelta(days=8)  # past Safari's 7 days for a cookie written by script


@pytest.fixture(scope="module")
def shop_pages(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("shop-pages")


@pytest.fixture(scope="module")
def shop(live_server, shop_pages, tmp_path_factory, django_db_blocker) -> Iterator[str]:
    """The shop's origin: nginx serving shop_pages and /_svc/ from the live service."""
    # nginx waits for the service's /healthz, which reads the database.
    with (
        django_db_blocker.unblock(),
        nginx_serving(tmp_path_factory.mktemp("nginx"), service_url=live_server.url, root=shop_pages) as proxy,
    ):
        yield proxy.url


@pytest.fixture
def first_party(settings) -> Iterator[None]:
    # The live service runs in this process: nginx is its one trusted proxy.
    settings.TRUSTED_PROXY_COUNT = 1
    settings.FIRST_PARTY_COOKIE_DOMAIN = ""
    first_party_seen_forget()
    yield
    first_party_seen_forget()


def first_party_seen_unnoted(program_id: int) -> None:
    """Forgets that the program's first-party calls were noted: program ids come again in a new test database, and
    a shared cache (Redis) outlives it."""
    cache.delete(SEEN_CACHE_KEY.format(program_id=program_id))


def shop_page(program_id: int) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Acme pricing</title>
  <script async src="/_svc/js/svc-tracker.js" data-svc-program-id="{program_id}"></script>
</head>
<body><h1>Acme pricing</h1></body>
</html>"""


def wait_for(page, check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Waits through Playwright (its route handler answers the page's requests only while Playwright runs)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        page.wait_for_timeout(50)


def test_the_click_cookie_is_set_by_the_shops_origin_and_a_sale_8_days_later_is_the_partners(
    chromium, live_server, shop, shop_pages, first_party
):
    program = ProgramFactory(cookie_duration=WINDOW_DAYS, commission_type="percent")
    link = ReferralLinkFactory(program=program)
    first_party_seen_unnoted(program.pk)
    (shop_pages / "pricing.html").write_text(shop_page(program.pk), encoding="utf-8")
    shop_host = urlsplit(shop).netloc

    context = chromium.new_context()
    requests, refused, errors = [], [], []  # every request the page made; those refused; the page's errors

    def only_the_shop(route) -> None:
        # Every request the page makes is noted; one to any host but the shop's is refused.
        requests.append(f"{route.request.method} {route.request.url}")
        if urlsplit(route.request.url).netloc == shop_host:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_shop)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("pageerror", lambda error: errors.append(str(error)))

    with page.expect_response(lambda response: urlsplit(response.url).path == "/_svc/api/v1/track/click") as clicked:
        page.goto(f"{shop}/pricing.html?aff={link.short_link}")
    click_id = page.evaluate("window.svc.ready")

    assert click_id and ClickEvent.objects.get().click_id == click_id
    assert clicked.value.status == 200
    # The server set it (the tracker leaves a cookie the server set alone).
    assert (clicked.value.header_value("set-cookie") or "").startswith(f"svc_click_id={click_id};")
    (cookie,) = [cookie for cookie in context.cookies() if cookie["name"] == "svc_click_id"]
    assert (cookie["value"], cookie["domain"], cookie["path"]) == (click_id, "localhost", "/")
    assert (cookie["sameSite"], cookie["secure"], cookie["httpOnly"]) == ("Lax", False, False)
    assert abs(cookie["expires"] - (time.time() + WINDOW_DAYS * DAY)) < 60  # the program's 30 days
    assert page.evaluate("window.svc.getClickId()") == click_id

    # The page visit follows the click, through the shop's origin too.
    wait_for(page, lambda: PageVisit.objects.filter(click_id=click_id).exists())
    assert refused == [] and errors == []
    assert {urlsplit(request.split(" ", 1)[1]).netloc for request in requests} == {shop_host}
    paths = {(request.split(" ")[0], urlsplit(request.split(" ", 1)[1]).path) for request in requests}
    assert {
        ("GET", "/pricing.html"),
        ("GET", "/_svc/js/svc-tracker.js"),
        ("POST", "/_svc/api/v1/track/click"),
        ("POST", "/_svc/api/v1/track/visit"),
    } <= paths
    context.close()

    # Readiness names the mode: the calls came through the shop's origin.
    key = {"Authorization": f"Bearer {program.raw_api_key}"}
    readiness = httpx.get(f"{live_server.url}/api/v1/programs/me/readiness", headers=key, timeout=15).json()
    (cookie_mode,) = [check for check in readiness["checks"] if check["id"] == "cookie_mode"]
    assert cookie_mode["detail"].startswith("First-party calls seen (the tracker served from your own site)")
    assert cookie_mode["detail"].endswith(f"for your whole window of {WINDOW_DAYS} days")

    # Day 8: the shop's backend reads svc_click_id from the visitor's request (the browser still holds it: it
    # expires on day 30) and sends the signup and the order with the program's key.
    later = timezone.now() + LATER
    assert cookie["expires"] > later.timestamp() + DAY
    with (
        time_machine.travel(later, tick=True),
        httpx.Client(base_url=live_server.url, headers=key, timeout=15) as backend,
    ):
        lead = backend.post(
            "/api/v1/track/lead", json={"click_id": click_id, "customer_key": "user_8", "email": "ada@example.com"}
        )
        sale = backend.post(
            "/api/v1/track/sale", json={"transaction_id": "order_8", "amount_cents": 12000, "customer_key": "user_8"}
        )

    assert lead.status_code == 200, lead.text
    assert sale.status_code == 200, sale.text
    lead_event = LeadEvent.objects.get()
    assert lead_event.click_id == click_id
    sale_event = SaleEvent.objects.get()
    assert sale_event.partner == link.partner
    assert sale_event.customer is not None and sale_event.customer.click_id == click_id
    commission = Commission.objects.get()
    assert (commission.partner, commission.amount_cents) == (link.partner, 2400)  # 20 % of 120.00
    assert abs(sale_event.created_at - later) < timedelta(minutes=5)
