"""Attribution explained: why a sale (by transaction_id) or a customer (by click_id or customer_key) was
credited the way it was. Read-only, off the hot path: the sale path only records which lookup matched
(SaleEvent.attributed_by); everything else is read back from what the sale, its customer, the commission,
its refund bookkeeping and its ledger already hold.

A sale refused because it came after the attribution window is not stored (nothing of it exists but its
tracking log row, which records the click, its age and the window): asked by transaction_id it is explained
from that row while the log keeps it; asked by click_id or customer_key the customer's explanation lists those
refusals and says whether the click is past the window now.

The fraud rules (fraud.rules) are named where they decided something: a click recorded as a duplicate, a bot or
a prefetch, a click flagged paid_ads, and a commission the sale rules flagged or held, with its review history and
what the owner can do about it. A bot's or a prefetch's click id has no customer: asked by click_id it is
explained as the click alone (kind "click"), never attributed.

Money in the texts reads as on every page (core.money: "9.80 USD", "5,000 VND"); the fields keep minor units. What a
commission still pays is said in every state (commission_payable)."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from billing.models import Platform
from commissions.approval import RULE_ACTOR
from commissions.calculations import NoCommission, commission_amount
from commissions.models import Commission, CommissionReview, CommissionStatus, LedgerEntry
from commissions.selectors import commission_ledger, commission_refund_steps
from commissions.services import commission_policy
from core.errors import NotFoundError
from core.money import money
from fraud.config import program_rules
from fraud.rules import SPECS, Rule, Traffic, self_referral
from groups.models import CouponCode
from groups.terms import DEFAULT_GROUP_NAME, partner_terms
from programs.models import PERCENT_TYPES, RECURRING_TYPES, Partner, Program, ReferralLink
from tracking.api.schema import (
    ExplainClickEventSerializer,
    ExplainCustomerSaleSerializer,
    ExplainCustomerSerializer,
    ExplainedSaleSerializer,
    ExplainLeadSerializer,
    ExplainLedgerEntrySerializer,
    ExplainLinkSerializer,
    ExplainPartnerSerializer,
    ExplainProcessorEventSerializer,
    ExplainRefundStepSerializer,
    ExplainRefusedSaleSerializer,
    ExplainReviewDecisionSerializer,
)
from tracking.attribution import attribution_window
from tracking.models import ClickEvent, Customer, LeadEvent, ProcessorEvent, SaleEvent, TrackingLog

EXPLAIN_SALE_NOT_FOUND = "Sale not found for transaction_id"
EXPLAIN_CUSTOMER_NOT_FOUND = "Customer not found for click_id or customer_key"

NOT_RECORDED = "not recorded (sale recorded before explanations)"
STRIPE_PREFIX = "stripe:"  # tracking.stripe.events.STRIPE_ATTRIBUTED_BY

# The sale endpoint's lookup order (tracking.services.sale._customer_for_sale).
API_RULES = [
    ("customer_key", "customer_key: the earliest customer of the program with that key"),
    ("click_id", "click_id: the customer of that click"),
]
# The Stripe steps in order, the spec's five then the old platform's (tracking.stripe.attribution).
STRIPE_RULES = [
    ("svc_click_id", "metadata.svc_click_id: the customer of that click"),
    ("email", "the buyer's email against the lead record, then the customer's email"),
    ("processor_customer_id", "the Stripe customer id saved after an earlier attributed payment"),
    ("client_reference_id", "client_reference_id, only when metadata has no click"),
    ("svc_customer_key", "metadata.svc_customer_key alone, against the lead record"),
    ("old_platform", "an imported platform's own metadata key, against what the import brought over"),
]
# After every rule of either path (groups.codes): listed for a program that has coupon codes, so one that never
# made any explains as before.
COUPON_RULES = {
    "api": ("coupon_code", "coupon_code: the partner holding the code, when nothing above matched"),
    "stripe": ("promotion_code", "the promotion code the checkout or invoice carried, when nothing above matched"),
}

NO_COMMISSION_TEXT = {
    NoCommission.RENEWAL_NOT_RECURRING: "a renewal, and the commission type pays the first sale only",
    NoCommission.RECURRING_PERIOD_ENDED: "a renewal after the recurring period (duration_months) ended",
}

RECENT_CLICKS = 10

# What each click rule did to a click, in the owner's words (the duplicate window is the program's setting).
TRAFFIC_RULES: dict[str, str] = {
    Traffic.DUPLICATE: Rule.DUPLICATE_CLICK,
    Traffic.BOT: Rule.BOT,
    Traffic.PREFETCH: Rule.BOT,
}
TRAFFIC_TEXT: dict[str, str] = {
    Traffic.BOT: "a crawler's user agent; recorded, never counted, never attributed",
    Traffic.PREFETCH: "a HEAD or prefetch request (the browser fetched the link speculatively); recorded, never "
    "counted, never attributed",
}
CLICK_FLAG_TEXT: dict[str, str] = {
    Rule.PAID_ADS: "an ad network's click id was in the landing URL; flagged (a sale it brings is flagged too)",
}
NEVER_ATTRIBUTED = (
    "This click was never attributed: no customer has its click id, so a lead or sale sent with it cannot attribute."
)
# Where an owner decides on a held commission.
REVIEW_ACTIONS = (
    "Release it (it is approved and credited when its hold period has passed) or void it in the dashboard's Review "
    "tab, or with the agent API: POST /api/agent/v1/commissions/{id}/release or /void (scope commissions:write)."
)


def _rate_text(rate: Decimal) -> str:
    return f"{Decimal(rate).normalize():f}"


def _partner(partner: Partner | None) -> dict[str, Any] | None:
    return ExplainPartnerSerializer(partner).data if partner else None


def _link(link: ReferralLink | None) -> dict[str, Any] | None:
    return ExplainLinkSerializer(link).data if link else None


def _customers(program: Program) -> QuerySet[Customer]:
    return Customer.objects.filter(program=program).select_related("first_partner", "first_link")


# --- The fraud rules ------------------------------------------------------------------------------------------


def _rule_step(rule: str, *, status: str, text: str) -> dict[str, str]:
    """A fraud rule that decided something, as a step: its name, what it checks (fraud.rules.SPECS), what it did
    (status) and why, in one line."""
    return {"rule": rule, "description": SPECS[rule].description, "status": status, "text": f"{rule}: {text}"}


class _ClickRules:
    """The click rules' steps for the program's clicks. The duplicate window is read (from the process cache) only
    when a duplicate is explained; it is the program's setting now."""

    def __init__(self, program_id: int) -> None:
        self.program_id = program_id

    def traffic_step(self, traffic: str) -> dict[str, str] | None:
        rule = TRAFFIC_RULES.get(traffic)
        if rule is None:
            return None
        if traffic == Traffic.DUPLICATE:
            window = program_rules(self.program_id).get(Rule.DUPLICATE_CLICK).window_minutes
            minutes = window or SPECS[Rule.DUPLICATE_CLICK].window_minutes
            text = f"the same visitor clicked this link within {minutes} minutes; recorded, not counted"
            return _rule_step(rule, status="not_counted", text=text)
        return _rule_step(rule, status="never_attributed", text=TRAFFIC_TEXT[traffic])

    def steps(self, *, traffic: str, flags: list[str] | None) -> list[dict[str, str]]:
        """How the click counts, then the flags it raised."""
        found = self.traffic_step(traffic)
        steps = [found] if found else []
        for flag in flags or []:
            if flag in SPECS:
                steps.append(_rule_step(flag, status="flagged", text=CLICK_FLAG_TEXT.get(flag, "flagged")))
        return steps


