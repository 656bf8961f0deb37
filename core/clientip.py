import ipaddress

from django.conf import settings
from django.http import HttpRequest


def parse_ip(value: object) -> str | None:
    """The canonical text of an IPv4/IPv6 address, or None when value is not one."""
    if not isinstance(value, str):
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the address our trusted proxies saw when TRUSTED_PROXY_COUNT says how many
    stand in front. Left-most X-Forwarded-For entries are client-controlled and never trusted."""
    remote = request.META.get("REMOTE_ADDR", "") or "0.0.0.0"
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < hops:
        return remote
    return parse_ip(forwarded[-hops]) or remote
