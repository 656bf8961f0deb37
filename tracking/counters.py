"""Running counters on the lead path, as single UPDATE ... SET n = n + k statements (no read-modify-write race;
tracking.sql.partner_program_add_sql). Clicks and sales update no counter row themselves: the rollup run adds them
to the counters (tracking.rollups)."""

from django.db import connection

from .sql import partner_program_add_sql


def partner_program_add(*, partner_id: int, program_id: int, **amounts: int) -> int:
    """Adds to the partner-program metrics (leads). Commission money has no counter: it changes with refunds, so
    it is always read from the commissions (commissions.selectors). Returns the number of rows changed: 0 when the
    partner is not enrolled in the program."""
    columns = tuple(sorted(amounts))
    with connection.cursor() as cursor:
        cursor.execute(partner_program_add_sql(columns), [*(amounts[c] for c in columns), partner_id, program_id])
        updated: int = cursor.rowcount
        return updated


def partner_leads_add(*, program_id: int, leads: dict[int, int]) -> None:
    """Adds `leads` (partner id -> how many) to the partners' lead counters in the program: partner_program_add's
    UPDATE for every partner at once (one executemany), in partner order, so two writers never deadlock."""
    if not leads:
        return
    with connection.cursor() as cursor:
        cursor.executemany(
            partner_program_add_sql(("leads",)),
            [[count, partner_id, program_id] for partner_id, count in sorted(leads.items())],
        )
