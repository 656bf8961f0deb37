"""The portal's Payouts page (/portal/payouts): how the partner is paid (a Stripe Express account connected through
Stripe's onboarding, or a manual rail: a PayPal email, or a Wise email or bank reference), then the payouts made to
the account's partner rows, newest first, each with its statement (the commissions it covered).

Everything goes through payouts.services and payouts.stripe_rail; nothing here writes a payout row. Only the
signed-in account's rows are read, by its partner ids: no route takes a payout's id, so another partner's cannot
be named. A partner never sees an owner's notes, a failure's code (only its message), nor where another partner's
money went."""

import logging
from dataclasses import dataclass

import stripe
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_POST, require_safe

from commissions.selectors import commission_sale_words
from core.money import money
from core.pagination import keyset_page
from core.urls import public_url
from payouts import stripe_rail
from payouts.models import MANUAL_RAILS, Payout, PayoutAccount, PayoutCommission, PayoutStatus, Rail
from payouts.selectors import clawbacks_after_sending
from payouts.services import PayoutError, manual_rail_set
from programs.models import PartnerAccount

from . import selectors
from .commissions import customer_reference, utc_day
from .limits import post_limited
from .session import portal_page

logger = logging.getLogger("svc.portal")

PAGE_URL = "/portal/payouts"
RETURN_PATH = "/portal/payouts/stripe/return"
REFRESH_PATH = "/portal/payouts/stripe/refresh"
PER_PAGE = 20
# Each asks Stripe for an onboarding link (and may create the Express account): a few an hour is plenty.
STRIPE_LINKS_PER_HOUR = "10/h"
MANUAL_CHANGES_PER_HOUR = "20/h"
EMAIL_MAX, REFERENCE_MAX, HOLDER_MAX = 254, 255, 200

STRIPE_UNAVAILABLE = "Payouts through Stripe are not available here. Choose PayPal or Wise below."
STRIPE_FAILED = "Stripe could not be reached just now. Nothing was changed: try again in a few minutes."
STRIPE_TOO_MANY = "You have opened Stripe's onboarding many times in the last hour. Try again later."
MANUAL_TOO_MANY = "You have changed how you are paid many times in the last hour. Try again later."
RAIL_REFUSED = "Choose PayPal or Wise."
EMAIL_INVALID = "Enter a valid email address."
TOO_LONG = "{what} is at most {limit} characters long."
CONTROL_CHARACTERS = "{what} may not hold control characters."

# Stripe's requirement names (requirements.currently_due / past_due) in a partner's words. A name listed here by
# its prefix ("individual.dob.") covers each of its parts; one not listed is shown as Stripe names it.
REQUIREMENT_WORDS: dict[str, str] = {
    "external_account": "a bank account or debit card to be paid to",
    "tos_acceptance.": "accepting Stripe's terms of service",
    "individual.verification.document": "a photo of an identity document",
    "individual.verification.additional_document": "a second document, such as a proof of address",
    "individual.first_name": "your first name",
    "individual.last_name": "your last name",
    "individual.dob.": "your date of birth",
    "individual.address.": "your address",
    "individual.email": "your email address",
    "individual.phone": "your phone number",
    "individual.ssn_last_4": "the last 4 digits of your Social Security number",
    "individual.id_number": "your ID or tax number",
    "business_profile.url": "your website",
    "business_profile.mcc": "your business category",
    "business_profile.product_description": "a description of what you do",
    "business_type": "your business type",
    "company.name": "your company's name",
    "company.address.": "your company's address",
    "company.tax_id": "your company's tax ID",
    "company.phone": "your company's phone number",
    "representative.": "details of your company's representative",
    "owners.": "details of your company's owners",
    "directors.": "details of your company's directors",
    "executives.": "details of your company's executives",
}

RAIL_WORDS: dict[str, str] = {Rail.STRIPE: "Stripe", Rail.PAYPAL: "PayPal", Rail.WISE: "Wise"}


