"""The synthetic verification chain: a test click, lead and sale through the same services as real
traffic, all flagged as test, proving the pipeline end to end without touching real numbers."""

import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from core import messages
from core.errors import ApiError, BadRequestError
from programs.models import Program, ProgramKey, ReferralLink

from ..models import SaleEvent
from .click import ClickContext, click_record
from .common import TestEventRecorded
from .lead import lead_record
from .sale import sale_record

VERIFICATION_AMOUNT_CENTS = 1000
FALLBACK_HOST = "example.com"


def site_url(program: Program, **query: str) -> str:
    """A page of the program's site for synthetic calls. The domain is free text (it may carry a scheme, a
    path or worse) and a short link may hold '&', '+' or '#', so both are normalised and encoded: only the
    `aff` value matters to the click service."""
    domain = program.domain.strip()
    try:
        host = urlsplit(domain if "//" in domain else f"//{domain}").hostname or FALLBACK_HOST
    except ValueError:
        host = FALLBACK_HOST
    return f"https://{host}/" + (f"?{urlencode(query)}" if query else "")


def _fixture(program: Program) -> tuple[ReferralLink | None, ProgramKey | None]:
    """The link synthetic clicks go through (the oldest active one with a partner) and the test key."""
    link = ReferralLink.objects.filter(program=program, is_active=True, partner__isnull=False).order_by("pk").first()
    test_key = ProgramKey.objects.filter(program=program, mode=ProgramKey.Mode.TEST).select_related("program").first()
    return link, test_key


def verification_run(*, program: Program, request_id: str = "") -> dict[str, Any]:
    """Runs click -> lead -> sale in test mode and reports each step. Never raises for a failing step:
    the failure and its message are the result."""
    started = time.monotonic()
    run_id = secrets.token_hex(6)
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] = {"success": False, "run_id": run_id, "program_id": program.pk, "steps": steps}
    link, test_key = _fixture(program)
    if link is None or test_key is None:
        steps.append(
            {"step": "click", "ok": False, "message": messages.NO_ACTIVE_LINK if link is None else messages.NO_TEST_KEY}
        )
        return _finish(result, started)

    def step(name: str, call: Callable[[], object]) -> TestEventRecorded | None:
        try:
            recorded = _as_test_event(call())
        except ApiError as error:
            steps.append({"step": name, "ok": False, "status": error.status, "message": error.message})
            return None
        steps.append({"step": name, "ok": True, "event_id": recorded.event_id})
        return recorded

    click = step(
        "click",
        lambda: click_record(
            data={
                "affiliate_url": site_url(program, aff=link.short_link),
                "additional_data": {"test_mode": True},
                "page_url": site_url(program),
                "session_id": f"verify_{run_id}",
            },
            context=ClickContext(
                key=test_key, request_ip="127.0.0.1", request_user_agent="svc-verification", request_id=request_id
            ),
        ),
    )
    if click is None:
        return _finish(result, started)
    click_id = click.click_id
    customer_key = f"verify_{run_id}"
    lead = step(
        "lead",
        lambda: lead_record(
            data={"click_id": click_id or "", "customer_key": customer_key, "email": f"{customer_key}@example.com"},
            key=test_key,
            request_id=request_id,
        ),
    )
    if lead is None:
        return _finish(result, started)
    sale = step(
        "sale",
        lambda: sale_record(
            data={
                "transaction_id": f"verify_{run_id}",
                "amount_cents": VERIFICATION_AMOUNT_CENTS,
                "customer_key": customer_key,
            },
            key=test_key,
            request_id=request_id,
        ),
    )
    result.update({"success": sale is not None, "click_id": click_id, "customer_key": customer_key})
    return _finish(result, started)


def _as_test_event(result: object) -> TestEventRecorded:
    """Every synthetic call goes with the test key, so the services answer a test event; anything else
    would mean a real event was recorded, which must not pass silently."""
    if not isinstance(result, TestEventRecorded):
        raise TypeError(f"a synthetic event was recorded as real: {result!r}")
    return result


def _finish(result: dict[str, Any], started: float) -> dict[str, Any]:
    result["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


SYNTHETIC_EVENT_TYPES = ("click", "lead", "sale")


def synthetic_event_send(
    *,
    program: Program,
    event_type: str,
    click_id: str = "",
    customer_key: str = "",
    request_ip: str = "127.0.0.1",
    user_agent: str = "svc-dashboard-test",
    request_id: str = "",
) -> dict[str, Any]:
    """Sends one test-mode event through the real click, lead or sale service with the program's test key,
    as an integrator's test call would, and answers what was recorded.

    - click: a test click through the program's oldest active link with a partner (a new test customer).
    - lead: a test lead for `click_id` (a test click's id); without one, a test click is recorded first.
      `customer_key` defaults to a generated one.
    - sale: a test sale of VERIFICATION_AMOUNT_CENTS attributed through `customer_key` or `click_id` when they
      match a test customer of the program; otherwise it is stored unattributed.

    Raises BadRequestError when the program has no usable link (click, or lead without click_id) or no test
    key, and whatever the tracking service raises for the data (e.g. an unknown click_id)."""
    if event_type not in SYNTHETIC_EVENT_TYPES:
        raise BadRequestError(messages.VERIFICATION_EVENT_TYPE_INVALID)
    link, test_key = _fixture(program)
    if test_key is None:
        raise BadRequestError(messages.VERIFICATION_NO_TEST_KEY)
    tag = secrets.token_hex(6)
    result: dict[str, Any] = {"event_type": event_type, "program_id": program.pk, "test_mode": True}

    if event_type == "click" or (event_type == "lead" and not click_id):
        if link is None:
            raise BadRequestError(messages.VERIFICATION_NO_LINK)
        click = _as_test_event(
            click_record(
                data={
                    "affiliate_url": site_url(program, aff=link.short_link),
                    "additional_data": {"test_mode": True},
                    "page_url": site_url(program),
                    "session_id": f"test_{tag}",
                },
                context=ClickContext(
                    key=test_key, request_ip=request_ip, request_user_agent=user_agent, request_id=request_id
                ),
            )
        )
        click_id = click.click_id or ""
        if event_type == "click":
            return {**result, "event_id": click.event_id, "message": click.message, "click_id": click_id}
        result["click_event_id"] = click.event_id

    if event_type == "lead":
        customer_key = customer_key or f"test_{tag}"
        lead = _as_test_event(
            lead_record(data={"click_id": click_id, "customer_key": customer_key}, key=test_key, request_id=request_id)
        )
        return {
            **result,
            "event_id": lead.event_id,
            "message": lead.message,
            "click_id": click_id,
            "customer_key": customer_key,
        }

    transaction_id = f"test_{tag}"
    recorded = _as_test_event(
        sale_record(
            data={
                "transaction_id": transaction_id,
                "amount_cents": VERIFICATION_AMOUNT_CENTS,
                "customer_key": customer_key,
                "click_id": click_id,
            },
            key=test_key,
            request_id=request_id,
        )
    )
    sale = recorded.event
    assert isinstance(sale, SaleEvent)  # sale_record's test event is the sale it stored
    return {
        **result,
        "event_id": recorded.event_id,
        "message": recorded.message,
        "transaction_id": transaction_id,
        "amount_cents": VERIFICATION_AMOUNT_CENTS,
        "attributed": sale.attributed,
        "click_id": sale.click_id or None,
    }
