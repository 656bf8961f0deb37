"""The portal's Commissions and Balance pages: a partner's own commissions, in words a partner understands, and
their balance per currency with the withdrawals history. Money comes from commissions.selectors (what a
commission still pays, what refunds took back, the ledger balances), the definitions the owner's side uses.
A partner never sees a customer's email, key or click id, nor a fraud rule's name, reason or flags."""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.core.paginator import Page
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.crypto import salted_hmac
from django.views.decorators.http import require_safe

from commissions.models import Commission, CommissionStatus, LedgerEntry, Withdrawal
from commissions.selectors import (
    ROW_RELATED,
    commission_sale_words,
    commissions_with_money,
    ledger_balances,
    ledger_kind_totals,
    open_withdrawals_by_partner,
)
from core.money import money
from core.pagination import CappedPaginator, keyset_page
from programs.models import Partner, PartnerAccount, PartnerProgram

from . import selectors
from .session import portal_page

if TYPE_CHECKING:
    from commissions.selectors import CommissionWithMoney

PER_PAGE = 50
# A program id as a query parameter: digits only, within a bigint (a longer number would overflow the query).
PROGRAM_ID = re.compile(r"[1-9][0-9]{0,17}")
_CUSTOMER_SALT = "portal.commissions.customer"

WITHDRAWAL_WORDS: dict[str, str] = {
    Withdrawal.Status.OPEN: "open: not paid yet",
    Withdrawal.Status.PAID: "paid",
    Withdrawal.Status.CANCELLED: "cancelled",
}


def utc_day(moment: datetime) -> str:
    """The moment's day in UTC, as the portal's tables show dates."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def customer_reference(*, partner_id: int, customer_id: int | None) -> str:
    """A stable reference to the customer that identifies nobody: keyed with SECRET_KEY, and per partner, so two
    partners cannot tell they share a customer."""
    if customer_id is None:
        return ""
    return "customer #" + salted_hmac(_CUSTOMER_SALT, f"{partner_id}:{customer_id}").hexdigest()[:8]


def status_words(commission: "CommissionWithMoney") -> str:
    """The commission's state as the partner reads it. A hold, by an owner or a fraud rule, is "under review"
    whatever held it: the rule, its reason and the flags are the owner's."""
    status = commission.status
    if status == CommissionStatus.REVERSED:
        return "reversed"  # refunded whole, or voided
    if commission.held_at is not None:
        return "under review"
    if status == CommissionStatus.PENDING:
        return f"pending until {utc_day(commission.hold_until)}"
    if status == CommissionStatus.REFUNDED:
        # commissions.selectors.payable_cents: nothing for one refunded during its hold (cancelled whole).
        return f"partly refunded: still pays {money(commission.payable_cents, commission.currency)}"
    return str(status)  # approved, paid


@dataclass(frozen=True)
class CommissionRow:
    program: str
    sale_date: str
    sale_amount: str
    amount: str
    status: str
    sale_refunded: str
    taken_back: str
    customer: str


def commission_row(commission: "CommissionWithMoney") -> CommissionRow:
    sale = commission.sale
    if sale is None:  # a bonus (groups.models.Bonus): no sale; dated when it was awarded, named where a sale is
        sale_date, sale_amount = utc_day(commission.created_at), commission_sale_words(commission)
        sale_currency = commission.currency
    else:
        sale_date, sale_amount, sale_currency = (
            utc_day(sale.sale_date),
            money(sale.amount_cents, sale.currency),
            sale.currency,
        )
    return CommissionRow(
        program=commission.program.name,
        sale_date=sale_date,
        sale_amount=sale_amount,
        amount=money(commission.amount_cents, commission.currency),
        status=status_words(commission),
        sale_refunded=money(commission.sale_refunded_cents, sale_currency) if commission.sale_refunded_cents else "",
        # commissions.selectors.clawed_back_cents: what refunds (or a void) took back from the partner's balance;
        # nothing for a commission never credited.
        taken_back=money(commission.clawed_back_cents, commission.currency) if commission.clawed_back_cents else "",
        customer=customer_reference(partner_id=commission.partner_id, customer_id=commission.customer_id),
    )


