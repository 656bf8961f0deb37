"""Private, loopback and link-local URLs are refused when an endpoint is saved and again at delivery, unless
allowed; the delivery's request goes to the very address that was checked, with the URL's Host."""

import ipaddress
import socket

import pytest

from tests.factories import ProgramFactory, WebhookEndpointFactory
from tests.webhooks.builders import new_delivery
from tests.webhooks.conftest import endpoint_to
from webhooks import addresses, messages
from webhooks.addresses import UrlRefused, delivery_target, url_check
from webhooks.delivery import delivery_attempt
from webhooks.services import WebhookRefused, endpoint_create, endpoint_update

PRIVATE_URLS = [
    ("http://127.0.0.1/hook", "127.0.0.1"),
    ("http://127.8.9.10:8080/hook", "127.8.9.10"),
    ("https://10.1.2.3/hook", "10.1.2.3"),
    ("https://192.168.1.20/hook", "192.168.1.20"),
    ("https://172.16.0.9/hook", "172.16.0.9"),
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
    ("http://[::1]:8000/hook", "::1"),
    ("http://[::ffff:127.0.0.1]/hook", "::ffff:7f00:1"),  # the mapped address, as Python writes it
    ("http://[fe80::1]/hook", "fe80::1"),
    ("http://0.0.0.0/hook", "0.0.0.0"),
]