def requirement_words(names: list[str]) -> list[str]:
    """What Stripe still needs, as short phrases, each once, in Stripe's order."""
    phrases: list[str] = []
    for name in names:
        name = str(name)
        phrase = next(
            (
                words
                for key, words in REQUIREMENT_WORDS.items()
                if name == key or (key.endswith(".") and name.startswith(key))
            ),
            name,
        )
        if phrase not in phrases:
            phrases.append(phrase)
    return phrases


# --- How the partner is paid ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PayoutSetup:
    """The payout account's state in words."""

    state: str  # none | stripe_not_started | stripe_unfinished | stripe_ready | manual
    summary: str
    due: list[str]
    rail: str = ""
    email: str = ""
    bank_reference: str = ""
    holder_name: str = ""

    @property
    def ready(self) -> bool:
        return self.state in ("stripe_ready", "manual")


def payout_setup(payout_account: PayoutAccount | None) -> PayoutSetup:
    if payout_account is None:
        return PayoutSetup("none", "You have not set up payouts yet: nothing can be sent to you until you do.", [])
    if payout_account.rail == Rail.STRIPE:
        if not payout_account.stripe_account_id:
            return PayoutSetup("stripe_not_started", "Stripe: onboarding not started.", [], rail=Rail.STRIPE)
        if payout_account.ready:
            return PayoutSetup(
                "stripe_ready", "Stripe: ready. Payouts are sent to your Stripe account.", [], rail=Rail.STRIPE
            )
        due = requirement_words(list(payout_account.requirements_due or []))
        summary = "Stripe: onboarding not finished." + (
            " Stripe still needs:" if due else " Stripe is checking your details; nothing more is asked of you yet."
        )
        return PayoutSetup("stripe_unfinished", summary, due, rail=Rail.STRIPE)
    where = payout_account.payout_email or payout_account.bank_reference
    summary = (
        f"{RAIL_WORDS.get(payout_account.rail, payout_account.rail)}: payouts are sent to {where}."
        if where
        else f"{RAIL_WORDS.get(payout_account.rail, payout_account.rail)}: no email or bank reference yet."
    )
    return PayoutSetup(
        "manual" if where else "none",
        summary,
        [],
        rail=payout_account.rail,
        email=payout_account.payout_email,
        bank_reference=payout_account.bank_reference,
        holder_name=payout_account.holder_name,
    )


# --- The payouts list -------------------------------------------------------------------------------------------


def status_words(payout: Payout) -> str:
    """The payout's state as the partner reads it: a failure's message, never its code."""
    if payout.status == PayoutStatus.PENDING:
        return "scheduled"
    if payout.status == PayoutStatus.PROCESSING:
        return "on its way"
    if payout.status == PayoutStatus.PAID:
        return f"paid on {utc_day(payout.paid_at)}" if payout.paid_at else "paid"
    if payout.status == PayoutStatus.FAILED:
        reason = payout.failure_message.strip() or "the payment could not be made"
        return f"failed: {reason} — back on your balance"
    if payout.status == PayoutStatus.CANCELLED:
        return "cancelled: refunds took it back before it was sent"
    return str(payout.status)


@dataclass(frozen=True)
class StatementLine:
    sale_date: str
    amount: str
    customer: str
    taken_back: str = ""  # what refunds of the sale took back after the payout was sent ("" when nothing)
    bonus: str = ""  # "Bonus: <name>" for a milestone bonus, which has no sale ("" for a sale's commission)


@dataclass(frozen=True)
class PayoutRow:
    date: str
    program: str
    amount: str
    rail: str
    status: str
    failed: bool
    statement: list[StatementLine]


