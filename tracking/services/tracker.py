"""Page visits and program settings for the browser tracker (POST /api/v1/track/visit, GET /api/v1/track/config)."""

from typing import Any, Required, TypedDict
from urllib.parse import parse_qs, urlsplit

from core import messages
from core.errors import BadRequestError, NotFoundError
from core.ids import id_parse
from core.text import storable_text
from programs.link_aliases import link_aliases_of
from programs.models import Program

from ..models import PageVisit
from .common import body_test_mode

UTM_FIELDS = ("utm_source", "utm_medium", "utm_campaign")
UTM_MAX_LENGTH = 255
DOMAIN_MAX_LENGTH = 253


def referrer_domain_of(referrer_url: str) -> str:
    """The referrer's host name, lower-cased, without port or credentials; empty when it has none."""
    try:
        host = urlsplit(referrer_url.strip()).hostname or ""
    except ValueError:
        return ""
    return host[:DOMAIN_MAX_LENGTH]


def utm_params_of(page_url: str) -> dict[str, str]:
    """utm_source, utm_medium and utm_campaign of the page URL (first non-empty value of each)."""
    try:
        query = parse_qs(urlsplit(page_url.strip()).query)
    except ValueError:
        query = {}
    # A percent-encoded NUL (utm_source=%00) decodes to text PostgreSQL cannot store: such a value is left out.
    usable = {name: [value.strip() for value in query.get(name, []) if storable_text(value)] for name in UTM_FIELDS}
    return {name: next((value for value in values if value), "")[:UTM_MAX_LENGTH] for name, values in usable.items()}


def tracker_script_tag(*, base_url: str, program_id: int) -> str:
    """The tag a program's pages load the browser tracker with (served by GET /js/svc-tracker.js)."""
    return f'<script src="{base_url}/js/svc-tracker.js" data-svc-program-id="{program_id}" defer></script>'


class VisitInput(TypedDict, total=False):
    """A visit as tracking.api's VisitTrackApi.InputSerializer validates it: program_id is required (a
    string or an integer, kept as sent); an optional field the body leaves out is absent."""

    program_id: Required[str | int]
    page_url: str
    page_title: str
    referrer_url: str
    click_id: str
    session_id: str
    additional_data: dict[str, Any]


def visit_record(*, data: VisitInput) -> PageVisit:
    """Stores one page visit of a program's site. The click id and session id are stored as sent: a visit
    is analytics, it moves no customer and proves no attribution.

    Raises BadRequestError (`Unknown program_id`) when program_id names no program."""
    program_id = id_parse(data.get("program_id"))
    if program_id is None or not Program.objects.filter(pk=program_id).exists():
        raise BadRequestError(messages.UNKNOWN_PROGRAM_ID)
    page_url = data.get("page_url", "")
    referrer_url = data.get("referrer_url", "")
    return PageVisit.objects.create(
        program_id=program_id,
        click_id=data.get("click_id", ""),
        session_id=data.get("session_id", ""),
        page_url=page_url,
        page_title=data.get("page_title", ""),
        referrer_url=referrer_url,
        referrer_domain=referrer_domain_of(referrer_url),
        is_test=body_test_mode(data.get("additional_data")),
        **utm_params_of(page_url),
    )


def tracker_config_get(*, program_id: Any) -> dict[str, Any]:
    """What the browser tracker needs to know about a program. Nothing secret: the route is keyless.

    Raises NotFoundError (`Unknown program_id`) when program_id names no program."""
    parsed = id_parse(program_id)
    program = None
    if parsed is not None:
        program = (
            Program.objects.filter(pk=parsed)
            .only("pk", "cookie_duration", "lead_auth", "stripe_account_id", "link_aliases")
            .first()
        )
    if program is None:
        raise NotFoundError(messages.UNKNOWN_PROGRAM_ID)
    return {
        "success": True,
        "program_id": program.pk,
        "cookie_window_days": program.cookie_window_days,
        "lead_auth": program.lead_auth,
        # Stripe reads client_reference_id only when the program's own account takes the payment.
        "decorate_payment_links": bool(program.stripe_account_id),
        # Query parameters read like via when the page URL has neither aff nor via (programs.link_aliases).
        "link_aliases": list(link_aliases_of(program.link_aliases)),
    }
