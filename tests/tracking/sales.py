"""Builders shared by the POST /api/v1/track/sale test modules (their fixtures are in conftest.py)."""

from datetime import timedelta
from typing import Any

from commissions.models import Commission, LedgerEntry
from programs.models import PartnerProgram
from tests.helpers import bearer
from tracking.models import SaleEvent
from tracking.rollups import rollups_update

URL = "/api/v1/track/sale"
REFUND_URL = "/api/v1/track/refund"


def post_sale(client, program, key: str | None = None, **body):
    return client.post(URL, body, format="json", **bearer(key or program.raw_api_key))


def nothing_recorded() -> bool:
    return not (SaleEvent.objects.exists() or Commission.objects.exists() or LedgerEntry.objects.exists())


def metrics(link) -> tuple[int, int]:
    """The partner's sales and gross revenue counters once a rollup run has added the sales to them (a sale
    itself updates no counter row)."""
    rollups_update(settle=timedelta(0))
    row = PartnerProgram.objects.get(partner=link.partner, program=link.program)
    return row.sales, row.revenue_cents


def sale_body(**overrides) -> dict[str, Any]:
    return {"transaction_id": "txn_1", "amount_cents": 10000, "customer_key": "user_1", **overrides}


def program_with(link, **fields):
    program = link.program
    for name, value in fields.items():
        setattr(program, name, value)
    program.save()
    return program