def _statements(payouts: list[Payout]) -> dict[int, list[StatementLine]]:
    """Each payout's covered commissions, oldest sale first, in one read: the live rows, or every row of a failed
    payout (what it would have paid, now back on the balance). A line says what refunds of its sale took back after
    the payout was sent (one more read, none when no payout of the page was sent)."""
    failed = {payout.pk for payout in payouts if payout.status == PayoutStatus.FAILED}
    taken_back: dict[tuple[int, int], int] = {}
    for payout_id, clawbacks in clawbacks_after_sending(payouts).items():
        for clawback in clawbacks:
            key = (payout_id, clawback.commission_id)
            taken_back[key] = taken_back.get(key, 0) + clawback.amount_cents
    rows = (
        PayoutCommission.objects.filter(payout_id__in=[payout.pk for payout in payouts])
        .select_related("commission__sale", "commission__bonus_award__bonus")
        .order_by("commission__sale__sale_date", "commission_id")
    )
    lines: dict[int, list[StatementLine]] = {}
    for row in rows:
        if not row.active and row.payout_id not in failed:
            continue
        commission = row.commission
        key = (row.payout_id, row.commission_id)
        lines.setdefault(row.payout_id, []).append(
            StatementLine(
                # A bonus has no sale: the day it was awarded.
                sale_date=utc_day(commission.sale.sale_date if commission.sale else commission.created_at),
                amount=money(row.amount_cents, commission.currency),
                customer=customer_reference(partner_id=commission.partner_id, customer_id=commission.customer_id),
                taken_back=money(taken, commission.currency) if (taken := taken_back.get(key)) else "",
                bonus="" if commission.sale_id else commission_sale_words(commission),
            )
        )
    return lines


def payout_rows(payouts: list[Payout]) -> list[PayoutRow]:
    statements = _statements(payouts)
    return [
        PayoutRow(
            date=utc_day(payout.created_at),
            program=payout.program.name,
            amount=money(payout.amount_cents, payout.currency),
            rail=RAIL_WORDS.get(payout.rail, payout.rail),
            status=status_words(payout),
            failed=payout.status == PayoutStatus.FAILED,
            statement=statements.get(payout.pk, []),
        )
        for payout in payouts
    ]


# --- Pages ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ManualForm:
    rail: str = Rail.PAYPAL
    payout_email: str = ""
    bank_reference: str = ""
    holder_name: str = ""


