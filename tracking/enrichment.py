"""Server-side derivation of a click's location and device. Both lookups are cached per value: the
same visitors and the same browsers come back, and this runs on the click hot path."""

import ipaddress
import logging
from dataclasses import dataclass
from functools import lru_cache

import maxminddb
import ua_parser
from geolite2 import geolite2_database
from maxminddb.types import Record
from user_agents.parsers import UserAgent, parse_browser, parse_device, parse_operating_system

logger = logging.getLogger("svc.tracking")


@dataclass(frozen=True)
class Geo:
    country: str = ""
    region: str = ""
    city: str = ""


@dataclass(frozen=True)
class Device:
    device_type: str = ""
    device_os: str = ""
    browser_name: str = ""


EMPTY_GEO = Geo()
# The device_type of a user agent that ua-parser knows as a bot or crawler (the bot rule reads it).
BOT_DEVICE = "bot"
# A user agent that is no browser, phone, tablet or crawler ua-parser knows.
OTHER_DEVICE = "other"


@lru_cache(maxsize=1)
def _reader() -> maxminddb.Reader:
    # The GeoLite2 City database ships inside the maxminddb-geolite2 package: nothing is downloaded. MODE_AUTO reads
    # it with maxminddb's C extension where it is built (a tenth of the pure-Python reader's time per lookup).
    return maxminddb.open_database(geolite2_database(), maxminddb.MODE_AUTO)


@lru_cache(maxsize=8192)
def geo_for_ip(ip: str) -> Geo:
    """Country (ISO code), region and city for a public IP; empty for private, unknown or invalid ones."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return EMPTY_GEO
    if not address.is_global:
        return EMPTY_GEO
    try:
        record = _reader().get(str(address))
    except (ValueError, OSError):
        logger.warning("geo.lookup_failed", exc_info=True)
        return EMPTY_GEO
    if not isinstance(record, dict) or not record:
        return EMPTY_GEO
    subdivisions = record.get("subdivisions")
    first_subdivision = subdivisions[0] if isinstance(subdivisions, list) and subdivisions else None
    return Geo(
        country=_text_at(record, "country", "iso_code")[:2],
        region=_text_at(first_subdivision, "names", "en")[:128],
        city=_text_at(record, "city", "names", "en")[:128],
    )


def _text_at(record: Record | None, *keys: str) -> str:
    """The text at record[keys[0]][keys[1]]...; empty where the path is missing."""
    for key in keys:
        if not isinstance(record, dict):
            return ""
        record = record.get(key)
    return record if isinstance(record, str) else ""


class _ResolvedUserAgent(UserAgent):
    """user_agents' device classes (bot, tablet, mobile, pc) over ua-parser 1.0's compiled resolver (ua-parser-rs,
    about 15 µs a user agent) instead of its legacy pure-Python parser (about 1 ms), which user_agents calls. Both read
    the same ua-parser-builtins regexes (tests/tracking/test_enrichment_user_agents.py compares them)."""

    def __init__(self, user_agent_string: str):
        result = _user_agent_parser().parse(user_agent_string).with_defaults()
        browser, os, device = result.user_agent, result.os, result.device
        self.ua_string = user_agent_string
        self.os = parse_operating_system(os.family, os.major, os.minor, os.patch, os.patch_minor)
        self.browser = parse_browser(browser.family, browser.major, browser.minor, browser.patch)
        if device.brand == GENERIC_BRAND and _spider_parser().parse_device(browser.family) is not None:
            # ua-parser tries its generic-phone rule before its catch-all spider rule, so a crawler posing as a
            # phone on no named device (Bytespider) came out a phone. Its own spider rules judge the agent it named
            # ("Bytespider"), not the whole string: an app's token there (Sogou, Yahoo, Daum) is no crawler.
            device = ua_parser.Device(SPIDER_FAMILY, SPIDER_FAMILY, device.model)
        self.device = parse_device(device.family, device.brand, device.model)


@lru_cache(maxsize=1)
def _user_agent_parser() -> ua_parser.Parser:
    # The compiled resolver itself, without ua-parser's default cache in front of it: device_for_user_agent caches
    # what a click keeps of a parse, and a user agent it has not seen (the case a parse is for) would only pass
    # through ua-parser's cache and evict another, about 30 µs of the 100 a new one costs in a busy worker.
    assert ua_parser.RegexResolver is not None  # ua-parser-rs is a dependency (pyproject.toml)
    return ua_parser.Parser(ua_parser.RegexResolver(ua_parser.load_lazy_builtins()))


# ua-parser's device for a crawler (user_agents' is_bot reads it), and its brand for a device it cannot name.
SPIDER_FAMILY = "Spider"
GENERIC_BRAND = "Generic"


@lru_cache(maxsize=1)
def _spider_parser() -> ua_parser.Parser:
    """ua-parser's own device rules for crawlers, alone."""
    assert ua_parser.RegexResolver is not None  # as _user_agent_parser
    _, _, devices = ua_parser.load_builtins()
    spiders = [matcher for matcher in devices if getattr(matcher, "family", None) == SPIDER_FAMILY]
    return ua_parser.Parser(ua_parser.RegexResolver(([], [], spiders)))


def user_agent_resolver_warm() -> None:
    """Compiles the resolver's regexes (about 0.1 s), so a worker does it before its first click."""
    _user_agent_parser().parse("")
    _spider_parser().parse_device("")


@lru_cache(maxsize=4096)
def device_for_user_agent(user_agent: str) -> Device:
    if not user_agent:
        return Device()
    parsed = _ResolvedUserAgent(user_agent)
    if parsed.is_bot:
        device_type = BOT_DEVICE
    elif parsed.is_tablet:
        device_type = "tablet"
    elif parsed.is_mobile:
        device_type = "mobile"
    elif parsed.is_pc:
        device_type = "desktop"
    else:
        device_type = OTHER_DEVICE
    return Device(
        device_type=device_type,
        device_os=(parsed.os.family or "")[:64],
        browser_name=(parsed.browser.family or "")[:64],
    )
