"""A partner's terms in a program as the portal shows them, in plain words: their group's reward terms, the
discount their audience gets, their coupon codes, and how far they are from the group's next tier or bonus. Only
the enrolment's own partner and program are read: the caller passes an enrolment of the signed-in account."""

from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone

from core.money import money
from groups.models import (
    Bonus,
    BonusAward,
    CouponCode,
    DiscountDuration,
    DiscountType,
    Metric,
    PartnerGroup,
    Period,
    TierRule,
)
from groups.periods import period_key
from groups.selectors import enrolment_group
from groups.terms import GroupTerms, program_terms
from programs.models import PERCENT_TYPES, RECURRING_TYPES, PartnerProgram
from tiers.figures import Figures, partner_figures


def _rate(rate: Decimal) -> str:
    return f"{Decimal(rate).normalize():f}"


def terms_words(terms: GroupTerms) -> str:
    """The terms in one sentence: "30% of every sale for 12 months, paid after a 30-day hold"."""
    if terms.commission_type in PERCENT_TYPES:
        each = f"{_rate(terms.rate)}% of"
    else:
        # A fixed commission is in the sale's currency (commissions.services).
        each = f"{money(int(terms.rate))} (in the sale's currency) on"
    if terms.commission_type not in RECURRING_TYPES:
        sentence = f"{each} each first payment (renewals pay nothing)"
    elif terms.duration_months:
        months = "1 month" if terms.duration_months == 1 else f"{terms.duration_months} months"
        sentence = f"{each} every sale for {months}"
    else:
        sentence = f"{each} every sale for the customer's lifetime"
    if terms.hold_days:
        return f"{sentence}, paid after a {terms.hold_days}-day hold"
    return f"{sentence}, approved at once (no hold)"


def discount_words(group: PartnerGroup) -> str:
    """What the customers the partner brings get, in words ("" for no discount): "10% off the first payment"."""
    if group.discount_type == DiscountType.PERCENT and group.discount_percent:
        off = f"{_rate(group.discount_percent)}% off"
    elif group.discount_type == DiscountType.AMOUNT and group.discount_amount_cents:
        off = f"{money(group.discount_amount_cents, group.discount_currency)} off"
    else:
        return ""
    if group.discount_duration == DiscountDuration.FOREVER:
        return f"{off} every payment"
    if group.discount_duration == DiscountDuration.REPEATING and group.discount_duration_months:
        months = group.discount_duration_months
        return f"{off} every payment for {'a month' if months == 1 else f'{months} months'}"
    return f"{off} the first payment"


def group_terms(group: PartnerGroup, enrolment: PartnerProgram) -> GroupTerms:
    """The group's reward terms as groups.terms reads them (the default group's are the program's), from the row
    just read rather than the sale's cache, so the card and its group name always agree."""
    if group.is_default:
        return program_terms(enrolment.program)
    return GroupTerms(
        group_id=group.pk,
        group_name=group.name,
        commission_type=group.commission_type,
        rate=group.commission_rate,
        duration_months=group.duration_months,
        hold_days=group.hold_days,
    )


# --- Progress ---------------------------------------------------------------------------------------------------

PERIOD_WORDS: dict[str, str] = {Period.MONTH: "this month", Period.QUARTER: "this quarter", Period.LIFETIME: "in all"}


@dataclass(frozen=True)
class Progress:
    """One goal of the partner's group: a tier to reach or a bonus to earn, with the partner's figure so far."""

    goal: str  # "Move to Gold" / "Launch: 100.00 USD bonus"
    target: str  # "10 sales this month"
    figure: int
    threshold: int
    so_far: str  # "4 sales" / "1,200.00 in revenue"
    left: str  # "6 sales more" ("" when reached)
    done: bool

    @property
    def percent(self) -> int:
        return min(100, self.figure * 100 // self.threshold) if self.threshold else 100


def _amount(metric: str, value: int) -> str:
    if metric == Metric.SALES:
        return f"{value} sale" if value == 1 else f"{value} sales"
    return f"{money(value)} in revenue"


def _progress(goal: str, metric: str, period: str, threshold: int, figure: int, earned: bool = False) -> Progress:
    done = earned or figure >= threshold
    return Progress(
        goal=goal,
        target=f"{_amount(metric, threshold)} {PERIOD_WORDS.get(period, '')}".strip(),
        figure=figure,
        threshold=threshold,
        so_far=_amount(metric, figure),
        left="" if done else f"{_amount(metric, threshold - figure)} more",
        done=done,
    )


def group_progress(enrolment: PartnerProgram, group: PartnerGroup) -> list[Progress]:
    """The partner's progress towards each active promotion of their group and each active bonus of it, with the
    figure tiers and bonuses judge by (tiers.figures: net of refunds); a bonus paid in this period shows as
    earned."""
    now = timezone.now()
    figures: dict[str, Figures] = {}

    def figure(metric: str, period: str) -> int:
        key = period_key(period, now)
        if key not in figures:
            found = partner_figures(program_id=enrolment.program_id, period_key=key, partner_ids=[enrolment.partner_id])
            figures[key] = found.get(enrolment.partner_id, Figures())
        return figures[key].of(metric)

    rows = []
    rules = (
        TierRule.objects.filter(group=group, is_active=True, direction=TierRule.Direction.PROMOTE)
        .select_related("target")
        .order_by("threshold", "pk")
    )
    for rule in rules:
        rows.append(
            _progress(
                f"Move to {rule.target.name}",
                rule.metric,
                rule.period,
                rule.threshold,
                figure(rule.metric, rule.period),
            )
        )
    bonuses = list(Bonus.objects.filter(group=group, is_active=True).order_by("threshold", "pk"))
    earned: set[tuple[int, str]] = set()
    if bonuses:
        earned = set(
            BonusAward.objects.filter(
                partner_id=enrolment.partner_id,
                bonus__in=bonuses,
                period_key__in={period_key(bonus.period, now) for bonus in bonuses},
            ).values_list("bonus_id", "period_key")
        )
    for bonus in bonuses:
        paid = (bonus.pk, period_key(bonus.period, now)) in earned
        goal = f"{bonus.name}: {money(bonus.amount_cents, bonus.currency)} bonus"
        rows.append(
            _progress(goal, bonus.metric, bonus.period, bonus.threshold, figure(bonus.metric, bonus.period), paid)
        )
    return rows


# --- The whole card ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartnerGroupView:
    """What the portal's program card shows of the partner's group."""

    group_name: str
    is_default: bool
    terms: GroupTerms
    terms_words: str
    discount: str  # "" for none
    codes: list[str]
    progress: list[Progress]


def partner_group_view(enrolment: PartnerProgram) -> PartnerGroupView:
    """The enrolment's group card: its partner's terms, discount, active codes in the program and progress."""
    group = enrolment_group(enrolment)
    terms = group_terms(group, enrolment)
    codes = list(
        CouponCode.objects.filter(partner_id=enrolment.partner_id, program_id=enrolment.program_id, is_active=True)
        .order_by("code")
        .values_list("code", flat=True)
    )
    return PartnerGroupView(
        group_name=group.name,
        is_default=group.is_default,
        terms=terms,
        terms_words=terms_words(terms),
        discount=discount_words(group),
        codes=codes,
        progress=group_progress(enrolment, group),
    )
