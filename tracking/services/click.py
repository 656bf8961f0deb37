from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Any, Required, TypedDict
from urllib.parse import parse_qs, urlsplit

from django.db import IntegrityError, transaction
from django.utils import timezone

from core import messages
from core.clientip import parse_ip
from core.errors import ApiError, BadRequestError, TypedGoneError
from core.ids import id_parse
from core.sql import SqlValue, insert_pair
from core.text import storable_text
from fraud.click import ClickQuality, click_quality
from fraud.rules import Traffic, agent_judged
from programs.link_aliases import alias_code
from programs.models import Program, ProgramKey

from ..enrichment import BOT_DEVICE, OTHER_DEVICE, device_for_user_agent, geo_for_ip
from ..link_cache import LinkTarget, link_target_forget, link_target_get, program_aliases_get
from ..models import ClickEvent, Customer
from ..quality import duplicate_found
from ..sql import DUPLICATE_SQL, LINK_GUARD_SQL, duplicate_params
from .common import (
    TestEventRecorded,
    body_test_mode,
    check_test_program,
    new_click_id,
    tracking_log,
)

MAX_URL_LENGTH = 4096


def _landing(affiliate_url: str, program_id: object = None) -> tuple[str, dict[str, list[str]], bool]:
    """The referral code of the landing URL, its `aff` value or its `via` alias (aff wins when both are present),
    else, for a call naming its program (`program_id`), the value of the first of the program's link aliases
    present; the URL's parsed query (the paid_ads rule reads it); and whether the code came from an alias (the
    link must then be that program's)."""
    if not affiliate_url:
        raise BadRequestError(messages.AFFILIATE_URL_REQUIRED)
    try:
        parts = urlsplit(affiliate_url.strip())
    except ValueError:
        raise BadRequestError(messages.INVALID_AFFILIATE_URL) from None
    if len(affiliate_url) > MAX_URL_LENGTH or parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadRequestError(messages.INVALID_AFFILIATE_URL)
    query = parse_qs(parts.query)
    _name, code = _code_of(query, ("aff", "via"))
    if code:
        return code, query, False
    # Only now is the program's alias list read: a click with aff or via never pays for it.
    scoped = id_parse(program_id) if program_id is not None else None
    aliases = program_aliases_get(scoped) if scoped is not None else None
    name, code = _code_of(query, aliases or ())
    if code:
        return alias_code(name, code), query, True
    raise BadRequestError(messages.NO_AFF_PARAMETER)


def _code_of(query: dict[str, list[str]], names: tuple[str, ...]) -> tuple[str, str]:
    """The first of `names` the query carries a non-blank value for, and that value (("", "") when none does)."""
    for name in names:
        code = next((value.strip() for value in query.get(name, []) if value.strip()), "")
        if code and not storable_text(code):
            # ?aff=%00 decodes to a NUL, which no referral code holds and PostgreSQL cannot even compare.
            raise BadRequestError(messages.INVALID_AFFILIATE_URL)
        if code:
            return name, code
    return "", ""


@dataclass(frozen=True)
class ConfiguredLink:
    """A link that can take clicks: it names its partner and its program."""

    pk: int
    short_link: str
    partner_id: int
    program_id: int
    cookie_window_days: int


def _link_for(code: str, program_id: str | int | None, *, verified: bool = False) -> ConfiguredLink:
    """The link a click on `code` lands on. `verified`: the caller's INSERT checks the link's row (link_guard), so
    facts cached longer will do; a refusal is never decided from them, only from a fresh read."""
    if verified:
        target = link_target_get(code, verified=True)
        if target is None:
            # Read just now (an unknown code is never cached): refused from the row as it is.
            return _configured_link(None, program_id)
        try:
            return _configured_link(target, program_id)
        except ApiError:
            pass
    return _configured_link(link_target_get(code), program_id)