def _distinct(steps: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, str]] = set()
    out = []
    for step in steps:
        key = (step["rule"], step["status"])
        if key not in seen:
            seen.add(key)
            out.append(step)
    return out


# --- The sale ---------------------------------------------------------------------------------------------


def sale_explain(*, program: Program, transaction_id: str) -> dict[str, Any]:
    """The explanation of the program's sale with this transaction_id (the live one, else the test one), or of
    its refusal when it came after the window. Raises NotFoundError when neither is known."""
    sales = SaleEvent.objects.filter(program=program, processor_event_id=transaction_id).select_related(
        "customer__first_partner", "customer__first_link", "partner"
    )
    sale = sales.filter(is_test=False).first() or sales.filter(is_test=True).first()
    if sale is None:
        refusal = _window_refusal(program=program, transaction_id=transaction_id)
        if refusal is None:
            raise NotFoundError(EXPLAIN_SALE_NOT_FOUND)
        return _refused_sale_explain(program=program, transaction_id=transaction_id, log=refusal)

    commission = Commission.objects.filter(sale=sale).first()
    processor_event = ProcessorEvent.objects.filter(sale=sale).only("event_id", "event_type", "outcome").first()
    attribution = _attribution(program=program, sale=sale, processor_event=processor_event)
    commission_block = _commission(program=program, sale=sale, commission=commission)
    outcome, summary = _sale_outcome(sale=sale, commission=commission, attribution=attribution)
    review = _review(commission, sale=sale)
    if review is not None and review["held"]:
        summary += f" {review['text']}"
    return {
        "kind": "sale",
        "transaction_id": transaction_id,
        "recorded": True,
        "outcome": outcome,
        "summary": summary,
        "sale": ExplainedSaleSerializer(sale).data,
        "attribution": attribution,
        "partner": _partner(sale.partner),
        "processor_event": ExplainProcessorEventSerializer(processor_event).data if processor_event else None,
        "commission": commission_block,
        "review": review,
        "refunds": _refunds(sale_amount=sale.amount_cents, commission=commission),
        "ledger": _ledger(commission),
    }


