"""Building partners with money due and checking the ledger, for the payouts tests."""

from datetime import timedelta

from django.db.models import Sum
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.models import Commission, LedgerEntry
from payouts.models import Payout, PayoutAccount, PayoutStatus, Rail
from programs.models import Partner, PartnerAccount, Program
from tests.factories import CommissionFactory, CustomerFactory, PartnerFactory, ReferralLinkFactory, SaleFactory


def payable_partner(program: Program, *, name: str = "", rail: str = Rail.PAYPAL, **account) -> Partner:
    """A partner of the program with a portal account paid by `rail` (PayPal by default: a manual rail, sent by
    nobody but the owner)."""
    partner: Partner = PartnerFactory.create(workspace=program.workspace, **({"name": name} if name else {}))
    portal_account = PartnerAccount.objects.create(email=f"partner{partner.pk}@example.com")
    partner.account = portal_account
    partner.save(update_fields=["account"])
    fields: dict[str, object] = {"rail": rail}
    if rail == Rail.STRIPE:
        fields |= {"stripe_account_id": f"acct_test{partner.pk}", "transfers_active": True, "payouts_enabled": True}
    else:
        fields |= {"payout_email": portal_account.email}
    PayoutAccount.objects.create(account=portal_account, **(fields | account))
    return partner


def sale_commission(partner: Partner, program: Program, *, amount: int, currency: str = "USD", **fields) -> Commission:
    """A pending 20% commission on a sale the partner referred (hold over by default)."""
    link = ReferralLinkFactory(program=program, partner=partner)
    sale = SaleFactory(customer=CustomerFactory(link=link), amount_cents=amount, currency=currency)
    fields.setdefault("hold_until", timezone.now() - timedelta(seconds=1))
    commission: Commission = CommissionFactory.create(sale=sale, amount_cents=amount // 5, **fields)
    return commission


def credited(partner: Partner, program: Program, *, amount: int, currency: str = "USD") -> Commission:
    """A commission approved through the service: its credit is on the partner's ledger."""
    made = sale_commission(partner, program, amount=amount, currency=currency)
    assert commission_approve(commission_id=made.pk)
    made.refresh_from_db()
    return made


def balance(partner: Partner, currency: str = "USD") -> int:
    return (
        LedgerEntry.objects.filter(partner=partner, currency=currency).aggregate(total=Sum("amount_cents"))["total"]
        or 0
    )


def ledger_exact(partner: Partner) -> None:
    """Each currency's balance is what its commissions credited, less what refunds took back, less what live
    payouts hold; each payout's entries add up to minus its amount (nothing once failed or cancelled); and
    no commission is covered by two live payouts."""
    for currency in {entry.currency for entry in LedgerEntry.objects.filter(partner=partner)}:
        credited_total = (
            LedgerEntry.objects.filter(partner=partner, currency=currency, kind=LedgerEntry.Kind.CREDIT).aggregate(
                total=Sum("amount_cents")
            )["total"]
            or 0
        )
        clawed = (
            LedgerEntry.objects.filter(partner=partner, currency=currency, kind=LedgerEntry.Kind.DEDUCTION).aggregate(
                total=Sum("amount_cents")
            )["total"]
            or 0
        )
        live = Payout.objects.filter(partner=partner, currency=currency).exclude(
            status__in=(PayoutStatus.FAILED, PayoutStatus.CANCELLED)
        )
        paid_out = live.aggregate(total=Sum("amount_cents"))["total"] or 0
        assert balance(partner, currency) == credited_total + clawed - paid_out, currency
    for payout in Payout.objects.filter(partner=partner):
        entries = LedgerEntry.objects.filter(payout=payout).aggregate(total=Sum("amount_cents"))["total"] or 0
        dead = payout.status in (PayoutStatus.FAILED, PayoutStatus.CANCELLED)
        assert entries == (0 if dead else -payout.amount_cents), payout