def _configured_link(link: LinkTarget | None, program_id: str | int | None) -> ConfiguredLink:
    if program_id is not None:
        scoped = id_parse(program_id)
        if scoped is None:
            raise BadRequestError(messages.UNKNOWN_PROGRAM_ID)
        if link is not None and link.program_id != scoped:
            link = None
        # Only on the miss do we spend a query telling the two errors apart.
        if link is None and not Program.objects.filter(pk=scoped).exists():
            raise BadRequestError(messages.UNKNOWN_PROGRAM_ID)
    if link is None:
        raise BadRequestError(messages.REFERRAL_LINK_NOT_FOUND)
    # The window is the program's, so it is missing exactly when the program is.
    if link.partner_id is None or link.program_id is None or link.cookie_window_days is None:
        raise BadRequestError(messages.INVALID_LINK_CONFIGURATION)
    if not link.is_active:
        raise TypedGoneError(
            messages.LINK_DISABLED,
            code="link_disabled",
            hint=messages.LINK_DISABLED_HINT,
            top_level={"success": False, "message": messages.LINK_DISABLED},
        )
    return ConfiguredLink(
        pk=link.pk,
        short_link=link.short_link,
        partner_id=link.partner_id,
        program_id=link.program_id,
        cookie_window_days=link.cookie_window_days,
    )


def link_guard(link: ConfiguredLink) -> SqlValue:
    """The condition under which a click on `link` may be inserted: the link's row still says what the click was
    decided from (same code, on, same partner and program, same window)."""
    return LINK_GUARD_SQL, [link.pk, link.short_link, link.partner_id, link.program_id, link.cookie_window_days]


class ClickInput(TypedDict, total=False):
    """A click as tracking.api's ClickInputSerializer validates it: only affiliate_url is required; an
    optional field the body leaves out is absent."""

    affiliate_url: Required[str]
    page_url: str
    page_title: str
    referrer_url: str
    session_id: str
    user_agent: str
    screen_resolution: str
    viewport_size: str
    language: str
    timezone: str
    existing_click_id: str
    program_id: str | int | None
    visitor_ip: object  # any JSON value, used only when it is a valid IP
    additional_data: dict[str, Any]


@dataclass(frozen=True)
class ClickContext:
    key: ProgramKey | None
    request_ip: str
    request_user_agent: str
    request_id: str = ""
    # The request's method and headers (META), for the bot rule's HEAD and prefetch checks.
    request_method: str = "POST"
    request_meta: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClickRecorded:
    """A real click: click_id is the customer's, kept in a first-party cookie for cookie_window_days."""

    click_id: str
    partner_code: str
    cookie_window_days: int
    # None for a bot's or a prefetch's click: recorded, never attributed (fraud.click).
    customer: Customer | None
    click_event: ClickEvent


@dataclass(frozen=True)
class ClickFields:
    """A click's columns as its body, its request, its link and the click rules give them, up to its insert; the
    customer's part (customer, click_id) is set once the customer is known."""

    program_id: int
    partner_id: int
    link_id: int
    session_id: str
    page_url: str
    page_title: str
    referrer_url: str
    user_agent: str
    screen_resolution: str
    viewport_size: str
    language: str
    timezone: str
    geo_country: str
    geo_region: str
    geo_city: str
    device_type: str
    device_os: str
    browser_name: str
    is_test: bool
    click_timestamp: datetime
    created_at: datetime
    traffic: str
    flags: list[str]
    visitor_hash: str

    def event(self, *, click_id: str, customer: Customer | None = None) -> ClickEvent:
        """The click's row (not saved yet) under click_id, with its customer when it is saved already (a new
        visitor's is referred to inside the INSERT). The values go in positionally, in the model's field order, as
        Model.from_db passes them: matching two dozen keyword arguments costs a click more than this dataclass."""
        given = {"id": None, "customer_id": None, "click_id": click_id}
        values = [given[name] if name in given else getattr(self, name) for name in _EVENT_COLUMNS]
        event = ClickEvent(*values)  # type: ignore[misc]  # django-stubs' plugin reads *values as the id alone
        if customer is not None:
            event.customer = customer
        return event


# ClickEvent's columns in field order: ClickFields' fields, but for the id and the customer's part.
_EVENT_COLUMNS = tuple(field.attname for field in ClickEvent._meta.concrete_fields)


