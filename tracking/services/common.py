import logging
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core import messages
from core.errors import ForbiddenError
from core.ids import id_parse
from programs.models import ProgramKey

from ..models import ClickEvent, LeadEvent, SaleEvent, TrackingLog

logger = logging.getLogger("svc.tracking")


def new_click_id(program_id: int) -> str:
    # cust_<program>_<epoch ms> as the spec shows, plus randomness: many clicks share a millisecond.
    return f"cust_{program_id}_{int(time.time() * 1000)}_{secrets.token_hex(4)}"


# Test mode, decided in one place. Three strengths, each the spec's rule for its routes:
# - clicks and visits: only the body flag (a key on a click "affects only visitor_ip");
# - leads and refunds: the body flag or the test key;
# - sales: those, or a processor payload with livemode false.


def body_test_mode(additional_data: Any) -> bool:
    """`additional_data.test_mode` is exactly true. Takes an unchecked body: anything but an object is no flag."""
    return isinstance(additional_data, dict) and additional_data.get("test_mode") is True


def is_test_mode(additional_data: Any, key: ProgramKey | None) -> bool:
    return body_test_mode(additional_data) or (key is not None and key.is_test)


def sale_is_test(*, data: Mapping[str, Any], key: ProgramKey | None) -> bool:
    return is_test_mode(data.get("additional_data"), key) or data.get("livemode") is False


def check_test_program(*, additional_data: dict[str, Any] | None, key: ProgramKey | None) -> None:
    """Test-mode calls with a key may not name another program in additional_data.program_id."""
    if key is None or not additional_data or "program_id" not in additional_data:
        return
    if id_parse(additional_data["program_id"]) != key.program_id:
        raise ForbiddenError(messages.PROGRAM_ID_MISMATCH)


@dataclass(frozen=True)
class TestEventRecorded:
    """A test-mode click, lead or sale: stored flagged, touching nothing real. click_id is the test
    customer's, answered for a test click only."""

    __test__ = False  # not a pytest test class, though tests import it

    event: ClickEvent | LeadEvent | SaleEvent
    message: str
    click_id: str | None = None

    @property
    def event_id(self) -> int:
        return self.event.pk

    @property
    def program_id(self) -> int:
        return self.event.program_id


def tracking_log(
    *, program_id: int | None, event: str, outcome: str, is_test: bool, request_id: str = "", **details: Any
) -> None:
    """A support trail for test events and refusals. Never fails the request it describes."""
    try:
        TrackingLog.objects.create(
            program_id=program_id,
            event=event,
            outcome=outcome,
            is_test=is_test,
            request_id=request_id,
            details=details,
        )
    except Exception:
        logger.exception("tracking.log_failed", extra={"event": event, "outcome": outcome})