def _sale_outcome(*, sale: SaleEvent, commission: Commission | None, attribution: dict[str, Any]) -> tuple[str, str]:
    if sale.is_test:
        return "test", "A test sale: stored flagged, with no commission, fee or metrics."
    if sale.customer_id is None:
        return "unattributed", "No attribution rule matched a customer: the sale is stored with no commission."
    if sale.partner_id is None:
        return "no_partner", f"Matched by {attribution['matched_rule']}, but the customer came with no partner."
    if commission is not None:
        return "commission", (
            f"Matched by {attribution['matched_rule']}; commission #{commission.pk} of "
            f"{money(commission.amount_cents, commission.currency)} is {commission.status}; it "
            f"{commission_payable(commission).text}."
        )
    if sale.no_commission_reason:
        return "no_commission", f"Attributed, but it pays nothing: {_no_commission_text(sale.no_commission_reason)}."
    return "commission_pending", "Attributed; its commission is not settled yet (the reconciler completes it)."


def _no_commission_text(reason: str) -> str:
    try:
        return NO_COMMISSION_TEXT[NoCommission(reason)]
    except ValueError:
        return reason


# A payment of a billing platform other than Stripe (billing.platforms): its attributed_by is "<platform>:<step>",
# found by the Stripe path's steps (tracking.payments).
BILLING_PREFIXES = tuple(f"{platform}:" for platform in Platform.values)


def _path_of(sale: SaleEvent, processor_event: ProcessorEvent | None) -> str:
    if sale.attributed_by.startswith(STRIPE_PREFIX) or processor_event is not None:
        return "stripe"
    if sale.attributed_by.startswith(BILLING_PREFIXES):
        return "billing"
    if sale.attributed_by:
        return "api"
    return "unknown"


def _rules(path: str, matched: str, *, attributed: bool, known: bool, with_codes: bool = False) -> list[dict[str, str]]:
    """Each rule of the path's order with what it did: matched, no_match (tried: not given or matched no
    customer), not_tried (an earlier rule matched) or unknown (not recorded). with_codes: the program has coupon
    codes, so the code rule ends the order."""
    processor = path in ("stripe", "billing")
    rules = STRIPE_RULES if processor else API_RULES
    if with_codes or matched in ("coupon_code", "promotion_code"):
        rules = [*rules, COUPON_RULES["stripe" if processor else "api"]]
    out = []
    seen = False
    for name, description in rules:
        if not known:
            status = "unknown"
        elif not attributed:
            status = "no_match"
        elif name == matched:
            status, seen = "matched", True
        else:
            status = "not_tried" if seen else "no_match"
        out.append({"rule": name, "description": description, "status": status})
    return out


def _attribution(*, program: Program, sale: SaleEvent, processor_event: ProcessorEvent | None) -> dict[str, Any]:
    path = _path_of(sale, processor_event)
    customer = sale.customer
    recorded = sale.attributed_by
    if recorded:
        matched_rule = recorded
    elif customer is None:
        matched_rule = "none (no customer matched)"
    else:
        matched_rule = NOT_RECORDED
    step = recorded.split(":", 1)[1] if path == "billing" else recorded.removeprefix(STRIPE_PREFIX)
    # A sale with no customer went through every rule; one with a customer but nothing recorded predates this.
    known = bool(recorded) or customer is None
    with_codes = CouponCode.objects.filter(program_id=program.pk).exists()
    rules = _rules(
        path, step, attributed=customer is not None, known=known and path != "unknown", with_codes=with_codes
    )
    if path == "unknown" and customer is None:
        rules = []
    return {
        "path": path,
        "matched_rule": matched_rule,
        "rules": rules,
        "click": _click(customer=customer, at=sale.sale_date),
        "window": _sale_window(program=program, sale=sale, customer=customer),
    }