def resolving(monkeypatch, answers: dict[str, list[str]], *, once: bool = False) -> None:
    """getaddrinfo answers these names with these addresses (only the first time, with `once`, as a DNS answer
    that changes after the check would) and refuses any other name; literal addresses resolve as they are."""
    real = socket.getaddrinfo
    asked: set[str] = set()

    def getaddrinfo(host, port, *args, **kwargs):
        if addresses._literal_ip(host):
            return real(host, port, *args, **kwargs)
        if host not in answers or (once and host in asked):
            raise socket.gaierror(socket.EAI_NONAME, "not known")
        asked.add(host)
        return [
            (socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in answers[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


class TestUrlCheck:
    @pytest.mark.parametrize(("url", "address"), PRIVATE_URLS)
    def test_it_refuses_a_non_public_address(self, settings, url, address):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        with pytest.raises(UrlRefused) as refused:
            url_check(url)
        assert str(refused.value) == messages.URL_PRIVATE.format(address=address)

    @pytest.mark.parametrize(
        "address",
        [
            "64:ff9b::a00:5",  # NAT64's well-known prefix: through the gateway, 10.0.0.5
            "64:ff9b::a9fe:a9fe",  # 169.254.169.254 through NAT64
            "2002:a00:5::",  # 6to4 of 10.0.0.5
            "::a00:5",  # the deprecated IPv4-compatible form of 10.0.0.5
            "fec0::1",  # deprecated site-local
        ],
    )
    def test_it_refuses_ipv6_forms_that_reach_a_private_address(self, settings, address):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        with pytest.raises(UrlRefused) as refused:
            url_check(f"http://[{address}]/hook")
        assert str(refused.value) == messages.URL_PRIVATE.format(address=address)

    def test_it_accepts_a_public_ipv4_address_through_nat64(self, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        url_check("http://[64:ff9b::808:808]/hook")  # 8.8.8.8

    def test_it_refuses_localhost_which_resolves_to_loopback(self, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        with pytest.raises(UrlRefused, match="private, loopback or link-local"):
            url_check("http://localhost:3000/webhooks")

    def test_it_refuses_a_name_any_of_whose_addresses_is_private(self, settings, monkeypatch):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        resolving(monkeypatch, {"mixed.example.com": ["93.184.216.34", "10.0.0.7"]})
        with pytest.raises(UrlRefused) as refused:
            url_check("https://mixed.example.com/hook")
        assert str(refused.value) == messages.URL_PRIVATE.format(address="10.0.0.7")

    def test_it_accepts_public_addresses_and_names_that_do_not_resolve_yet(self, settings, monkeypatch):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        resolving(monkeypatch, {"hooks.example.com": ["93.184.216.34", "2606:2800:220:1::"]})
        url_check("https://hooks.example.com/svc")
        url_check("https://93.184.216.34/svc")
        url_check("https://not-yet.example.com/svc")

    @pytest.mark.parametrize(("url", "address"), [*PRIVATE_URLS, ("http://localhost:3000/webhooks", "")])
    def test_the_setting_allows_private_addresses(self, settings, url, address):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
        url_check(url)

    @pytest.mark.parametrize(
        ("url", "message"),
        [
            ("ftp://hooks.example.com/x", messages.URL_INVALID),
            ("https:///nohost", messages.URL_INVALID),
            ("https://user:pass@hooks.example.com/x", messages.URL_CREDENTIALS),
        ],
    )
    def test_it_refuses_what_is_not_a_plain_http_url(self, settings, url, message):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
        with pytest.raises(UrlRefused, match=message):
            url_check(url)

    @pytest.mark.django_db
    def test_the_services_refuse_it_when_the_endpoint_is_made_or_changed(self, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        program = ProgramFactory()
        with pytest.raises(WebhookRefused, match="169.254.169.254"):
            endpoint_create(
                workspace_id=program.workspace_id,
                program_id=program.pk,
                url="http://169.254.169.254/",
                event_types=["*"],
            )
        endpoint = WebhookEndpointFactory(program=program)
        with pytest.raises(WebhookRefused, match="127.0.0.1"):
            endpoint_update(endpoint_id=endpoint.pk, changes={"url": "http://localhost/x"})
        endpoint.refresh_from_db()
        assert endpoint.url == "https://hooks.example.com/svc"


class TestDeliveryTarget:
    def test_it_pins_the_checked_address_and_keeps_the_urls_host(self, settings, monkeypatch):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        resolving(monkeypatch, {"hooks.example.com": ["93.184.216.34", "93.184.216.35"]})
        target = delivery_target("https://hooks.example.com/svc/in?x=1")
        assert target.url == "https://93.184.216.34:443/svc/in?x=1"
        assert target.headers == {"Host": "hooks.example.com"}
        assert target.extensions == {"sni_hostname": "hooks.example.com"}

    def test_a_non_default_port_stays_in_the_host_header_and_ipv6_is_bracketed(self, settings, monkeypatch):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        resolving(monkeypatch, {"hooks.example.com": ["2606:2800:220:1::"]})
        target = delivery_target("http://hooks.example.com:8080")
        assert target.url == "http://[2606:2800:220:1::]:8080/"
        assert target.headers == {"Host": "hooks.example.com:8080"}

    def test_it_refuses_a_host_that_now_resolves_to_a_private_address(self, settings, monkeypatch):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        resolving(monkeypatch, {"hooks.example.com": ["10.0.0.5"]})
        with pytest.raises(UrlRefused, match="hooks.example.com resolves to 10.0.0.5"):
            delivery_target("https://hooks.example.com/svc")

    def test_a_literal_public_address_is_sent_as_it_is(self, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        assert delivery_target("https://93.184.216.34:8443/x").url == "https://93.184.216.34:8443/x"


@pytest.mark.django_db
class TestAtDelivery:
    def test_a_host_that_resolves_to_a_private_address_is_refused_and_logged(self, settings, monkeypatch):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        program = ProgramFactory()
        endpoint = WebhookEndpointFactory(program=program, url="https://hooks.example.com/svc")
        delivery = new_delivery(program, endpoint)
        resolving(monkeypatch, {"hooks.example.com": ["10.0.0.5"]})

        outcome = delivery_attempt(delivery_id=delivery.pk)

        assert outcome is not None and outcome.status_code is None
        attempt = delivery.attempt_log.get()
        assert (attempt.succeeded, attempt.status_code) == (False, None)
        assert attempt.error == "hooks.example.com resolves to 10.0.0.5, a private, loopback or link-local address"
        delivery.refresh_from_db()
        assert (delivery.status, delivery.last_error) == ("pending", attempt.error)

    def test_the_request_goes_to_the_checked_address_with_the_urls_host(self, receiver, settings, monkeypatch):
        program = ProgramFactory()
        port = int(receiver.url.split(":")[2].split("/")[0])
        endpoint = endpoint_to(receiver, program, url=f"http://hooks.example.test:{port}/in")
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        # The name resolves to the local receiver once (a second lookup fails), so the request arrives only if it
        # goes to the address that was checked; only here is loopback counted as public, to watch it arrive.
        resolving(monkeypatch, {"hooks.example.test": ["127.0.0.1"]}, once=True)
        allowed = addresses._allowed
        monkeypatch.setattr(addresses, "_allowed", lambda address: address == "127.0.0.1" or allowed(address))

        outcome = delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)

        assert outcome is not None and outcome.succeeded
        [request] = receiver.requests
        assert request.headers["host"] == f"hooks.example.test:{port}"
        assert request.path == "/in"
        assert list(request.verified.values()) == [True]


NOT_GLOBALLY_REACHABLE = [
    "192.0.0.8",  # IETF protocol assignments (192.0.0.0/24): the interpreter's outdated table took it for global
    "192.0.0.1",
    "192.0.0.255",
    "100.64.0.1",  # shared address space (carrier-grade NAT)
    "198.18.0.1",  # benchmarking
    "192.0.2.1",  # documentation
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "224.0.0.1",  # multicast
    "::ffff:127.0.0.1",  # IPv4-mapped loopback
    "::ffff:100.64.0.1",
    "fc00::1",  # unique local
    "64:ff9b::127.0.0.1",  # NAT64 of loopback
    "64:ff9b::c000:8",  # NAT64 of 192.0.0.8
    "64:ff9b:1::a00:1",  # NAT64 local-use prefix
    "2002:808:808::1",  # 6to4 (not globally reachable, whatever its IPv4 end)
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "2001:db8::1",  # documentation
    "3fff::1",  # documentation (RFC 9637)
    "100::1",  # discard-only
    "ff02::1",  # multicast
]
GLOBALLY_REACHABLE = ["8.8.8.8", "93.184.216.34", "192.0.0.9", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


class TestGloballyReachable:
    """Reachability is the standard library's is_global (IANA's special-purpose registries), not a list of private
    ranges: 192.0.0.8 was accepted as a webhook host."""

    @pytest.mark.parametrize("address", NOT_GLOBALLY_REACHABLE)
    def test_it_refuses_an_address_that_is_not_globally_reachable(self, settings, address):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        host = f"[{address}]" if ":" in address else address
        with pytest.raises(UrlRefused) as refused:
            url_check(f"https://{host}/hook")
        assert str(refused.value) == messages.URL_PRIVATE.format(address=ipaddress.ip_address(address))
        with pytest.raises(UrlRefused):
            delivery_target(f"https://{host}/hook")

    @pytest.mark.parametrize("address", NOT_GLOBALLY_REACHABLE)
    def test_it_refuses_a_name_that_resolves_to_one(self, settings, monkeypatch, address):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        resolving(monkeypatch, {"hooks.example.com": [address]})
        with pytest.raises(UrlRefused):
            url_check("https://hooks.example.com/hook")
        with pytest.raises(UrlRefused, match=f"hooks.example.com resolves to {address}"):
            delivery_target("https://hooks.example.com/hook")

    @pytest.mark.parametrize("address", GLOBALLY_REACHABLE)
    def test_it_accepts_a_globally_reachable_address(self, settings, monkeypatch, address):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        host = f"[{address}]" if ":" in address else address
        url_check(f"https://{host}/hook")
        assert delivery_target(f"https://{host}/hook").url == f"https://{host}/hook"
        resolving(monkeypatch, {"hooks.example.com": [address]})
        url_check("https://hooks.example.com/hook")
        assert delivery_target("https://hooks.example.com/hook").headers == {"Host": "hooks.example.com"}