class ClickWrite(Enum):
    """How a decided click is written (_click_write)."""

    TEST = "test"  # a test click and its own test customer
    UNATTRIBUTED = "unattributed"  # a bot's or a prefetch's click, alone: no customer
    GUARDED = "guarded"  # a new visitor: the customer and its click in one statement that checks the link's row
    TRANSACTION = "transaction"  # the customer found (existing_click_id) or created, and its click


@dataclass(frozen=True)
class ClickDecision:
    """What a click was decided to be, from its body, its request and its link's facts: its columns and its write."""

    write: ClickWrite
    fields: ClickFields
    link: ConfiguredLink
    code: str  # the link's code, as the link cache keys it
    quality: ClickQuality | None  # None for a test click only
    existing_click_id: str
    scoped: bool  # the body names the program: a customer of another program is not reused


def click_record(*, data: ClickInput, context: ClickContext) -> ClickRecorded | TestEventRecorded:
    """Records one click on a referral link and answers the click_id to keep in a first-party cookie.

    Raises BadRequestError (bad URL, unknown program or link, broken link), GoneError (link off, nothing
    recorded) and ForbiddenError (test mode naming another program than the key's)."""
    return _click_record(data=data, context=context)


# A click is decided again, from its link's row as it is now, when that row changed under it; a link changed again and
# again meanwhile cannot keep it going round: the last decision takes the transaction, which needs no unchanged row.
MAX_CLICK_DECISIONS = 3


def _click_record(*, data: ClickInput, context: ClickContext) -> ClickRecorded | TestEventRecorded:
    # Only the first decision may use a link's facts cached long (its INSERT checks the row): a second one comes of a
    # row that changed, and reads it again.
    verified_link = True
    for decision in range(1, MAX_CLICK_DECISIONS + 1):
        last = decision == MAX_CLICK_DECISIONS
        decided = _click_decide(data=data, context=context, verified_link=verified_link, last=last)
        recorded = None if decided is None else _click_write(decided, request_id=context.request_id)
        if recorded is not None:
            return recorded
        verified_link = False
    raise AssertionError("the last decision always writes: its write checks no row")


def _click_decide(*, data: ClickInput, context: ClickContext, verified_link: bool, last: bool) -> ClickDecision | None:
    """The click's link, columns and write. None: its link's facts, cached long, are no longer what the link cache
    reads now, and this write would not check them (the click is decided again)."""
    additional = data.get("additional_data") or {}
    # On click a key "affects only visitor_ip" (and the test-mode program check): only the body flag
    # makes a test click, even with the test key.
    test_mode = body_test_mode(additional)
    if test_mode:
        check_test_program(additional_data=additional, key=context.key)
    # The program an alias is read for: the body's program_id, else additional_data's (the tracker sends both).
    named_program = data.get("program_id")
    if named_program is None:
        named_program = additional.get("program_id")
    code, landing_query, by_alias = _landing(data.get("affiliate_url") or "", named_program)
    # An alias is the program's own parameter: its code is looked up inside that program only.
    link_scope = named_program if by_alias else data.get("program_id")
    existing_click_id = data.get("existing_click_id") or ""
    # A new visitor's click (the common one) is inserted by one statement that checks the link's row (link_guard).
    guarded = not test_mode and not existing_click_id and not last
    link = _link_for(code, link_scope, verified=verified_link and guarded)
    fields, quality = _click_fields(data=data, context=context, link=link, landing_query=landing_query, test=test_mode)
    if quality is None:
        write = ClickWrite.TEST
    elif not quality.attributed:
        if not last and _link_for(code, link_scope) != link:
            # This INSERT checks no row: facts cached for the guarded one are read again if they are old.
            return None
        write = ClickWrite.UNATTRIBUTED
    else:
        write = ClickWrite.GUARDED if guarded else ClickWrite.TRANSACTION
    return ClickDecision(
        write=write,
        fields=fields,
        link=link,
        code=code,
        quality=quality,
        existing_click_id=existing_click_id,
        scoped=data.get("program_id") is not None,
    )