def _click(*, customer: Customer | None, at: datetime) -> dict[str, Any] | None:
    """The customer's click that counted for a sale at `at`: the latest click not after it."""
    if customer is None:
        return None
    clicked_at = customer.last_clicked_at
    if clicked_at > at:
        # Clicked again after the sale: the one that counted is the latest click before it.
        earlier = (
            ClickEvent.objects.filter(customer=customer, click_timestamp__lte=at)
            .order_by("-click_timestamp")
            .values_list("click_timestamp", flat=True)
            .first()
        )
        clicked_at = earlier or customer.first_clicked_at
    return {
        "click_id": customer.click_id,
        "link": _link(customer.first_link),
        "partner": _partner(customer.first_partner),
        "first_clicked_at": customer.first_clicked_at,
        "clicked_at": clicked_at,
        # The flags the customer's first click raised (paid_ads): the sale rules read them.
        "rules": _ClickRules(customer.program_id).steps(traffic=Traffic.HUMAN, flags=customer.click_flags),
    }


def _sale_window(*, program: Program, sale: SaleEvent, customer: Customer | None) -> dict[str, Any] | None:
    if customer is None:
        return None
    click = _click(customer=customer, at=sale.sale_date)
    assert click is not None
    verdict = attribution_window(
        program=program, clicked_at=click["clicked_at"], sale_at=sale.sale_date, first_sale_at=customer.first_sale_at
    )
    age, window, within, applied = verdict.shown_age_days, verdict.window_days, verdict.within, verdict.applies
    if applied:
        text = f"The click was {age} days old at the sale; the window is {window} days: " + (
            "within it." if within else "past it."
        )
    else:
        text = (
            f"The customer had converted on an earlier sale, so this sale follows the customer "
            f"(the window applies to the converting sale only); the click was {age} days old."
        )
    return {"window_days": window, "click_age_days": age, "within": within, "applied": applied, "text": text}


# --- Commission, refunds, ledger -----------------------------------------------------------------------------


def _policy(*, program: Program, sale: SaleEvent, commission: Commission | None) -> tuple[dict[str, Any], Decimal]:
    """The policy the sale is settled with, naming where it comes from: the terms its commission recorded when it
    was computed (`recorded`: a later move or change of terms does not alter them), else what
    commissions.services.commission_policy decides now under the partner's group."""
    terms = partner_terms(partner_id=sale.partner_id, program=program)
    policy = commission_policy(program=program, product_id=sale.product_id, terms=terms)
    commission_type, rate = policy.commission_type, Decimal(policy.rate)
    group_id, group_name = terms.group_id, terms.group_name
    recorded = commission is not None and bool(commission.commission_type) and commission.commission_rate is not None
    if recorded:
        assert commission is not None and commission.commission_rate is not None
        commission_type, rate = commission.commission_type, Decimal(commission.commission_rate)
        group_id = commission.group_id
        group_name = commission.group.name if commission.group is not None else DEFAULT_GROUP_NAME
    out = {
        "source": policy.source,
        "product_id": policy.product_id,
        "commission_type": commission_type,
        "rate": _rate_text(rate),
        "recurring": commission_type in RECURRING_TYPES,
        "duration_months": terms.duration_months,
        "hold_days": terms.hold_days,
        "group": {"id": group_id, "name": group_name},
        "recorded": recorded,
    }
    return out, rate


def _arithmetic(
    *, policy: dict[str, Any], rate: Decimal, sale: SaleEvent, commission: Commission | None
) -> dict[str, Any]:
    computed = commission_amount(sale_amount=sale.amount_cents, commission_type=policy["commission_type"], rate=rate)
    currency = sale.currency
    if policy["commission_type"] in PERCENT_TYPES:
        text = f"{policy['rate']}% of {money(sale.amount_cents, currency)} = {money(computed, currency)}"
    else:
        # A fixed rate is an amount in the smallest unit of the sale's currency.
        text = f"fixed {policy['rate']} (smallest unit) = {money(computed, currency)}"
    matches = commission is None or commission.amount_cents == computed
    if not matches:
        assert commission is not None
        text += (
            f" (the commission holds {money(commission.amount_cents, commission.currency)}: the policy changed "
            "after it was created)"
        )
    return {
        "sale_amount_cents": sale.amount_cents,
        "rate": policy["rate"],
        "computed_cents": computed,
        "matches_commission": matches,
        "text": text,
    }


