"""The readiness verdict: what works in a program's integration and the concrete next step for what does
not. One computation serves GET /api/v1/programs/me/readiness, the dashboard and `svc status`."""

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone

from core import messages
from programs.models import KeyRotation, PartnerProgram, Program, ProgramKey
from programs.selectors import program_live_key_get

from .models import ClickEvent, LeadEvent, ProcessorEvent, SaleEvent
from .services.tracker import tracker_script_tag

PASS, WARN, FAIL = "pass", "warn", "fail"
ENROL_PARTNER = "Enrol each link's partner in the program (admin → Partner programs)."


@dataclass(frozen=True)
class Check:
    id: str
    status: str
    title: str
    detail: str
    next_step: str = ""


def _counts(model, program: Program, time_field: str, extra: Q | None = None) -> dict[str, Any]:
    live = Q(is_test=False) & (extra or Q())
    return model.objects.filter(program=program).aggregate(
        live=Count("pk", filter=live),
        test=Count("pk", filter=Q(is_test=True)),
        last_live=Max(time_field, filter=live),
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def readiness_compute(*, program: Program, key: ProgramKey | None = None, base_url: str = "") -> dict[str, Any]:
    """Counts and checks for one program. `key`, when given, is the key the caller used (its rotation
    state is checked); otherwise the program's live key is."""
    base = base_url.rstrip("/")
    clicks = _counts(ClickEvent, program, "click_timestamp")
    leads = _counts(LeadEvent, program, "lead_timestamp", Q(provisional=False))
    leads_with_key = (
        LeadEvent.objects.filter(program=program, is_test=False, provisional=False).exclude(customer_key="").count()
    )
    sales = _counts(SaleEvent, program, "sale_date")
    attributed = SaleEvent.objects.filter(program=program, is_test=False, attributed=True).count()
    # A link whose partner is not enrolled in the program takes clicks, but every sale through it is refused
    # ("No partner-program relationship found"), so only enrolled links count as working.
    enrolled = Exists(PartnerProgram.objects.filter(partner_id=OuterRef("partner_id"), program=program))
    links = program.links.filter(is_active=True, partner__isnull=False, is_synthetic=False).aggregate(
        total=Count("pk"), enrolled=Count("pk", filter=enrolled)
    )
    live_key = key or program_live_key_get(program_id=program.pk)
    now = timezone.now()
    checks: list[Check] = []

    if links["enrolled"]:
        unenrolled = links["total"] - links["enrolled"]
        checks.append(
            Check(
                "referral_links",
                WARN if unenrolled else PASS,
                "Active referral links",
                f"{links['enrolled']} active link(s) with an enrolled partner"
                + (f"; {unenrolled} link(s) whose partner is not enrolled in the program" if unenrolled else ""),
                ENROL_PARTNER if unenrolled else "",
            )
        )
    elif links["total"]:
        checks.append(
            Check(
                "referral_links",
                FAIL,
                "Active referral links",
                f"{links['total']} active link(s), but no partner enrolled in the program: their sales are refused",
                ENROL_PARTNER,
            )
        )
    else:
        checks.append(
            Check(
                "referral_links",
                FAIL,
                "Active referral links",
                messages.NO_ACTIVE_LINK,
                "Create a partner and a referral link for this program (admin → Referral links).",
            )
        )
    tag = tracker_script_tag(base_url=base, program_id=program.pk)
    if clicks["live"]:
        checks.append(
            Check(
                "clicks_received",
                PASS,
                "Clicks received",
                f"{clicks['live']} click(s), last at {_iso(clicks['last_live'])}",
            )
        )
    else:
        checks.append(
            Check(
                "clicks_received",
                FAIL,
                "Clicks received",
                "No live click recorded yet",
                f"Add the tracker to every page of {program.domain}: {tag} then open a page with ?aff=<code>.",
            )
        )
    if leads_with_key:
        checks.append(
            Check(
                "leads_with_customer_key",
                PASS,
                "Leads with customer_key",
                f"{leads_with_key} settled lead(s) carry your user id",
            )
        )
    elif leads["live"]:
        checks.append(
            Check(
                "leads_with_customer_key",
                WARN,
                "Leads with customer_key",
                f"{leads['live']} lead(s) but none with customer_key",
                "Send your internal user id as customer_key on every lead, and the same id on sales.",
            )
        )
    else:
        checks.append(
            Check(
                "leads_with_customer_key",
                FAIL,
                "Leads with customer_key",
                "No settled lead yet",
                "On signup call POST /api/v1/track/lead with the click_id from the svc_click_id cookie and your "
                "user id as customer_key, or window.svc.signup(userId, email) in the browser.",
            )
        )
    if attributed:
        checks.append(
            Check(
                "sales_attributed", PASS, "Sales attributed", f"{attributed} of {sales['live']} live sale(s) attributed"
            )
        )
    elif sales["live"]:
        checks.append(
            Check(
                "sales_attributed",
                WARN,
                "Sales attributed",
                f"{sales['live']} sale(s), none attributed",
                "Send the same customer_key as at lead time (or the click_id) with each sale.",
            )
        )
    else:
        connected = bool(program.stripe_account_id)
        checks.append(
            Check(
                "sales_attributed",
                FAIL,
                "Sales attributed",
                "No live sale yet",
                "Payments on the connected Stripe account record sales automatically."
                if connected
                else "Call POST /api/v1/track/sale with transaction_id, amount_cents and customer_key after each "
                "payment, or connect Stripe.",
            )
        )
    if live_key is None:
        checks.append(
            Check("key_health", FAIL, "API key", "The program has no live key", "Regenerate the key in the dashboard.")
        )
    elif (rotation := KeyRotation.of(live_key, now)).deadline:
        checks.append(
            Check(
                "key_health",
                FAIL if rotation.retired else WARN,
                "API key",
                f"{'Retired on' if rotation.retired else 'Must be rotated before'} {rotation.deadline.isoformat()}",
                "Regenerate the key in the dashboard (owners) and update your integration.",
            )
        )
    else:
        checks.append(Check("key_health", PASS, "API key", f"{live_key.masked} is healthy"))
    if program.stripe_account_id:
        last = (
            ProcessorEvent.objects.filter(program=program)
            .order_by("-received_at")
            .values_list("received_at", flat=True)
            .first()
        )
        detail = f"Connected ({program.stripe_account_id}); last event {_iso(last) or 'none yet'}"
        checks.append(Check("stripe_connection", PASS, "Stripe connection", detail))
    else:
        checks.append(
            Check(
                "stripe_connection",
                WARN,
                "Stripe connection",
                "Not connected (optional)",
                "Connect Stripe to record payments and refunds without calling the sale endpoint.",
            )
        )
    test_total = clicks["test"] + leads["test"] + sales["test"]
    live_total = clicks["live"] + leads["live"] + sales["live"]
    if live_total:
        checks.append(Check("live_events", PASS, "Live events", f"{live_total} live and {test_total} test event(s)"))
    elif test_total:
        checks.append(
            Check(
                "live_events",
                WARN,
                "Live events",
                f"Only test events so far ({test_total})",
                "Switch to the live key (aff_…, not aff_test_…) and drop additional_data.test_mode in production.",
            )
        )
    else:
        checks.append(
            Check(
                "live_events",
                WARN,
                "Live events",
                "No events yet",
                "Run a verification (svc test-event, or Run verification in the dashboard) to prove the pipeline.",
            )
        )

    failing = [c for c in checks if c.status == FAIL]
    warning = [c for c in checks if c.status == WARN]
    status = "ready" if not failing and not warning else ("incomplete" if failing else "ready_with_warnings")
    first = (failing or warning or [None])[0]
    return {
        "program_id": program.pk,
        "ready": not failing,
        "status": status,
        "next_step": first.next_step if first else "",
        "checked_at": now.isoformat(),
        "counts": {
            "clicks": clicks["live"],
            "leads": leads["live"],
            "sales": sales["live"],
            "attributed_sales": attributed,
            "test_clicks": clicks["test"],
            "test_leads": leads["test"],
            "test_sales": sales["test"],
        },
        "last_event_at": {
            "click": _iso(clicks["last_live"]),
            "lead": _iso(leads["last_live"]),
            "sale": _iso(sales["last_live"]),
        },
        "checks": [asdict(c) for c in checks],
    }
