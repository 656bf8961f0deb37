"""Builders of the groups tests: a program with a partner's link, sales with their commissions, bonuses and tier
rules, and a refund through the service both refund routes call."""

from datetime import datetime, timedelta
from typing import Any, cast

from django.utils import timezone

from commissions.models import Commission
from commissions.services import RefundOutcome, refund_apply
from groups.models import Bonus, PartnerGroup, TierRule
from groups.selectors import default_group
from programs.models import PartnerProgram, Program, ReferralLink
from tests.factories import CommissionFactory, CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tracking.models import SaleEvent


def program_link(*, hold_days: int = 30) -> tuple[Program, ReferralLink]:
    program = cast(Program, ProgramFactory(hold_days=hold_days))
    return program, cast(ReferralLink, ReferralLinkFactory(program=program))


def another_link(program: Program) -> ReferralLink:
    return cast(ReferralLink, ReferralLinkFactory(program=program))


def sale(link: ReferralLink, *, amount: int = 10000, when: datetime | None = None, **extra: Any) -> SaleEvent:
    """An attributed live sale of the link's partner with its pending commission (20%)."""
    event = cast(
        SaleEvent,
        SaleFactory(
            customer=CustomerFactory(link=link), sale_date=when or timezone.now(), amount_cents=amount, **extra
        ),
    )
    CommissionFactory(sale=event, hold_until=timezone.now() + timedelta(days=365))  # never due in these tests
    return event


def refund(event: SaleEvent, amount: int | None = None) -> RefundOutcome:
    return refund_apply(sale=event, amount=amount, refund_id=None, reason="requested_by_customer")


def bonus(program: Program, *, group: PartnerGroup | None = None, **fields: Any) -> Bonus:
    values = {"name": "Launch", "metric": "sales", "period": "month", "threshold": 3, "amount_cents": 5000}
    return Bonus.objects.create(group=group or default_group(program), **{**values, **fields})


def group(program: Program, name: str, **fields: Any) -> PartnerGroup:
    return PartnerGroup.objects.create(program=program, name=name, slug=name.lower(), **fields)


def rule(source: PartnerGroup, target: PartnerGroup, **fields: Any) -> TierRule:
    values = {"direction": "promote", "metric": "sales", "period": "month", "threshold": 3}
    return TierRule.objects.create(group=source, target=target, **{**values, **fields})


def enrolment(link: ReferralLink) -> PartnerProgram:
    return PartnerProgram.objects.get(partner=link.partner, program=link.program)


def bonus_commissions(link: ReferralLink) -> list[Commission]:
    return list(Commission.objects.filter(partner=link.partner, kind="bonus").order_by("pk"))
