"""Response bodies of the tracking API, rendered from the services' typed results. The bodies are the spec's
contract, key order included."""

from typing import Any

from commissions.services import RefundOutcome
from tracking.services.click import ClickRecorded
from tracking.services.common import TestEventRecorded
from tracking.services.lead import LeadRecorded
from tracking.services.refund import RefundInTestMode
from tracking.services.sale import SaleRecorded, SaleWindowExpired

REFUND_APPLIED = ("reversed", "refunded")


def recorded_test_event_body(result: TestEventRecorded) -> dict[str, Any]:
    data: dict[str, Any] = {"eventId": result.event_id, "programId": result.program_id, "test_mode": True}
    if result.click_id is not None:
        data["click_id"] = result.click_id
    return {"success": True, "message": result.message, "data": data}


def click_body(result: ClickRecorded | TestEventRecorded) -> dict[str, Any]:
    if isinstance(result, TestEventRecorded):
        return recorded_test_event_body(result)
    return {
        "success": True,
        "click_id": result.click_id,
        "partner_code": result.partner_code,
        "cookie_window_days": result.cookie_window_days,
    }


def lead_body(result: LeadRecorded | TestEventRecorded) -> dict[str, Any]:
    if isinstance(result, TestEventRecorded):
        return recorded_test_event_body(result)
    body: dict[str, Any] = {"success": True, "lead_id": result.lead.pk, "click_id": result.click_id}
    if result.provisional:
        body["provisional"] = True
    return body


def sale_body(result: SaleRecorded | SaleWindowExpired | TestEventRecorded) -> dict[str, Any]:
    if isinstance(result, TestEventRecorded):
        return recorded_test_event_body(result)
    if isinstance(result, SaleWindowExpired):
        return {
            "success": True,
            "attributed": False,
            "reason": "attribution_window_expired",
            "click_age_days": round(result.click_age_days, 2),
            "window_days": result.window_days,
            "sale_id": None,
            "commission_id": None,
        }
    return {
        "success": True,
        "sale_id": result.sale.pk,
        "commission_id": result.commission.pk if result.commission else None,
        "message": result.message,
    }


def refund_body(result: RefundOutcome | RefundInTestMode) -> dict[str, Any]:
    if isinstance(result, RefundInTestMode):
        return {"success": True, "test": True}
    body: dict[str, Any] = {"success": True, "status": result.status}
    if result.status in REFUND_APPLIED:
        body["deductionAmount"] = result.deduction
        body["commission_id"] = result.commission_id
    elif result.status == "skipped":
        body["reason"] = result.reason
        body["commission_id"] = result.commission_id
    else:
        body["message"] = result.message
    return body