def _click_fields(
    *, data: ClickInput, context: ClickContext, link: ConfiguredLink, landing_query: dict[str, list[str]], test: bool
) -> tuple[ClickFields, ClickQuality | None]:
    """The click's columns, from its visitor (IP, user agent, their geo and device) and, but for a test click, the
    click rules' verdict (also answered: the writes read it)."""
    program_id = link.program_id
    # visitor_ip is trusted only from the link's own program's server (not a retired key).
    visitor_ip = parse_ip(data.get("visitor_ip"))
    own_key = context.key is not None and context.key.program_id == program_id
    ip = visitor_ip if (visitor_ip and own_key) else context.request_ip
    # The spec's fallback: without user_agent in the body, the request's User-Agent header.
    body_user_agent = data.get("user_agent") or ""
    user_agent = body_user_agent or context.request_user_agent
    geo = geo_for_ip(ip)
    device = device_for_user_agent(user_agent[:1024])
    # A server's HTTP client named only in the header (Python-urllib, Java/17) is no crawler: ua-parser's spider
    # is neither the click's device nor a bot for the rule.
    device_type = device.device_type
    if device_type == BOT_DEVICE and not agent_judged(user_agent=user_agent, from_body=bool(body_user_agent)):
        device_type = OTHER_DEVICE
    now = timezone.now()
    quality = None
    if not test:
        quality = click_quality(
            program_id=program_id,
            ip=ip,
            user_agent=user_agent,
            is_bot_agent=device_type == BOT_DEVICE,
            method=context.request_method,
            meta=context.request_meta,
            landing_query=landing_query,
            now=now,
        )
    return ClickFields(
        program_id=program_id,
        partner_id=link.partner_id,
        link_id=link.pk,
        session_id=data.get("session_id", ""),
        page_url=data.get("page_url", ""),
        page_title=data.get("page_title", ""),
        referrer_url=data.get("referrer_url", ""),
        user_agent=user_agent,
        screen_resolution=data.get("screen_resolution", ""),
        viewport_size=data.get("viewport_size", ""),
        language=data.get("language", ""),
        timezone=data.get("timezone", ""),
        geo_country=geo.country,
        geo_region=geo.region,
        geo_city=geo.city,
        device_type=device_type,
        device_os=device.device_os,
        browser_name=device.browser_name,
        is_test=test,
        click_timestamp=now,
        created_at=now,
        # A test click's are the model's defaults: no rule ran on it.
        traffic=quality.traffic if quality else "",
        flags=quality.flags if quality else [],
        visitor_hash=quality.visitor_hash if quality else "",
    ), quality


