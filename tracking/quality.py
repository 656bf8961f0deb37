"""The fraud rules applied to tracking's events: what a click counts as, and what the rules find on a sale
before its commission is created. The rules themselves are fraud.rules' small functions; this module gathers
what they read (the visitor, the stored clicks, customers and sales) and applies the program's settings
(fraud.config).

A click's cost stays one statement on PostgreSQL: the duplicate probe runs inside the click's own INSERT
(DUPLICATE_SQL), and the program's rules come from the process cache."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from commissions.services import NO_FLAGS, SaleFlags
from fraud.config import ProgramRules, program_rules
from fraud.models import RuleSetting
from fraud.rules import (
    SPECS,
    Fired,
    Rule,
    Traffic,
    ad_click_ids,
    over_threshold,
    request_traffic,
    self_referral,
    visitor_hash,
)

from .link_cache import partner_email_get
from .models import ClickEvent, Customer, SaleEvent


@dataclass(frozen=True)
class ClickQuality:
    """What the click rules decided before the click is stored. `duplicate_since`: when the duplicate rule runs,
    the start of its window (a counted click of the visitor on the link since then makes this one a duplicate);
    None when it does not run (rule off, or the click is not a human one)."""

    traffic: str
    flags: list[str]
    visitor_hash: str
    duplicate_since: datetime | None

    @property
    def attributed(self) -> bool:
        """Bots and prefetches are recorded without a customer: never attributed."""
        return self.traffic not in (Traffic.BOT, Traffic.PREFETCH)


def click_quality(
    *,
    program_id: int,
    ip: str,
    user_agent: str,
    is_bot_agent: bool,
    method: str,
    meta: Mapping[str, str],
    landing_query: Mapping[str, Iterable[str]],
    now: datetime,
) -> ClickQuality:
    rules = program_rules(program_id)
    traffic: str = Traffic.HUMAN
    if rules.on(Rule.BOT):
        traffic = request_traffic(method=method, meta=meta, is_bot_agent=is_bot_agent)
    flags = [Rule.PAID_ADS.value] if rules.on(Rule.PAID_ADS) and ad_click_ids(landing_query) else []
    duplicates = rules.on(Rule.DUPLICATE_CLICK)
    since = (
        now - timedelta(minutes=duplicates.window_minutes or 60)
        if duplicates is not None and traffic == Traffic.HUMAN
        else None
    )
    return ClickQuality(
        traffic=traffic,
        flags=flags,
        visitor_hash=visitor_hash(ip=ip, user_agent=user_agent),
        duplicate_since=since,
    )


def _duplicate_sql() -> str:
    """The traffic column of a click's INSERT: DUPLICATE when the rule runs (first %s) and a counted click of the
    same visitor (second) on the same link (third) exists since the window's start (fourth); otherwise the
    traffic decided before (fifth). The probe uses the partial index click_counted_visitor_link."""
    table = ClickEvent._meta.db_table
    return (
        f'CASE WHEN %s AND EXISTS (SELECT 1 FROM "{table}" AS seen WHERE seen."visitor_hash" = %s '
        f'AND seen."link_id" = %s AND seen."traffic" = \'\' AND seen."click_timestamp" > %s) '
        f"THEN '{Traffic.DUPLICATE.value}' ELSE %s END"
    )


DUPLICATE_SQL = _duplicate_sql()


def duplicate_params(quality: ClickQuality, *, link_id: int) -> list[object]:
    return [
        quality.duplicate_since is not None,
        quality.visitor_hash,
        link_id,
        quality.duplicate_since,
        quality.traffic,
    ]


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


def _racing_duplicates_sql() -> str:
    click = ClickEvent._meta.db_table
    setting = RuleSetting._meta.db_table
    return f"""
        WITH raced AS (
            SELECT click.id FROM "{click}" AS click
            LEFT JOIN "{setting}" AS setting
                ON setting.program_id = click.program_id AND setting.rule = '{Rule.DUPLICATE_CLICK.value}'
            WHERE click.id > %s AND click.id <= %s AND click.traffic = '' AND NOT click.is_test
              AND click.visitor_hash <> '' AND COALESCE(setting.enabled, %s)
              AND EXISTS (
                  SELECT 1 FROM "{click}" AS seen
                  WHERE seen.visitor_hash = click.visitor_hash AND seen.link_id = click.link_id
                    AND seen.traffic = '' AND seen.id < click.id
                    AND seen.click_timestamp > click.click_timestamp
                        - make_interval(mins => COALESCE(setting.window_minutes, %s))
              )
        )
        UPDATE "{click}" SET traffic = '{Traffic.DUPLICATE.value}' WHERE id IN (SELECT id FROM raced)"""


def racing_duplicates_mark(*, after_id: int, up_to_id: int) -> int:
    """Marks as duplicates the counted clicks of the id range that a counted click of the same visitor on the same
    link preceded within the window: twins sent at the same instant, whose probes (each in its own INSERT) could
    not see each other. The rollup run calls it on the clicks it is about to fold in, so the reports end exact.
    PostgreSQL only (SQLite writes one transaction at a time). Returns how many it marked."""
    if connection.vendor != "postgresql":
        return 0
    spec = SPECS[Rule.DUPLICATE_CLICK]
    with connection.cursor() as cursor:
        cursor.execute(_racing_duplicates_sql(), [after_id, up_to_id, spec.enabled, spec.window_minutes])
        return cursor.rowcount


# --- Sales -----------------------------------------------------------------------------------------------------


def sale_review(*, program_id: int, customer: Customer, partner_id: int | None, sale: SaleEvent) -> SaleFlags:
    """The sale rules that fire on an attributed live sale, and the first that holds its commission. Reads nothing
    for a rule that is off; with the defaults (self_referral only) it reads the partner's email from the process
    cache, so a commissioned sale costs no extra query."""
    rules = program_rules(program_id)
    fired = [check for check in _sale_checks(rules, customer=customer, partner_id=partner_id, sale=sale) if check]
    if not fired:
        return NO_FLAGS
    hold = next((check for check in fired if rules.get(check.rule).holds), None)
    return SaleFlags(fired=tuple(fired), hold=hold)


def _sale_checks(
    rules: ProgramRules, *, customer: Customer, partner_id: int | None, sale: SaleEvent
) -> list[Fired | None]:
    checks: list[Fired | None] = []
    if rules.on(Rule.SELF_REFERRAL) and partner_id is not None:
        checks.append(self_referral_check(customer=customer, partner_id=partner_id))
    if rules.on(Rule.PAID_ADS) and Rule.PAID_ADS in (customer.click_flags or []):
        checks.append(Fired(Rule.PAID_ADS, "the customer's click came from a paid ad (an ad network's click id)"))
    velocity = rules.on(Rule.SALE_VELOCITY)
    if velocity is not None:
        checks.append(
            sale_velocity_check(
                customer=customer,
                sale=sale,
                threshold=velocity.threshold or 1,
                window_minutes=velocity.window_minutes or 60,
            )
        )
    visitors = rules.on(Rule.VISITOR_VELOCITY)
    if visitors is not None:
        checks.append(
            visitor_velocity_check(
                customer=customer, threshold=visitors.threshold or 1, window_minutes=visitors.window_minutes or 60
            )
        )
    return checks


def self_referral_check(*, customer: Customer, partner_id: int) -> Fired | None:
    reason = self_referral(customer_email=customer.email, partner_email=partner_email_get(partner_id))
    return Fired(Rule.SELF_REFERRAL, reason) if reason else None


def sale_velocity_check(*, customer: Customer, sale: SaleEvent, threshold: int, window_minutes: int) -> Fired | None:
    """More than `threshold` live sales of the customer (one click id) within the window before or after this sale,
    this one included. Counting the later ones too catches concurrent sales: of two stored at once, the one
    whose clock read earlier still counts the other (with an upper bound at its own time, neither might)."""
    window = timedelta(minutes=window_minutes)
    count = SaleEvent.objects.filter(
        customer_id=customer.pk,
        is_test=False,
        sale_date__gt=sale.sale_date - window,
        sale_date__lt=sale.sale_date + window,
    ).count()
    if not over_threshold(count=count, threshold=threshold):
        return None
    return Fired(Rule.SALE_VELOCITY, f"{count} sales from click id {customer.click_id} within {window_minutes} minutes")


def visitor_velocity_check(*, customer: Customer, threshold: int, window_minutes: int) -> Fired | None:
    """More than `threshold` customers created by the same visitor within the window before or after this
    customer's first click, this one included (the burst is caught whichever of its customers buys)."""
    if not customer.visitor_hash:
        return None
    window = timedelta(minutes=window_minutes)
    count = Customer.objects.filter(
        program_id=customer.program_id,
        visitor_hash=customer.visitor_hash,
        first_clicked_at__gte=customer.first_clicked_at - window,
        first_clicked_at__lte=customer.first_clicked_at + window,
    ).count()
    if not over_threshold(count=count, threshold=threshold):
        return None
    return Fired(Rule.VISITOR_VELOCITY, f"{count} customers from one visitor within {window_minutes} minutes")
