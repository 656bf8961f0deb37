"""Rows for the review pages' tests: held commissions and flagged clicks of a program."""

from datetime import timedelta

from django.utils import timezone

from commissions.models import Commission
from commissions.services import commission_hold
from tests.factories import CommissionFactory, CustomerFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent


def held_by_rule(
    link, *, rule: str = "self_referral", reason: str = "the customer's email is the partner's", **fields
) -> Commission:
    """A pending commission a rule held as it was made (past its hold period unless hold_until is given)."""
    sale = SaleFactory(customer=CustomerFactory(link=link), amount_cents=fields.pop("sale_cents", 10000))
    return CommissionFactory.create(
        sale=sale,
        held_at=fields.pop("held_at", timezone.now()),
        hold_rule=rule,
        hold_reason=reason,
        flags=fields.pop("flags", [rule]),
        hold_until=fields.pop("hold_until", timezone.now() - timedelta(days=1)),
        **fields,
    )


def held_by_owner(link, *, reason: str = "checking the order") -> Commission:
    sale = SaleFactory(customer=CustomerFactory(link=link))
    commission = CommissionFactory.create(sale=sale, hold_until=timezone.now() - timedelta(days=1))
    return commission_hold(commission_id=commission.pk, reason=reason, actor="user:someone")


def link_of(program, **fields):
    return ReferralLinkFactory(program=program, **fields)


def click(link, *, traffic: str = "", flags: list[str] | None = None, **fields) -> ClickEvent:
    return ClickEvent.objects.create(
        program=link.program,
        partner=link.partner,
        link=link,
        click_id=fields.pop("click_id", f"clk_{ClickEvent.objects.count() + 1}"),
        traffic=traffic,
        flags=flags or [],
        visitor_hash=fields.pop("visitor_hash", "abcdef0123456789abcdef0123456789"),
        **fields,
    )
