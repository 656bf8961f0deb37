"""First-party mode on the real server (gunicorn, 2 workers, TRUSTED_PROXY_COUNT=1) behind the shop's own reverse
proxy, run from the recipes in deploy/first-party/ (tests/first_party_proxies.py): nginx and HAProxy each answer the
service under /_svc/ of the shop's origin. Through either, the tracker script is the service's, a click answers as
it does without the proxy and sets svc_click_id on the shop's host with the contract's attributes (the program's
window as Max-Age, Path=/, SameSite=Lax, no Secure over http, no Domain by default, never HttpOnly), the visitor's
address the service records is the one the proxy saw (a forged X-Forwarded-For is not believed), and a visit with
the click's id sets the cookie again with the whole window. Over TLS, as www.example.com, the cookie is Secure and
shared with the apex (FIRST_PARTY_COOKIE_DOMAIN=example.com): the shop's scheme and host reach the service. Without
the proxy nothing sets a cookie."""

import time
import uuid
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from django.conf import settings

from fraud.rules import visitor_hash
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.first_party_proxies import ShopProxy, haproxy_first_party_serving, nginx_serving
from tests.gunicorn import gunicorn_serving
from tracking.models import ClickEvent, PageVisit

from .conftest import _test_database_url, loopback_with_a_full_window

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

DAY = 86400
WINDOW_DAYS = 60
CLICK = "/api/v1/track/click"
VISIT = "/api/v1/track/visit"
CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
FORGED_ADDRESS = "198.51.100.66"