def _commission(*, program: Program, sale: SaleEvent, commission: Commission | None) -> dict[str, Any] | None:
    if sale.is_test or sale.partner_id is None:
        return None
    policy, rate = _policy(program=program, sale=sale, commission=commission)
    arithmetic = _arithmetic(policy=policy, rate=rate, sale=sale, commission=commission)
    reason = sale.no_commission_reason
    payable = commission_payable(commission) if commission else None
    return {
        "policy": policy,
        "arithmetic": arithmetic,
        "id": commission.pk if commission else None,
        "amount_cents": commission.amount_cents if commission else None,
        "currency": commission.currency if commission else sale.currency,
        "status": commission.status if commission else None,
        "credited": commission.credited if commission else False,
        "hold_until": commission.hold_until if commission else None,
        "approved_at": commission.approved_at if commission else None,
        "no_commission_reason": reason,
        "no_commission_text": _no_commission_text(reason) if reason else "",
        "payable_cents": payable.cents if payable else None,
        "payable_text": payable.text if payable else "",
    }


@dataclass(frozen=True)
class Payable:
    """What a commission still pays the partner, in minor units, and the same in words ("still pays 9.80 USD")."""

    cents: int
    text: str


def commission_payable(commission: Commission) -> Payable:
    """What the commission still pays in its state, as commissions.selectors.payable_cents computes it (the
    Commissions page's "still pays"), and why: a reversed commission and a pending one cancelled by a refund pay
    nothing; a credited one partly refunded pays its amount less what the refunds took back."""
    currency = commission.currency
    amount = commission.amount_cents
    status = commission.status
    if status == CommissionStatus.REVERSED:
        if commission.voided_at is not None:
            why = "voided" + (f": {commission.void_reason}" if commission.void_reason else "")
        else:
            why = "the sale was refunded in full"
        return Payable(0, f"still pays {money(0, currency)}: {why}")
    if status == CommissionStatus.REFUNDED and not commission.credited:
        return Payable(0, f"still pays {money(0, currency)}: a refund cancels a pending commission whole")
    payable = amount - commission.deducted_cents
    text = f"still pays {money(payable, currency)}"
    if commission.deducted_cents:
        text += f": {money(amount, currency)} less {money(commission.deducted_cents, currency)} taken back by refunds"
    elif status == CommissionStatus.PENDING and commission.held_at is not None:
        text += " if released: on hold"
    elif status == CommissionStatus.PENDING:
        text += ": pending, credited when its hold period ends"
    elif status == CommissionStatus.PAID:
        text += ": paid out"
    else:
        text += ": credited"
    return Payable(payable, text)


def _review(commission: Commission | None, *, sale: SaleEvent) -> dict[str, Any] | None:
    """The sale rules that fired on the commission's sale (flagged, or the one that holds it), its hold, what the
    owner can do about it, and every decision taken on it (CommissionReview, oldest first)."""
    if commission is None:
        return None
    reviews = list(CommissionReview.objects.filter(commission=commission).order_by("created_at", "pk"))
    held = commission.held_at is not None
    rules = [
        step
        for rule in commission.flags or []
        if (step := _sale_rule_step(rule, commission=commission, reviews=reviews, sale=sale)) is not None
    ]
    actions = REVIEW_ACTIONS.replace("{id}", str(commission.pk))
    if held and commission.hold_rule:
        # An owner may hold a rule-held commission again with their own reason: the rule stays, both are said.
        rule_step = next((step for step in rules if step["status"] == "held"), None)
        why = rule_step["text"] if rule_step else f"{commission.hold_rule}: {commission.hold_reason}"
        owner = ""
        if rule_step and commission.hold_reason and commission.hold_reason != rule_step["text"]:
            owner = f"; the owner's reason: {commission.hold_reason}"
        text = f"On hold by the rule {why}{owner}. {actions}"
    elif held:
        text = f"On hold by the owner{f': {commission.hold_reason}' if commission.hold_reason else ''}. {actions}"
    elif commission.voided_at is not None:
        text = f"Voided{f': {commission.void_reason}' if commission.void_reason else ''}."
    else:
        decided = [step["text"] for step in rules if step["status"] != "flagged"]
        flagged = [step["rule"] for step in rules if step["status"] == "flagged"]
        parts = [f"Was held by {'; '.join(decided)}"] if decided else []
        if flagged:
            parts.append(f"Flagged by {', '.join(flagged)}, not held: paid as usual")
        text = ". ".join(parts) + "." if parts else ""
    return {
        "held": held,
        "hold_rule": commission.hold_rule,
        "hold_reason": commission.hold_reason,
        "held_at": commission.held_at,
        "flags": list(commission.flags or []),
        "rules": rules,
        "actions": actions if held else "",
        "text": text,
        "history": list(ExplainReviewDecisionSerializer(reviews, many=True).data),
    }