def _page(
    request: HttpRequest,
    account: PartnerAccount,
    *,
    form: ManualForm | None = None,
    manual_error: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    payout_account = selectors.account_payout_account(account)
    setup = payout_setup(payout_account)
    if form is None:
        form = (
            ManualForm(
                rail=payout_account.rail,
                payout_email=payout_account.payout_email,
                bank_reference=payout_account.bank_reference,
                holder_name=payout_account.holder_name,
            )
            if payout_account is not None and payout_account.rail in MANUAL_RAILS
            else ManualForm()
        )
    page = keyset_page(
        selectors.account_payouts(account).select_related("program"),
        before=request.GET.get("before", ""),
        after=request.GET.get("after", ""),
        per_page=PER_PAGE,
    )
    context = {
        "account": account,
        "setup": setup,
        "stripe_configured": stripe_rail.stripe_payouts_configured(),
        "form": form,
        "manual_error": manual_error,
        "error": error,
        "page": page,
        "rows": payout_rows(page.rows),
        "email_max": EMAIL_MAX,
        "reference_max": REFERENCE_MAX,
        "holder_max": HOLDER_MAX,
    }
    return render(request, "portal/payouts.html", context, status=status)


@require_safe
@portal_page
def payouts_page(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    return _page(request, account)


@require_POST
@portal_page
def stripe_start(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """Sends the partner to Stripe's onboarding (the Express account is made on first use); Stripe brings them back
    to RETURN_PATH, or to REFRESH_PATH when the link expired."""
    if not stripe_rail.stripe_payouts_configured():
        return _page(request, account, error=STRIPE_UNAVAILABLE, status=400)
    if post_limited(request, group="portal-payouts-stripe", key=str(account.pk), rate=STRIPE_LINKS_PER_HOUR):
        return _page(request, account, error=STRIPE_TOO_MANY, status=429)
    try:
        url = stripe_rail.onboarding_link(
            account=account,
            return_url=public_url(request, RETURN_PATH),
            refresh_url=public_url(request, REFRESH_PATH),
        )
    except PayoutError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(PAGE_URL, status=303)
    except stripe.StripeError as exc:
        logger.warning(
            "portal.stripe_onboarding_failed",
            extra={"account_id": account.pk, "stripe_error": type(exc).__name__, "stripe_code": exc.code or ""},
        )
        messages.error(request, STRIPE_FAILED)
        return HttpResponseRedirect(PAGE_URL, status=303)
    return HttpResponseRedirect(url)


@require_safe
@portal_page
def stripe_return(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """Stripe's onboarding sends the partner back here: the account's state is read again and said in words."""
    payout_account = selectors.account_payout_account(account)
    if payout_account is None or not payout_account.stripe_account_id:
        return HttpResponseRedirect(PAGE_URL)
    try:
        payout_account = stripe_rail.account_refresh(payout_account)
    except (PayoutError, stripe.StripeError) as exc:
        logger.warning(
            "portal.stripe_refresh_failed", extra={"account_id": account.pk, "stripe_error": type(exc).__name__}
        )
        messages.warning(request, "Stripe onboarding saved. Its state is updated here once Stripe confirms it.")
        return HttpResponseRedirect(PAGE_URL)
    if payout_account.ready:
        messages.success(request, "Stripe onboarding saved: you are ready to be paid.")
    else:
        due = requirement_words(list(payout_account.requirements_due or []))
        messages.warning(
            request,
            "Stripe onboarding saved. "
            + (f"Still due: {'; '.join(due)}." if due else "Stripe is checking your details."),
        )
    return HttpResponseRedirect(PAGE_URL)


@require_safe
@portal_page
def stripe_refresh(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """Stripe sends the partner here when an onboarding link expired or was used: a button asks for a fresh one
    (a GET never makes anything on Stripe)."""
    return render(
        request,
        "portal/payouts_stripe_refresh.html",
        {"account": account, "stripe_configured": stripe_rail.stripe_payouts_configured()},
    )


def _field(request: HttpRequest, name: str, limit: int) -> str:
    # A little past the limit, so a value too long is refused rather than cut short silently.
    return request.POST.get(name, "")[: limit + 1].strip()


def manual_form_problem(form: ManualForm) -> str:
    """Why the manual rail's form cannot be saved as sent ("" when it can); payouts.services checks the rest."""
    if form.rail not in MANUAL_RAILS:
        return RAIL_REFUSED
    for what, value, limit in (
        ("An email", form.payout_email, EMAIL_MAX),
        ("A bank reference", form.bank_reference, REFERENCE_MAX),
        ("The holder's name", form.holder_name, HOLDER_MAX),
    ):
        if len(value) > limit:
            return TOO_LONG.format(what=what, limit=limit)
        if any(not char.isprintable() for char in value):
            return CONTROL_CHARACTERS.format(what=what)
    if form.payout_email:
        try:
            validate_email(form.payout_email)
        except ValidationError:
            return EMAIL_INVALID
    return ""


@require_POST
@portal_page
def manual_rail(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """The manual rail's form: PayPal with an email, or Wise with an email or a bank reference, and the name on
    the account. A refusal changes nothing and shows the form again with what was sent."""
    rail = request.POST.get("rail", "")[:16]
    form = ManualForm(
        rail=rail,
        payout_email=_field(request, "payout_email", EMAIL_MAX),
        bank_reference=_field(request, "bank_reference", REFERENCE_MAX) if rail == Rail.WISE else "",
        holder_name=_field(request, "holder_name", HOLDER_MAX),
    )
    if post_limited(request, group="portal-payouts-manual", key=str(account.pk), rate=MANUAL_CHANGES_PER_HOUR):
        return _page(request, account, form=form, manual_error=MANUAL_TOO_MANY, status=429)
    problem = manual_form_problem(form)
    if not problem:
        try:
            payout_account = manual_rail_set(
                account=account,
                rail=form.rail,
                payout_email=form.payout_email,
                bank_reference=form.bank_reference,
                holder_name=form.holder_name,
            )
        except PayoutError as exc:
            problem = str(exc)
        else:
            where = payout_account.payout_email or payout_account.bank_reference
            messages.success(request, f"Saved: your payouts are sent by {RAIL_WORDS[payout_account.rail]} to {where}.")
            return HttpResponseRedirect(PAGE_URL, status=303)
    return _page(request, account, form=form, manual_error=problem, status=400)