@require_safe
@portal_page
def commissions_page(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """The account's commissions, newest first, PER_PAGE a page; `?program=` narrows to one program the partner
    is enrolled in (any other value, another partner's or workspace's program included, is not found)."""
    programs = {enrolment.program_id: enrolment.program for enrolment in selectors.account_enrolments(account)}
    commissions = selectors.account_commissions(account)
    program_param = request.GET.get("program", "")
    program_id: int | None = None
    if program_param:
        if not PROGRAM_ID.fullmatch(program_param) or int(program_param) not in programs:
            raise Http404
        program_id = int(program_param)
        commissions = commissions.filter(program_id=program_id)
    # A keyset page (nothing counted, no OFFSET): the (partner, -created_at, -id) index gives the page's rows
    # straight, however many commissions the partner has. The money columns are worked out for those rows only.
    page = keyset_page(
        commissions, before=request.GET.get("before", ""), after=request.GET.get("after", ""), per_page=PER_PAGE
    )
    shown = {
        commission.pk: commission
        for commission in commissions_with_money(
            Commission.objects.filter(pk__in=[commission.pk for commission in page.rows]).select_related(
                "program", *ROW_RELATED
            )
        )
    }
    return render(
        request,
        "portal/commissions.html",
        {
            "account": account,
            "page": page,
            "rows": [commission_row(shown[commission.pk]) for commission in page.rows],
            "programs": list(programs.values()),
            "program_id": program_id,
            "query": f"program={program_id}" if program_id else "",
        },
    )


@dataclass(frozen=True)
class BalanceRow:
    currency: str
    credited: str
    clawed_back: str
    paid_out: str
    adjusted: str
    balance: str
    open_withdrawals: str
    available: str
    negative: bool


@dataclass(frozen=True)
class PartnerBalances:
    """One workspace's partner row of the account: its programs and its balances per currency."""

    workspace: str
    programs: list[str]
    rows: list[BalanceRow]


def balance_row(currency: str, *, balance: int, kinds: dict[str, int], open_withdrawals: int) -> BalanceRow:
    def shown(minor: int) -> str:
        return money(minor, currency)

    return BalanceRow(
        currency=currency,
        credited=shown(kinds.get(LedgerEntry.Kind.CREDIT, 0)),
        clawed_back=shown(-kinds.get(LedgerEntry.Kind.DEDUCTION, 0)),  # deductions are stored negative
        paid_out=shown(-kinds.get(LedgerEntry.Kind.PAYOUT, 0)),
        adjusted=shown(kinds.get(LedgerEntry.Kind.ADJUSTMENT, 0)) if kinds.get(LedgerEntry.Kind.ADJUSTMENT) else "",
        balance=shown(balance),
        open_withdrawals=shown(open_withdrawals),
        # What could still be asked for: never shown below 0; a negative balance is stated on its own.
        available=shown(max(0, balance - open_withdrawals)),
        negative=balance < 0,
    )


def account_balances(partners: list[Partner], enrolments: Iterable[PartnerProgram]) -> list[PartnerBalances]:
    """Each of the partner rows (an account's) with its programs (of `enrolments`, the account's) and its balance
    per currency: the balance is commissions.selectors.ledger_balances (the sum of every ledger entry, as
    commissions.services.partner_balance and the owners' API compute it), its parts ledger_kind_totals, open
    withdrawals open_withdrawals_by_partner. Four queries whatever the number of rows."""
    if not partners:
        return []
    ids = [partner.pk for partner in partners]
    enrolled: dict[int, list[str]] = {}
    for enrolment in enrolments:
        enrolled.setdefault(enrolment.partner_id, []).append(enrolment.program.name)
    balances = ledger_balances(partner_ids=ids)
    kinds = ledger_kind_totals(partner_ids=ids)
    asked = open_withdrawals_by_partner(partner_ids=ids)
    result = []
    for partner in partners:
        ledger, parts, open_by_currency = (
            balances.get(partner.pk, {}),
            kinds.get(partner.pk, {}),
            asked.get(partner.pk, {}),
        )
        rows = [
            balance_row(
                currency,
                balance=ledger.get(currency, 0),
                kinds=parts.get(currency, {}),
                open_withdrawals=open_by_currency.get(currency, 0),
            )
            for currency in sorted({*ledger, *open_by_currency})
        ]
        if rows:
            result.append(PartnerBalances(partner.workspace.name, enrolled.get(partner.pk, []), rows))
    return result


@dataclass(frozen=True)
class WithdrawalRow:
    date: str
    workspace: str
    amount: str
    requested: str
    status: str


def withdrawal_row(withdrawal: Withdrawal) -> WithdrawalRow:
    return WithdrawalRow(
        date=withdrawal.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
        workspace=withdrawal.partner.workspace.name,
        amount=money(withdrawal.amount_cents, withdrawal.currency),
        requested=money(withdrawal.requested_cents, withdrawal.currency),
        status=WITHDRAWAL_WORDS.get(withdrawal.status, str(withdrawal.status)),
    )


@require_safe
@portal_page
def balance_page(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """The account's balances per workspace and currency, then its withdrawals, newest first, PER_PAGE a page."""
    partners = selectors.account_partners(account)
    groups = account_balances(partners, selectors.account_enrolments(account))
    withdrawals = (
        selectors.account_withdrawals(account).select_related("partner__workspace").order_by("-created_at", "-pk")
    )
    page: Page[Withdrawal] = CappedPaginator(withdrawals, PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "portal/balance.html",
        {
            "account": account,
            "groups": groups,
            "page": page,
            "withdrawals": [withdrawal_row(withdrawal) for withdrawal in page],
            # A partner of several workspaces is told which one each withdrawal was asked of.
            "several_workspaces": len(partners) > 1,
        },
    )