def _sale_rule_step(
    rule: str, *, commission: Commission, reviews: list[CommissionReview], sale: SaleEvent
) -> dict[str, str] | None:
    """A sale rule that fired: `held` while it holds the commission, `released` / `voided` / `ended` once its
    hold was decided (the last decision), else `flagged` (it only flags). The reason is the one the rule wrote
    when it held the commission (its review entry); a flag-only rule stores none, so a flagged self_referral says
    which form matches as the two addresses read now (the sale's customer and partner, already loaded)."""
    if rule not in SPECS:
        return None
    rule_hold = next((r for r in reviews if r.actor == RULE_ACTOR and r.rule == rule and r.action == "held"), None)
    reason = rule_hold.reason.removeprefix(f"{rule}: ") if rule_hold else ""
    if commission.held_at is not None and rule == commission.hold_rule:
        return _rule_step(rule, status="held", text=reason or commission.hold_reason.removeprefix(f"{rule}: "))
    decided = next((r for r in reversed(reviews) if r.rule == rule and r.action != CommissionReview.Action.HELD), None)
    if rule_hold is not None and decided is not None:
        text = f"{reason}; {decided.action} by {decided.actor}" + (f": {decided.reason}" if decided.reason else "")
        return _rule_step(rule, status=decided.action, text=text)
    text = "flagged only; the commission is paid as usual unless held"
    if rule == Rule.SELF_REFERRAL and sale.customer is not None and sale.partner is not None:
        matched = self_referral(customer_email=sale.customer.email, partner_email=sale.partner.email)
        if matched:
            text = f"{text} ({matched}, as the addresses read now)"
    return _rule_step(rule, status="flagged", text=text)


def _refunds(*, sale_amount: int, commission: Commission | None) -> dict[str, Any]:
    if commission is None:
        return {"count": 0, "sale_refunded_cents": 0, "deducted_cents": 0, "refund_ids": [], "steps": [], "text": ""}
    steps = list(ExplainRefundStepSerializer(commission_refund_steps(commission_id=commission.pk), many=True).data)
    text = ""
    if commission.refund_count:
        currency = commission.currency
        refunded, share = money(commission.sale_refunded_cents, currency), money(commission.deducted_cents, currency)
        text = (
            f"{refunded} of {money(sale_amount, currency)} refunded: the commission's share is "
            f"{money(commission.amount_cents, currency)} × {refunded} / {money(sale_amount, currency)} rounded half "
            f"up = {share}"
        )
        if not commission.credited:
            text += " (never credited, so nothing was taken from the balance)"
        # What the refunds leave: a pending commission partly refunded is cancelled whole (the spec's refund
        # answer still reports the share above as its deductionAmount).
        text += f"; the commission {commission_payable(commission).text}"
    return {
        "count": commission.refund_count,
        "sale_refunded_cents": commission.sale_refunded_cents,
        "deducted_cents": commission.deducted_cents,
        "refund_ids": list(commission.applied_refund_ids),
        "steps": steps,
        "text": text,
    }


@dataclass(frozen=True)
class LedgerLine:
    """A ledger entry of the commission and the running total up to it (ExplainLedgerEntrySerializer renders it)."""

    entry: LedgerEntry
    running_total_cents: int


