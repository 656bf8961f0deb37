"""The synthetic verification chain: a test click, lead and sale through the same services as real
traffic, all flagged as test, proving the pipeline end to end without touching real numbers."""

import secrets
import time
from typing import Any

from core.errors import ApiError
from programs.models import Program, ProgramKey, ReferralLink

from .click import ClickContext, click_record
from .lead import lead_record
from .sale import sale_record

VERIFICATION_AMOUNT_CENTS = 1000


def verification_run(*, program: Program, request_id: str = "") -> dict[str, Any]:
    """Runs click -> lead -> sale in test mode and reports each step. Never raises for a failing step:
    the failure and its message are the result."""
    started = time.monotonic()
    run_id = secrets.token_hex(6)
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] = {"success": False, "run_id": run_id, "program_id": program.pk, "steps": steps}
    link = ReferralLink.objects.filter(program=program, is_active=True, partner__isnull=False).order_by("pk").first()
    test_key = ProgramKey.objects.filter(program=program, mode=ProgramKey.Mode.TEST).select_related("program").first()
    if link is None or test_key is None:
        steps.append(
            {
                "step": "click",
                "ok": False,
                "message": "No active referral link with a partner" if link is None else "The program has no test key",
            }
        )
        return _finish(result, started)

    def step(name: str, call) -> dict[str, Any] | None:
        try:
            body = call()
        except ApiError as error:
            steps.append({"step": name, "ok": False, "status": error.status, "message": error.message})
            return None
        steps.append({"step": name, "ok": True, "event_id": body["data"]["eventId"]})
        return body

    click = step(
        "click",
        lambda: click_record(
            data={
                "affiliate_url": f"https://{program.domain}/?aff={link.short_link}",
                "additional_data": {"test_mode": True},
                "page_url": f"https://{program.domain}/",
                "session_id": f"verify_{run_id}",
            },
            context=ClickContext(
                key=test_key, request_ip="127.0.0.1", request_user_agent="svc-verification", request_id=request_id
            ),
        ),
    )
    if click is None:
        return _finish(result, started)
    click_id = click["data"]["click_id"]
    customer_key = f"verify_{run_id}"
    lead = step(
        "lead",
        lambda: lead_record(
            data={"click_id": click_id, "customer_key": customer_key, "email": f"{customer_key}@example.com"},
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


def _finish(result: dict[str, Any], started: float) -> dict[str, Any]:
    result["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return result
