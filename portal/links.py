"""The portal's Links page (/portal/links): a partner's referral links, grouped by program, each with its full URL,
a copy button and a QR code; and, where a program allows it, a new link with a code of the partner's choosing.

Only the signed-in account's rows: links of its Partner rows, in programs those rows are enrolled in. A program id
sent with the form is looked up among the account's enrolments alone, so another partner's or another workspace's
program is refused exactly like an id that names nothing."""

import re
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

import segno
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_http_methods

from core.ids import id_parse
from programs.models import PartnerAccount, Program, ReferralLink
from programs.services import PartnerInactive, PartnerNotEnrolled, ShortLinkTaken, partner_link_create

from . import selectors
from .limits import post_limited
from .session import portal_page

# A partner's own code: what tracking reads back from ?aff= unchanged (it matches short_link exactly, case
# included, and strips surrounding spaces), and what a URL carries without escaping.
CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
CODE_MIN, CODE_MAX = 3, 64
# New links per account and hour; refusals count too, so "That code is taken" cannot be used to list codes fast.
CREATIONS_PER_HOUR = "20/h"

PROGRAM_REFUSED = "Choose one of your programs that lets you choose your own codes."
CODE_LENGTH = f"A code is {CODE_MIN} to {CODE_MAX} characters long."
CODE_CHARACTERS = "A code may hold only letters (A-Z, a-z), digits, hyphens (-) and underscores (_)."
CODE_TAKEN = "That code is taken. Choose another."
PARTNER_INACTIVE = "The program has paused your partnership: you cannot make links in it for now."
TOO_MANY = "You have made many links in the last hour. Try again later."

# A site address as owners type it, once any scheme, credentials and path are set aside: host name and port.
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?")


@dataclass(frozen=True)
class LinkRow:
    link: ReferralLink
    url: str  # "" when the program's site address cannot be read
    qr: SafeString


@dataclass
class ProgramLinks:
    program: Program
    links: list[LinkRow] = field(default_factory=list)
    code: str = ""  # the code sent back with a refusal, to correct it
    error: str = ""


def site_host(domain: str) -> str:
    """The host (and port) of a program's site address, which is free text (it may carry a scheme or a path); ""
    when none can be read. International names are written in their ASCII (IDNA) form."""
    text = domain.strip()
    try:
        netloc = urlsplit(text if "//" in text else f"//{text}").netloc.rpartition("@")[2]
        host = netloc.encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        return ""
    return host if _HOST.fullmatch(host) else ""


def link_url(program: Program, code: str) -> str:
    """The address a partner shares: the program's site with ?aff=<code>, which tracking reads as a click."""
    host = site_host(program.domain)
    return f"https://{host}/?{urlencode({'aff': code})}" if host else ""


def qr_svg(url: str) -> SafeString:
    """The URL's QR code as inline SVG: segno draws it from the URL's bytes, which appear in no attribute or text
    of the drawing, so it is safe to place in the page as it is."""
    if not url:
        return mark_safe("")
    code = segno.make(url, error="m", micro=False)
    return mark_safe(code.svg_inline(scale=3, dark="#000", light="#fff", svgclass="qr", lineclass=None))


def _programs(account: PartnerAccount) -> dict[int, ProgramLinks]:
    """The account's programs (name order), each with the account's links in it, oldest first."""
    programs: dict[int, ProgramLinks] = {}
    enrolled: set[tuple[int, int]] = set()
    for enrolment in selectors.account_enrolments(account):
        programs.setdefault(enrolment.program_id, ProgramLinks(program=enrolment.program))
        enrolled.add((enrolment.partner_id, enrolment.program_id))
    links = (
        selectors.account_links(account)
        .filter(program_id__in=list(programs), is_synthetic=False)
        .order_by("created_at", "pk")
    )
    for link in links:
        assert link.partner_id is not None and link.program_id is not None  # the filters above need both
        # A link of a partner row the account has that is not itself enrolled in the program is not shown.
        if (link.partner_id, link.program_id) in enrolled:
            group = programs[link.program_id]
            url = link_url(group.program, link.short_link)
            group.links.append(LinkRow(link=link, url=url, qr=qr_svg(url)))
    return programs


def _page(
    request: HttpRequest,
    account: PartnerAccount,
    programs: dict[int, ProgramLinks],
    *,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    created = id_parse(request.GET.get("created"))
    new_link = next(
        (row.link for group in programs.values() for row in group.links if created and row.link.pk == created),
        None,
    )
    context = {
        "account": account,
        "programs": list(programs.values()),
        "error": error,
        "new_link": new_link,
        "code_min": CODE_MIN,
        "code_max": CODE_MAX,
    }
    return render(request, "portal/links.html", context, status=status)


def code_problem(code: str) -> str:
    """Why a partner's chosen code cannot be a link's code; "" when it can."""
    if not CODE_MIN <= len(code) <= CODE_MAX:
        return CODE_LENGTH
    if not CODE_PATTERN.fullmatch(code):
        return CODE_CHARACTERS
    return ""


def _limited(request: HttpRequest, account: PartnerAccount) -> bool:
    return post_limited(request, group="portal-link-create", key=str(account.pk), rate=CREATIONS_PER_HOUR)


def _create(request: HttpRequest, account: PartnerAccount) -> HttpResponse:
    if _limited(request, account):
        return _page(request, account, _programs(account), error=TOO_MANY, status=429)
    program_id = id_parse(request.POST.get("program"))
    enrolment = selectors.account_enrolment_choosing_codes(account, program_id) if program_id is not None else None
    if enrolment is None:
        return _page(request, account, _programs(account), error=PROGRAM_REFUSED, status=400)
    if not enrolment.partner.is_active:  # deactivated by the program's owner: their links stay off
        return _page(request, account, _programs(account), error=PARTNER_INACTIVE, status=403)
    code = request.POST.get("code", "").strip()
    problem = code_problem(code)
    if not problem:
        try:
            link = partner_link_create(program=enrolment.program, partner_id=enrolment.partner_id, short_link=code)
        except PartnerInactive:  # deactivated meanwhile
            return _page(request, account, _programs(account), error=PARTNER_INACTIVE, status=403)
        except ShortLinkTaken:  # anyone's code, another partner's included; the unique constraint decides
            problem = CODE_TAKEN
        except PartnerNotEnrolled:  # the enrolment was removed meanwhile
            return _page(request, account, _programs(account), error=PROGRAM_REFUSED, status=400)
        else:
            # Tracking's link cache needs nothing: an unknown code is never cached, so the first click reads it.
            return HttpResponseRedirect(f"/portal/links?created={link.pk}#link-{link.pk}", status=303)
    programs = _programs(account)
    group = programs[enrolment.program_id]
    # Sent back to be corrected: printable, and no longer than a code can be and a little.
    group.code = "".join(char for char in code[: CODE_MAX + 16] if char.isprintable())
    group.error = problem
    return _page(request, account, programs, status=400)


@require_http_methods(["GET", "HEAD", "POST"])
@portal_page
def links(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    if request.method == "POST":
        return _create(request, account)
    return _page(request, account, _programs(account))
