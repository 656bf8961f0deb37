"""Where a webhook may be sent. A URL whose host is, or resolves to, a private, loopback, link-local or otherwise
non-public address is refused (unless WEBHOOK_ALLOW_PRIVATE_URLS, for self-hosted networks): checked when the
endpoint is saved, and again at every delivery, when the request then goes to the very address that was checked
(the Host header and TLS name stay the URL's), so a DNS answer that changes in between cannot redirect it."""

import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from . import messages


class UrlRefused(ValueError):
    """The URL may not receive webhooks; the message says why."""


# IPv6 addresses whose packets go to the IPv4 address in their last 32 bits, judged by it: an IPv4-mapped one
# (::ffff:10.0.0.5 is 10.0.0.5 on a dual-stack socket), NAT64's well-known prefix (64:ff9b::a00:5 reaches 10.0.0.5
# through the gateway) and the deprecated IPv4-compatible form.
_EMBEDDING_IPV4 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("::/96"))

# The standard library decides what is globally reachable (is_global, from IANA's special-purpose registries).
# CPython corrected those tables (gh-113171, CVE-2024-4032) in 3.11.10, 3.12.4 and 3.13; an older interpreter takes
# these blocks of the corrected table for global (192.0.0.8, 64:ff9b:1::a00:1, any 6to4 address). Listed here only
# for such an interpreter: on a current one they are not global already, and this changes nothing.
_NOT_GLOBAL_BEFORE_THE_FIX = (
    ipaddress.IPv4Network("192.0.0.0/24"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("2002::/16"),
    ipaddress.IPv6Network("3fff::/20"),
)
# The corrected table's exceptions within them: anycast addresses that are globally reachable.
_GLOBAL_EXCEPTIONS = (ipaddress.IPv4Address("192.0.0.9"), ipaddress.IPv4Address("192.0.0.10"))


def _public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if not ip.is_global or ip.is_multicast:
        return False
    return ip in _GLOBAL_EXCEPTIONS or not any(ip in network for network in _NOT_GLOBAL_BEFORE_THE_FIX)


def _allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        reached = ip.ipv4_mapped
        if reached is None and any(ip in network for network in _EMBEDDING_IPV4):
            reached = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if reached is not None:
            return _public(reached)
        if ip.is_site_local:
            return False
        # 6to4 and Teredo addresses carry IPv4 ends too (the stdlib's sixtofour, teredo): each must be public.
        tunnelled = [ip.sixtofour, *(ip.teredo or ())]
        if any(end is not None and not _public(end) for end in tunnelled):
            return False
    return _public(ip)


def url_parts(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL, or UrlRefused."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UrlRefused(messages.URL_INVALID) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UrlRefused(messages.URL_INVALID)
    if parts.username or parts.password:
        raise UrlRefused(messages.URL_CREDENTIALS)
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _literal_ip(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise UrlRefused(f"url's host {host} does not resolve ({error})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def url_check(url: str) -> None:
    """When the endpoint is saved. A host that does not resolve yet is accepted (it is checked at delivery);
    one that resolves to a non-public address, or is one, is refused."""
    _, host, port = url_parts(url)
    if settings.WEBHOOK_ALLOW_PRIVATE_URLS:
        return
    literal = _literal_ip(host)
    addresses = [literal] if literal else _resolve_or_empty(host, port)
    for address in addresses:
        if not _allowed(address):
            raise UrlRefused(messages.URL_PRIVATE.format(address=address))


def _resolve_or_empty(host: str, port: int) -> list[str]:
    try:
        return _resolve(host, port)
    except UrlRefused:
        return []


@dataclass(frozen=True)
class Target:
    """Where a delivery's request goes: the URL to connect to, and what makes the server see the original."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)


def delivery_target(url: str) -> Target:
    """The request target for a delivery, or UrlRefused. With private URLs allowed, the URL as it is;
    otherwise the host's first address (all of them must be public), pinned."""
    scheme, host, port = url_parts(url)
    if settings.WEBHOOK_ALLOW_PRIVATE_URLS:
        return Target(url=url)
    literal = _literal_ip(host)
    addresses = [literal] if literal else _resolve(host, port)
    for address in addresses:
        if not _allowed(address):
            raise UrlRefused(f"{host} resolves to {address}, a private, loopback or link-local address")
    if literal:
        return Target(url=url)
    address = addresses[0]
    netloc = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    parts = urlsplit(url)
    pinned = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    default_port = port == (443 if scheme == "https" else 80)
    host_header = host if default_port else f"{host}:{port}"
    return Target(url=pinned, headers={"Host": host_header}, extensions={"sni_hostname": host})
