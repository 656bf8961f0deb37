"""The sale rules applied to an attributed live sale: which of them fire and the first whose program setting holds
the commission (SaleFlags). The decisions are here; the reads they take (the partner's email, the sales and
customers counted in a window) are made by the app that stores those rows (tracking.quality), and only for a
rule that runs."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from .config import ProgramRules, program_rules
from .rules import Fired, Rule, over_threshold, self_referral

# A velocity setting saved without a threshold or a window counts with these.
DEFAULT_THRESHOLD = 1
DEFAULT_WINDOW_MINUTES = 60


@dataclass(frozen=True)
class SaleFlags:
    """What the fraud rules found on a sale (sale_flags): every rule that fired, and the first one whose program
    setting holds the commission."""

    fired: tuple[Fired, ...] = ()
    hold: Fired | None = None

    @property
    def rules(self) -> list[str]:
        return [fired.rule for fired in self.fired]


NO_FLAGS = SaleFlags()


@dataclass(frozen=True)
class SaleSubject:
    """What the sale rules know of the sale without a read: its customer (email, click id, the flags its click
    raised, whether a visitor hash was kept) and its partner."""

    customer_email: str
    click_id: str
    click_flags: list[str]
    has_visitor: bool
    partner_id: int | None


class SaleReads(Protocol):
    """The reads the sale rules ask for, each only when its rule runs."""

    def partner_email(self, partner_id: int) -> str: ...

    def sales_within(self, window: timedelta) -> int:
        """The customer's live sales within `window` before or after this sale, this one included."""
        ...

    def visitor_customers_within(self, window: timedelta) -> int:
        """The customers created by the same visitor within `window` before or after this customer's first click,
        this one included."""
        ...


def sale_flags(*, program_id: int, subject: SaleSubject, reads: SaleReads) -> SaleFlags:
    """The sale rules that fire on an attributed live sale, and the first that holds its commission. Reads nothing
    for a rule that is off; with the defaults (self_referral only) it asks for the partner's email alone."""
    rules = program_rules(program_id)
    fired = [check for check in _sale_checks(rules, subject=subject, reads=reads) if check]
    if not fired:
        return NO_FLAGS
    hold = next((check for check in fired if rules.get(check.rule).holds), None)
    return SaleFlags(fired=tuple(fired), hold=hold)


def _sale_checks(rules: ProgramRules, *, subject: SaleSubject, reads: SaleReads) -> list[Fired | None]:
    checks: list[Fired | None] = []
    if rules.on(Rule.SELF_REFERRAL) and subject.partner_id is not None:
        checks.append(
            self_referral_fired(
                customer_email=subject.customer_email, partner_email=reads.partner_email(subject.partner_id)
            )
        )
    if rules.on(Rule.PAID_ADS) and Rule.PAID_ADS in subject.click_flags:
        checks.append(Fired(Rule.PAID_ADS, "the customer's click came from a paid ad (an ad network's click id)"))
    velocity = rules.on(Rule.SALE_VELOCITY)
    if velocity is not None:
        window_minutes = velocity.window_minutes or DEFAULT_WINDOW_MINUTES
        checks.append(
            sale_velocity_fired(
                count=reads.sales_within(timedelta(minutes=window_minutes)),
                threshold=velocity.threshold or DEFAULT_THRESHOLD,
                window_minutes=window_minutes,
                click_id=subject.click_id,
            )
        )
    visitors = rules.on(Rule.VISITOR_VELOCITY)
    if visitors is not None and subject.has_visitor:
        window_minutes = visitors.window_minutes or DEFAULT_WINDOW_MINUTES
        checks.append(
            visitor_velocity_fired(
                count=reads.visitor_customers_within(timedelta(minutes=window_minutes)),
                threshold=visitors.threshold or DEFAULT_THRESHOLD,
                window_minutes=window_minutes,
            )
        )
    return checks


def self_referral_fired(*, customer_email: str, partner_email: str) -> Fired | None:
    reason = self_referral(customer_email=customer_email, partner_email=partner_email)
    return Fired(Rule.SELF_REFERRAL, reason) if reason else None


def sale_velocity_fired(*, count: int, threshold: int, window_minutes: int, click_id: str) -> Fired | None:
    """More than `threshold` live sales of the customer (one click id) within the window before or after the sale,
    the sale included (counting the later ones too catches concurrent sales: see tracking.quality)."""
    if not over_threshold(count=count, threshold=threshold):
        return None
    return Fired(Rule.SALE_VELOCITY, f"{count} sales from click id {click_id} within {window_minutes} minutes")


def visitor_velocity_fired(*, count: int, threshold: int, window_minutes: int) -> Fired | None:
    """More than `threshold` customers created by the same visitor within the window around the customer's first
    click, the customer included (the burst is caught whichever of its customers buys)."""
    if not over_threshold(count=count, threshold=threshold):
        return None
    return Fired(Rule.VISITOR_VELOCITY, f"{count} customers from one visitor within {window_minutes} minutes")