def _click_write(decided: ClickDecision, *, request_id: str) -> ClickRecorded | TestEventRecorded | None:
    """Writes the click as decided, with its customer. None: the link's row changed since its facts were cached (the
    guarded INSERT inserted nothing), and the click is to be decided again."""
    fields, link = decided.fields, decided.link
    if decided.write is ClickWrite.TEST:
        # Test clicks get their own test customer and touch no real counters or attribution.
        with transaction.atomic():
            customer = _customer_create(click_id=new_click_id(fields.program_id), fields=fields)
            event = fields.event(click_id=customer.click_id, customer=customer)
            event.save()
        tracking_log(
            program_id=fields.program_id,
            event="click",
            outcome="test",
            is_test=True,
            request_id=request_id,
            click_id=customer.click_id,
        )
        return TestEventRecorded(event=event, message=messages.CLICK_TEST_RECORDED, click_id=customer.click_id)
    if decided.write is ClickWrite.UNATTRIBUTED:
        # A bot or a prefetch: the click alone, with no customer, so nothing it leads to is attributed. A browser
        # that sent its cookie's existing_click_id gets it back (a prefetch must not replace the visitor's cookie),
        # but that customer is not touched: its attribution window is not extended. Otherwise a click id no
        # customer has.
        event = fields.event(click_id=decided.existing_click_id or new_click_id(fields.program_id))
        event.save(force_insert=True)
        return _recorded(event, link=link, customer=None)
    quality = decided.quality
    assert quality is not None  # the rules ran on every click but a test one
    if decided.write is ClickWrite.GUARDED:
        # The common click (a new visitor): the customer and its click in one statement, atomic by itself, so
        # one round trip and no BEGIN/COMMIT; the link check and the duplicate rule's probe run inside it (SQLite,
        # which has no INSERT in WITH: the same two INSERTs in a transaction, core.sql.insert_pair).
        customer = _customer_new(click_id=new_click_id(fields.program_id), fields=fields)
        event = fields.event(click_id=customer.click_id)
        inserted = insert_pair(
            customer,
            event,
            refers={
                "customer_id": "{first_id}",
                "traffic": (DUPLICATE_SQL, duplicate_params(quality, link_id=link.pk)),
            },
            guard=link_guard(link),
            # Inside a caller's transaction, a savepoint keeps a failed statement from breaking it.
            savepoint=True,
        )
        if not inserted:
            # The link changed since it was cached (turned off, moved, renamed, deleted): decide the click again
            # from its row as it is now.
            link_target_forget(decided.code)
            return None
        # Set after the insert, which reads customer_id back: set before, the reference would be dropped with it.
        event.customer = customer
        return _recorded(event, link=link, customer=customer)
    if duplicate_found(quality, link_id=link.pk):
        fields = replace(fields, traffic=Traffic.DUPLICATE)
    with transaction.atomic():
        customer = _customer_for_click(
            existing_click_id=decided.existing_click_id, fields=fields, scoped=decided.scoped
        )
        event = fields.event(click_id=customer.click_id, customer=customer)
        event.save()
        # No counter is updated here: the rollup task adds the clicks to the link and partner counters
        # (tracking.rollups), so the clicks of a popular link never queue on its row lock.
    return _recorded(event, link=link, customer=customer)


def _recorded(event: ClickEvent, *, link: ConfiguredLink, customer: Customer | None) -> ClickRecorded:
    """The click as answered: its click id is the customer's (or, with no customer, the one the click kept)."""
    return ClickRecorded(
        click_id=event.click_id,
        partner_code=link.short_link,
        cookie_window_days=link.cookie_window_days,
        customer=customer,
        click_event=event,
    )


def _customer_for_click(*, existing_click_id: str, fields: ClickFields, scoped: bool) -> Customer:
    """Reuses the customer behind existing_click_id (it keeps its first partner), unless the call is
    scoped to a program and that customer belongs to another one. Otherwise a new customer, under
    existing_click_id when nobody has it yet."""
    if existing_click_id:
        existing = Customer.objects.filter(click_id=existing_click_id, is_test=False).first()
        if existing is not None and not (scoped and existing.program_id != fields.program_id):
            Customer.objects.filter(pk=existing.pk).update(last_clicked_at=fields.click_timestamp)
            existing.last_clicked_at = fields.click_timestamp
            return existing
        if existing is None and not Customer.objects.filter(click_id=existing_click_id).exists():
            try:
                with transaction.atomic():
                    return _customer_create(click_id=existing_click_id, fields=fields)
            except IntegrityError:
                # A concurrent click created it first: reuse theirs.
                return Customer.objects.get(click_id=existing_click_id)
    return _customer_create(click_id=new_click_id(fields.program_id), fields=fields)


def _customer_create(*, click_id: str, fields: ClickFields) -> Customer:
    customer = _customer_new(click_id=click_id, fields=fields)
    customer.save(force_insert=True)
    return customer


def _customer_new(*, click_id: str, fields: ClickFields) -> Customer:
    """The customer the click creates (not saved yet): the click's program, partner, link, time, visitor and flags. A
    test click's is a test customer (no rule ran on it: no visitor and no flags)."""
    return Customer(
        program_id=fields.program_id,
        click_id=click_id,
        first_partner_id=fields.partner_id,
        first_link_id=fields.link_id,
        is_test=fields.is_test,
        first_clicked_at=fields.click_timestamp,
        last_clicked_at=fields.click_timestamp,
        visitor_hash=fields.visitor_hash,
        click_flags=fields.flags,
        created_at=fields.created_at,
    )
