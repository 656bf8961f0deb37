"""The reads behind the fraud rules on tracking's events: the duplicate-click probe over the stored clicks, the
racing duplicates the rollups mark, and the counts and emails the sale rules ask for. What fires, and whether it
holds, is decided in fraud (fraud.click, fraud.sale).

A click's cost stays one statement on PostgreSQL: the duplicate probe runs inside the click's own INSERT
(tracking.sql.DUPLICATE_SQL), and the program's rules come from the process cache."""

from datetime import timedelta

from django.db import connection

from fraud.click import ClickQuality
from fraud.rules import SPECS, Rule, Traffic
from fraud.sale import SaleFlags, SaleSubject, sale_flags

from .link_cache import partner_email_get
from .models import ClickEvent, Customer, SaleEvent

# Exported too: tracking.services.click puts the duplicate probe in the click's INSERT and reads it from here.
from .sql import racing_duplicates_sql


def duplicate_found(quality: ClickQuality, *, link_id: int) -> bool:
    """The duplicate probe as its own query, where the click is not inserted by one statement."""
    if quality.duplicate_since is None:
        return False
    return ClickEvent.objects.filter(
        visitor_hash=quality.visitor_hash,
        link_id=link_id,
        traffic=Traffic.HUMAN,
        click_timestamp__gt=quality.duplicate_since,
    ).exists()


def racing_duplicates_mark(*, after_id: int, up_to_id: int) -> int:
    """Marks as duplicates the counted clicks of the id range that a counted click of the same visitor on the same
    link preceded within the window: twins sent at the same instant, whose probes (each in its own INSERT) could
    not see each other. The rollup run calls it on the clicks it is about to fold in, so the reports end exact.
    PostgreSQL only (SQLite writes one transaction at a time). Returns how many it marked."""
    if connection.vendor != "postgresql":
        return 0
    spec = SPECS[Rule.DUPLICATE_CLICK]
    with connection.cursor() as cursor:
        cursor.execute(racing_duplicates_sql(), [after_id, up_to_id, spec.enabled, spec.window_minutes])
        marked: int = cursor.rowcount
        return marked


# --- Sales -----------------------------------------------------------------------------------------------------


class SaleNotStored(Exception):
    """A sale rule asked for the customer's stored sales about a sale not stored yet (sale_review(stored=False))."""


class _SaleReads:
    """The reads fraud.sale's rules ask for, over tracking's customers and sales."""

    def __init__(self, *, customer: Customer, sale: SaleEvent, stored: bool = True) -> None:
        self.customer = customer
        self.sale = sale
        self.stored = stored

    def partner_email(self, partner_id: int) -> str:
        return partner_email_get(partner_id)

    def sales_within(self, window: timedelta) -> int:
        # Counting the later ones too catches concurrent sales: of two stored at once, the one whose clock read
        # earlier still counts the other (with an upper bound at its own time, neither might). That holds only if
        # this sale is stored before the count.
        if not self.stored:
            raise SaleNotStored
        return SaleEvent.objects.filter(
            customer_id=self.customer.pk,
            is_test=False,
            sale_date__gt=self.sale.sale_date - window,
            sale_date__lt=self.sale.sale_date + window,
        ).count()

    def visitor_customers_within(self, window: timedelta) -> int:
        customer = self.customer
        return Customer.objects.filter(
            program_id=customer.program_id,
            visitor_hash=customer.visitor_hash,
            first_clicked_at__gte=customer.first_clicked_at - window,
            first_clicked_at__lte=customer.first_clicked_at + window,
        ).count()


def sale_review(
    *, program_id: int, customer: Customer, partner_id: int | None, sale: SaleEvent, stored: bool = True
) -> SaleFlags:
    """The sale rules (fraud.sale.sale_flags) on an attributed live sale, with what they read of its customer and
    partner. With the defaults (self_referral only) the partner's email comes from the process cache, so a
    commissioned sale costs no extra query. On a sale not `stored` yet, raises SaleNotStored when a rule would
    count the customer's stored sales (sale_velocity), which must include this one."""
    subject = SaleSubject(
        customer_email=customer.email,
        click_id=customer.click_id,
        click_flags=list(customer.click_flags or []),
        has_visitor=bool(customer.visitor_hash),
        partner_id=partner_id,
    )
    reads = _SaleReads(customer=customer, sale=sale, stored=stored)
    return sale_flags(program_id=program_id, subject=subject, reads=reads)