@pytest.fixture(scope="module")
def service(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    """The server as it runs behind one proxy. Its SECRET_KEY is this process's, so the visitor hash it stores can
    be computed here from the address it should have seen."""
    directory = tmp_path_factory.mktemp("first-party-service")
    env = {
        "DATABASE_URL": _test_database_url(),
        "DEBUG": "true",
        "SECRET_KEY": settings.SECRET_KEY,
        "INSTANCE_ID": "",
        "REDIS_URL": "",
        "TRUSTED_PROXY_COUNT": "1",
        "RATELIMIT_SHARED": "false",
        "RATELIMIT_ENABLE": "true",
        "RATELIMIT_SCALE": "1",
        # Used for a shop under it (www.example.com); localhost is not, and gets a host-only cookie.
        "FIRST_PARTY_COOKIE_DOMAIN": "example.com",
        "FAST_PASSWORD_HASHER": "true",
    }
    with django_db_blocker.unblock(), gunicorn_serving(env=env, log=directory / "gunicorn.log", workers=2) as url:
        yield url


@pytest.fixture(scope="module")
def nginx_shop(service, tmp_path_factory) -> Iterator[ShopProxy]:
    with nginx_serving(tmp_path_factory.mktemp("nginx"), service_url=service, tls=True) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def haproxy_shop(service, tmp_path_factory) -> Iterator[ShopProxy]:
    with haproxy_first_party_serving(tmp_path_factory.mktemp("haproxy"), service_url=service, tls=True) as proxy:
        yield proxy


@pytest.fixture(params=["nginx", "haproxy"])
def shop(request) -> ShopProxy:
    """The shop's origin (http://localhost:<port>, and over TLS), its proxy sending /_svc/ to the service."""
    return request.getfixturevalue(f"{request.param}_shop")


@pytest.fixture
def link():
    # A code of its own per test: the server's workers cache links by code, beyond this test's rows, and the
    # factory's sequence may be reset by another test in this process.
    return ReferralLinkFactory(
        program=ProgramFactory(cookie_duration=WINDOW_DAYS), short_link=f"fp{uuid.uuid4().hex[:16]}"
    )


def client_from(base_url: str, address: str, *, host: str | None = None) -> httpx.Client:
    """A client connecting from `address` (the visitor's address as the first hop sees it) over 127.0.0.1, asking
    for the shop by name: `host`, else the URL's. The test certificate is not checked."""
    parts = urlsplit(base_url)
    return httpx.Client(
        base_url=f"{parts.scheme}://127.0.0.1:{parts.port}",
        headers={"Host": host or parts.netloc},
        transport=httpx.HTTPTransport(local_address=address, verify=False),
        timeout=15,
    )


def click_body(link) -> dict[str, Any]:
    return {
        "affiliate_url": f"https://{link.program.domain}/pricing?aff={link.short_link}",
        "page_url": f"https://{link.program.domain}/pricing?aff={link.short_link}",
        "program_id": link.program_id,
        "user_agent": CHROME,
    }


def click_cookies(response: httpx.Response) -> list[dict[str, str]]:
    """Each svc_click_id Set-Cookie of the response as {"value": …, attribute (lower case): value or ""}."""
    cookies = []
    for header in response.headers.get_list("set-cookie"):
        pair, *attributes = (part.strip() for part in header.split(";"))
        name, _, value = pair.partition("=")
        if name == "svc_click_id":
            cookie = {"value": value}
            for attribute in attributes:
                key, _, attribute_value = attribute.partition("=")
                cookie[key.lower()] = attribute_value
            cookies.append(cookie)
    return cookies


def assert_first_party_cookie(response: httpx.Response, click_id: str, **expected: str) -> None:
    """The contract's cookie; `expected`: the further attributes (secure, domain) it must have."""
    (cookie,) = click_cookies(response)
    assert cookie.pop("value") == click_id
    assert cookie.pop("max-age") == str(WINDOW_DAYS * DAY)
    assert cookie.pop("path") == "/"
    assert cookie.pop("samesite") == "Lax"
    if "expires" in cookie:  # Django writes Expires with Max-Age; it must say the same
        expires = parsedate_to_datetime(cookie.pop("expires")).timestamp()
        assert abs(expires - (time.time() + WINDOW_DAYS * DAY)) < 120
    # By default (http, a host not under FIRST_PARTY_COOKIE_DOMAIN) no Secure, host-only; never HttpOnly.
    assert cookie == expected


def test_the_tracker_script_is_the_services_under_the_prefix(shop, service):
    with client_from(shop.url, loopback_with_a_full_window()) as browser:
        proxied = browser.get("/_svc/js/svc-tracker.js")
    direct = httpx.get(f"{service}/js/svc-tracker.js", timeout=15)
    assert proxied.status_code == direct.status_code == 200
    assert proxied.content == direct.content
    assert proxied.headers["content-type"] == direct.headers["content-type"]
    assert "set-cookie" not in proxied.headers


def test_a_click_answers_as_without_the_proxy_and_sets_the_first_party_cookie(shop, service, link):
    with client_from(service, loopback_with_a_full_window()) as direct:
        without = direct.post(CLICK, json=click_body(link))
    with client_from(shop.url, loopback_with_a_full_window()) as browser:
        through = browser.post(f"/_svc{CLICK}", json=click_body(link))

    assert without.status_code == through.status_code == 200
    body, direct_body = through.json(), without.json()
    assert body.keys() == direct_body.keys() == {"success", "click_id", "partner_code", "cookie_window_days"}
    assert (body["success"], body["partner_code"], body["cookie_window_days"]) == (True, link.short_link, WINDOW_DAYS)
    assert {key: value for key, value in body.items() if key != "click_id"} == {
        key: value for key, value in direct_body.items() if key != "click_id"
    }
    assert_first_party_cookie(through, body["click_id"])
    assert click_cookies(without) == []
    assert ClickEvent.objects.filter(click_id=body["click_id"], link=link).exists()


def test_the_address_recorded_is_the_one_the_proxy_saw(shop, link):
    visitor = loopback_with_a_full_window()
    with client_from(shop.url, visitor) as browser:
        # A client's own X-Forwarded-For stays left of the proxy's value, and TRUSTED_PROXY_COUNT=1 takes the latter.
        response = browser.post(f"/_svc{CLICK}", json=click_body(link), headers={"X-Forwarded-For": FORGED_ADDRESS})
    assert response.status_code == 200, response.text
    event = ClickEvent.objects.get(click_id=response.json()["click_id"])
    assert event.visitor_hash == visitor_hash(ip=visitor, user_agent=CHROME)
    assert event.visitor_hash != visitor_hash(ip=FORGED_ADDRESS, user_agent=CHROME)


def test_a_visit_with_the_click_id_sets_the_cookie_again_for_the_whole_window(shop, link):
    with client_from(shop.url, loopback_with_a_full_window()) as browser:
        click_id = browser.post(f"/_svc{CLICK}", json=click_body(link)).json()["click_id"]
        visit = {"program_id": link.program_id, "page_url": f"https://{link.program.domain}/features"}
        refreshed = browser.post(f"/_svc{VISIT}", json={**visit, "click_id": click_id})
        unknown = browser.post(f"/_svc{VISIT}", json={**visit, "click_id": "not-a-click-of-this-program"})
        organic = browser.post(f"/_svc{VISIT}", json=visit)

    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json() == {"success": True, "visit_id": PageVisit.objects.get(click_id=click_id).pk}
    assert_first_party_cookie(refreshed, click_id)
    # Only a click id the service accepts for the program is set again; a visit without one sets nothing.
    assert unknown.status_code == organic.status_code == 200
    assert click_cookies(unknown) == click_cookies(organic) == []


def test_over_tls_as_www_the_cookie_is_secure_and_shared_with_the_apex(shop, link):
    """The proxy's X-Forwarded-Proto (https) and X-Forwarded-Host (www.example.com) reach the service."""
    assert shop.tls_url
    with client_from(shop.tls_url, loopback_with_a_full_window(), host="www.example.com") as browser:
        response = browser.post(f"/_svc{CLICK}", json=click_body(link))
    assert response.status_code == 200, response.text
    assert_first_party_cookie(response, response.json()["click_id"], secure="", domain="example.com")