def _ledger(commission: Commission | None) -> dict[str, Any]:
    if commission is None:
        return {"entries": [], "total_cents": 0}
    lines = []
    total = 0
    for entry in commission_ledger(commission_id=commission.pk):
        total += entry.amount_cents
        lines.append(LedgerLine(entry=entry, running_total_cents=total))
    return {"entries": list(ExplainLedgerEntrySerializer(lines, many=True).data), "total_cents": total}


# --- Sales refused after the window -------------------------------------------------------------------------


def _window_refusals(*, program: Program) -> QuerySet[TrackingLog]:
    return TrackingLog.objects.filter(
        program=program, event="sale", outcome="attribution_window_expired", is_test=False
    ).order_by("-pk")


def _window_refusal(*, program: Program, transaction_id: str) -> TrackingLog | None:
    return _window_refusals(program=program).filter(details__transaction_id=transaction_id).first()


def _refused_sale_explain(*, program: Program, transaction_id: str, log: TrackingLog) -> dict[str, Any]:
    details = log.details or {}
    click_id = details.get("click_id") or ""
    customer = _customers(program).filter(click_id=click_id).first() if click_id else None
    recorded = details.get("attributed_by") or ""
    path = "stripe" if recorded.startswith(STRIPE_PREFIX) else ("api" if recorded else "unknown")
    # The verdict is the one the sale service logged when it refused the sale (tracking.attribution), not taken
    # again: the click's age and the window are read back from its log row.
    age, window = details.get("click_age_days"), details.get("window_days", program.cookie_window_days)
    if age is not None:
        text = f"The click was {age} days old at the sale; the window is {window} days: past it, nothing was recorded."
    else:
        text = f"The click was past the {window}-day window at the sale: nothing was recorded."
    return {
        "kind": "sale",
        "transaction_id": transaction_id,
        "recorded": False,
        "outcome": "attribution_window_expired",
        "summary": "The sale came after the attribution window of the customer's click: it was not recorded and "
        "creates no commission (the first sale of a customer must come within the window).",
        "sale": None,
        "attribution": {
            "path": path,
            "matched_rule": recorded or NOT_RECORDED,
            "rules": _rules(path, recorded.removeprefix(STRIPE_PREFIX), attributed=True, known=bool(recorded))
            if path != "unknown"
            else [],
            "click": _click(customer=customer, at=log.created_at) if customer else None,
            "window": {
                "window_days": window,
                "click_age_days": age,
                "within": False,
                "applied": True,
                "text": text,
            },
        },
        "partner": _partner(customer.first_partner) if customer else None,
        "processor_event": None,
        "commission": None,
        "review": None,
        "refunds": _refunds(sale_amount=0, commission=None),
        "ledger": _ledger(None),
    }


# --- The customer ---------------------------------------------------------------------------------------------


def customer_explain(
    *, program: Program, click_id: str | None = None, customer_key: str | None = None
) -> dict[str, Any]:
    """The explanation of the program's customer with this click_id, or with this customer_key (the customer
    the sale endpoint would credit: the earliest live one with it, else one whose lead sent it, else a test one).
    Raises NotFoundError when there is none."""
    customer = _customer_find(program=program, click_id=click_id, customer_key=customer_key)
    if customer is None:
        # A bot's or a prefetch's click id has no customer: the click alone is explained.
        unattributed = _click_explain(program=program, click_id=click_id) if click_id else None
        if unattributed is None:
            raise NotFoundError(EXPLAIN_CUSTOMER_NOT_FOUND)
        return unattributed
    now = timezone.now()
    click_rules = _ClickRules(program.pk)
    clicks = ClickEvent.objects.filter(customer=customer).select_related("link").order_by("-click_timestamp")
    leads = LeadEvent.objects.filter(customer=customer).order_by("pk")
    sales = SaleEvent.objects.filter(customer=customer).select_related("commission").order_by("sale_date", "pk")
    refusals = ExplainRefusedSaleSerializer(
        _window_refusals(program=program).filter(details__click_id=customer.click_id)[:RECENT_CLICKS], many=True
    ).data
    recent = _clicks_out(clicks[:RECENT_CLICKS], click_rules)
    return {
        "kind": "customer",
        "customer": ExplainCustomerSerializer(customer).data,
        "partner": _partner(customer.first_partner),
        "link": _link(customer.first_link),
        "clicks": {
            **clicks.aggregate(count=Count("pk"), counted=Count("pk", filter=Q(traffic=Traffic.HUMAN))),
            "recent": recent,
        },
        # The click rules that decided something on the customer's recent clicks, and the flags of the click that
        # created it (paid_ads: the sale rules read them).
        "rules": _distinct(
            [step for click in recent for step in click["rules"]]
            + click_rules.steps(traffic=Traffic.HUMAN, flags=customer.click_flags)
        ),
        "leads": list(ExplainLeadSerializer(leads, many=True).data),
        "sales": list(ExplainCustomerSaleSerializer(sales, many=True, context={"not_recorded": NOT_RECORDED}).data),
        "window": _customer_window(program=program, customer=customer, now=now),
        "refused_sales": refusals,
    }


