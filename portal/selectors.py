"""What a partner account may read: the rows of its own Partner rows (one per workspace it joined, or more), never
another partner's or another workspace's. Every portal page reads its rows here; no page filters by account itself.

An inactive account is given nothing, as portal.session.signed_in_account gives no page to it: the session is what
keeps it out, and this is what it would see were a page ever reached without it."""

from typing import TypeVar

from django.db.models import Model, QuerySet

from commissions.models import Commission, Withdrawal
from payouts.models import Payout, PayoutAccount
from programs.models import Partner, PartnerAccount, PartnerProgram, ReferralLink

M = TypeVar("M", bound=Model)


def _of_account(model: type[M], account: PartnerAccount, via: str = "partner__account") -> QuerySet[M]:
    """The rows of `model` that belong to the account, `via` their key to it (a partner row's, by default); none for
    an inactive account."""
    if not account.is_active:
        return model._default_manager.none()
    return model._default_manager.filter(**{via: account})


def account_partners(account: PartnerAccount) -> list[Partner]:
    """The account's partner rows, with their workspaces, by workspace name."""
    return list(
        _of_account(Partner, account, via="account").select_related("workspace").order_by("workspace__name", "pk")
    )


def account_partner_ids(account: PartnerAccount) -> list[int]:
    """The ids of the account's partner rows (one small read): a query by them then uses the (partner, ...)
    indexes of the big tables, where a join on the account would not."""
    return list(_of_account(Partner, account, via="account").values_list("pk", flat=True))


def account_enrolments(account: PartnerAccount) -> QuerySet[PartnerProgram]:
    """The account's enrolments with their programs, in the portal's one order: program name, then program, then
    partner (an account may have two partner rows in one workspace, both enrolled)."""
    return (
        _of_account(PartnerProgram, account)
        .select_related("program")
        .order_by("program__name", "program_id", "partner_id")
    )


def account_enrolment_choosing_codes(account: PartnerAccount, program_id: int) -> PartnerProgram | None:
    """The account's enrolment in the program, with its partner, when the program lets partners choose their codes
    (the oldest, where two of the account's partner rows are enrolled); None otherwise, another partner's or
    another workspace's program included."""
    return (
        account_enrolments(account)
        .filter(program_id=program_id, program__partner_codes_allowed=True)
        .select_related("partner")
        .order_by("pk")
        .first()
    )


def account_links(account: PartnerAccount) -> QuerySet[ReferralLink]:
    """The links of the account's partner rows (in any program: a caller keeps those of its enrolments)."""
    return _of_account(ReferralLink, account)


def account_links_by_id(account: PartnerAccount, ids: list[int]) -> dict[int, ReferralLink]:
    """The account's own links among `ids`, with their programs, by id (never another partner's)."""
    if not ids:
        return {}
    return {link.pk: link for link in account_links(account).filter(pk__in=ids).select_related("program")}


def account_commissions(account: PartnerAccount) -> QuerySet[Commission]:
    """The account's commissions, by its partner ids: the (partner, -created_at) index then gives a page in order."""
    return Commission.objects.filter(partner_id__in=account_partner_ids(account))


def account_payouts(account: PartnerAccount) -> QuerySet[Payout]:
    """The payouts made to the account's partner rows, by its partner ids (as account_commissions)."""
    return Payout.objects.filter(partner_id__in=account_partner_ids(account))


def account_withdrawals(account: PartnerAccount) -> QuerySet[Withdrawal]:
    return _of_account(Withdrawal, account)


def account_payout_account(account: PartnerAccount) -> PayoutAccount | None:
    """How the account is paid (one payout account per partner account), or None before it chose."""
    return _of_account(PayoutAccount, account, via="account").first()