def _clicks_out(clicks: Iterable[ClickEvent], click_rules: _ClickRules) -> list[dict[str, Any]]:
    return list(ExplainClickEventSerializer(clicks, many=True, context={"click_rules": click_rules}).data)


def _click_explain(*, program: Program, click_id: str) -> dict[str, Any] | None:
    """The program's clicks recorded under a click id no customer has (a bot's or a prefetch's, or a click whose
    customer was removed), newest first; None when there is none."""
    clicks = list(
        ClickEvent.objects.filter(program=program, click_id=click_id)
        .select_related("link", "partner")
        .order_by("-click_timestamp", "-pk")[:RECENT_CLICKS]
    )
    if not clicks:
        return None
    click_rules = _ClickRules(program.pk)
    latest = clicks[0]
    recent = _clicks_out(clicks, click_rules)
    rules = _distinct([step for click in recent for step in click["rules"]])
    never = latest.traffic in (Traffic.BOT, Traffic.PREFETCH)
    if never:
        summary = f"{recent[0]['rules'][0]['text']}. {NEVER_ATTRIBUTED}"
    else:
        summary = (
            "No customer has this click id any more (it was removed): a lead or sale sent with it cannot attribute."
        )
    return {
        "kind": "click",
        "click_id": click_id,
        "outcome": latest.traffic if never else "no_customer",
        "attributed": False,
        "summary": summary,
        "traffic": latest.traffic,
        "flags": list(latest.flags or []),
        "rules": rules,
        "partner": _partner(latest.partner),
        "link": _link(latest.link),
        "clicks": recent,
    }


def _customer_find(*, program: Program, click_id: str | None, customer_key: str | None) -> Customer | None:
    customers = _customers(program)
    if click_id:
        return customers.filter(click_id=click_id).first()
    if not customer_key:
        return None
    keyed = customers.filter(customer_key=customer_key).order_by("pk")
    found = keyed.filter(is_test=False).first()
    if found is None:
        lead = (
            LeadEvent.objects.filter(program=program, customer_key=customer_key, is_test=False)
            .order_by("pk")
            .values_list("customer_id", flat=True)
            .first()
        )
        found = customers.filter(pk=lead).first() if lead else None
    return found or keyed.first()


def _customer_window(*, program: Program, customer: Customer, now: datetime) -> dict[str, Any]:
    # A first sale now: the verdict the sale service would give it.
    verdict = attribution_window(program=program, clicked_at=customer.last_clicked_at, sale_at=now, first_sale_at=None)
    window, age = verdict.window_days, verdict.shown_age_days
    converted = customer.first_sale_at is not None
    open_now = converted or verdict.within
    if converted:
        text = (
            f"Converted on {customer.first_sale_at:%Y-%m-%d}: later sales and renewals follow the customer, "
            "the window no longer applies."
        )
    elif open_now:
        text = f"The latest click is {age} days old; the window is {window} days: a first sale now is attributed."
    else:
        text = (
            f"The latest click is {age} days old; the window is {window} days: past it, a first sale now is not "
            "recorded (attribution_window_expired) until the visitor clicks a partner link again."
        )
    return {
        "window_days": window,
        "click_age_days": age,
        "converted": converted,
        "open": open_now,
        "text": text,
    }


# --- Either, as asked ------------------------------------------------------------------------------------------


def explanation_get(
    *,
    program: Program,
    transaction_id: str | None = None,
    click_id: str | None = None,
    customer_key: str | None = None,
) -> dict[str, Any]:
    """The explanation asked for by one selector (tracking.api.queries.ExplainQuerySerializer): the sale with this
    transaction_id, else the customer with this click_id or customer_key."""
    if transaction_id:
        return sale_explain(program=program, transaction_id=transaction_id)
    return customer_explain(program=program, click_id=click_id, customer_key=customer_key)
