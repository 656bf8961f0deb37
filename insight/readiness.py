"""The readiness verdict: what works in a program's integration and the concrete next step for what does
not. One computation serves GET /api/v1/programs/me/readiness, the dashboard and `svc status`."""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.utils import timezone

from billing.readiness import billing_check
from core import messages
from core.integrity import integrity_readiness
from core.times import utc_text
from fraud.rules import Traffic
from groups.models import CouponCode
from imports.readiness import import_check
from insight.diagnosis import DIAGNOSIS_WINDOW, Mistake, mistakes_find
from insight.sql import (
    count_annotation,
    exists_annotation,
    one_row_sql,
    recent_set_aside_sql,
    user_agents_counted_sql,
)
from programs.models import KeyRotation, PartnerProgram, Program, ProgramKey
from programs.selectors import program_live_key_get
from tracking.models import ClickEvent, DailyRollup, ProcessorEvent, TrackingLog
from tracking.rollups import (
    ALL_COLUMNS,
    CLICK,
    KIND_MODELS,
    KINDS,
    LEAD,
    SALE,
    TIME_FIELDS,
    Watermarks,
    rollup_read,
    rollup_sums,
    rows_with_delta,
)
from tracking.services.tracker import tracker_script_tag

PASS, WARN, FAIL = "pass", "warn", "fail"
ENROL_PARTNER = "Enrol each link's partner in the program (admin → Partner programs)."


@dataclass(frozen=True)
class Check:
    id: str
    status: str
    title: str
    detail: str
    next_step: str = ""


def _iso(value: datetime | None) -> str | None:
    """A time in the JSON fields (ISO 8601); the checks' prose shows times as the dashboard does (utc_text)."""
    return value.isoformat() if value else None


@dataclass(frozen=True)
class ReadinessCounts:
    """What the checks read about one program: live/test counts and last live times per event kind."""

    clicks: dict[str, Any]
    leads: dict[str, Any]
    leads_with_key: int
    sales: dict[str, Any]
    attributed: int
    links_total: int
    links_enrolled: int
    last_processor_event_at: datetime | None
    # The user agents of the live clicks recently set aside as bots, with how many each (most first); empty when
    # none was.
    bot_agents: list[tuple[str, int]] = field(default_factory=list)
    # The live clicks recently set aside (not counted), per reason (fraud.rules.Traffic: duplicate, bot, prefetch).
    set_aside: dict[str, int] = field(default_factory=dict)
    # The coupon codes recent live sales carried that no partner holds, with how many sales each (most first).
    unheld_codes: list[tuple[str, int]] = field(default_factory=list)


# The latest live click the fraud rules did not count (a bot, a prefetch or a duplicate), read with the others.
UNCOUNTED_CLICK = "uncounted_click"
# Whether live clicks were set aside as bots lately, read with the others; only then are their user agents read.
RECENT_BOTS = "recent_bots"
# How many live clicks were set aside lately for each reason, read with the others ("set_aside_duplicate", ...).
SET_ASIDE = "set_aside_"
SET_ASIDE_REASONS = tuple(traffic for traffic in Traffic if traffic != Traffic.HUMAN)
# "Lately": within BOT_DAYS, among the program's latest BOT_SCAN marked clicks (the partial index
# click_program_flagged, newest first), so the cost stays bounded however many duplicates a program has.
BOT_DAYS = 7
BOT_SCAN = 1000
# How many user agents the bot check names (the most frequent), and how much of each.
BOT_AGENTS_NAMED = 5
BOT_AGENT_SHOWN = 160
# Whether recent live sales carried a coupon code no partner held, read with the others; only then are the codes
# read. A refused sale API call logs its coupon_code (tracking.services.sale), an unattributed Stripe payment its
# promotion code and code (tracking.stripe.events).
UNHELD_CODES = "unheld_codes"
CODE_DAYS = 7
CODES_NAMED = 5


def _recent_bots_sql(
    program_id: int, *, now: datetime, select: str, traffic: str = Traffic.BOT
) -> tuple[str, list[Any]]:
    """SELECT `select` from the live clicks set aside as bots (or for another `traffic` reason) within BOT_DAYS
    among the program's latest BOT_SCAN marked clicks (insight.sql.recent_set_aside_sql)."""
    return recent_set_aside_sql(program_id, now=now, select=select, traffic=traffic, days=BOT_DAYS, scan=BOT_SCAN)


def bot_agents_read(program_id: int, *, now: datetime) -> list[tuple[str, int]]:
    """The user agents of the recent bot clicks (_recent_bots_sql) with their counts, most frequent first."""
    sql, params = _recent_bots_sql(program_id, now=now, select="recent.user_agent, COUNT(*)")
    with connection.cursor() as cursor:
        cursor.execute(user_agents_counted_sql(sql), params)
        return [(agent, seen) for agent, seen in cursor.fetchall()]


def clicks_set_aside_read(program_id: int, *, now: datetime) -> dict[str, int]:
    """How many live clicks were set aside for each reason within BOT_DAYS (among the program's latest BOT_SCAN
    marked clicks), in one query: what the overview shows (readiness reads the same with its other times)."""
    parts = [_recent_bots_sql(program_id, now=now, select="COUNT(*)", traffic=reason) for reason in SET_ASIDE_REASONS]
    with connection.cursor() as cursor:
        cursor.execute(one_row_sql([sql for sql, _ in parts]), [p for _, params in parts for p in params])
        row = cursor.fetchone() or ()
    return {str(reason): seen or 0 for reason, seen in zip(SET_ASIDE_REASONS, row, strict=False)}


def _code_logs(program_id: Any, *, now: datetime) -> QuerySet[TrackingLog]:
    """The program's tracking log rows of the last CODE_DAYS of live sales that carried a code nobody was credited
    for (through its (program, -created_at) index)."""
    return TrackingLog.objects.filter(
        Q(details__has_key="coupon_code") | Q(details__has_key="promotion_code"),
        program_id=program_id,
        event="sale",
        is_test=False,
        created_at__gte=now - timedelta(days=CODE_DAYS),
    )


def unheld_codes_read(program: Program, *, now: datetime) -> list[tuple[str, int]]:
    """The codes of _code_logs with their sale counts, most first, less those a partner holds now (registered or
    reactivated since): what the sale would be credited by today (groups.codes.code_partner_id)."""
    counted = (
        _code_logs(program.pk, now=now)
        .annotate(shown=Coalesce(KT("details__coupon_code"), KT("details__promotion_code")))
        .values("shown")
        .annotate(sales=Count("pk"))
        .order_by("-sales", "shown")
    )
    found = [(row["shown"], row["sales"]) for row in counted if row["shown"]]
    shown = [code for code, _ in found]
    held = CouponCode.objects.filter(
        Q(code__in=shown) | Q(stripe_promotion_code_id__in=shown),
        program=program,
        is_active=True,
        partner__is_active=True,
        partner__program_links__program=program,
    ).values_list("code", "stripe_promotion_code_id")
    holding = {name for pair in held for name in pair if name}
    return [(code, sales) for code, sales in found if code not in holding]


def _last_live_times(program: Program, *, now: datetime) -> dict[str, Any]:
    """The time of the program's latest live event of each kind, in one query of subqueries, each one row
    through its (program, is_test, -time) index. A provisional lead is not counted yet, nor is a click the fraud
    rules did not count: a crawler or a prefetch hitting the links must not look like visitors arriving. Without
    a counted click, the latest uncounted one is read too (UNCOUNTED_CLICK, one query more), so the clicks check
    can say that only those came. Whether clicks were recently set aside as bots (RECENT_BOTS) is asked in the
    same query."""

    def latest(kind: str) -> Subquery:
        events = KIND_MODELS[kind].objects.filter(program=OuterRef("pk"), is_test=False)
        if kind == LEAD:
            events = events.filter(**{"provisional": False})
        if kind == CLICK:
            events = events.filter(**{"traffic": Traffic.HUMAN})
        return Subquery(events.order_by(f"-{TIME_FIELDS[kind]}").values(TIME_FIELDS[kind])[:1])

    subqueries: dict[str, Subquery | RawSQL | Exists] = {kind: latest(kind) for kind in KINDS}
    subqueries[UNHELD_CODES] = Exists(_code_logs(OuterRef("pk"), now=now))
    bots_sql, bots_params = _recent_bots_sql(program.pk, now=now, select="1")
    subqueries[RECENT_BOTS] = exists_annotation(bots_sql, bots_params)
    for reason in SET_ASIDE_REASONS:
        count_sql, count_params = _recent_bots_sql(program.pk, now=now, select="COUNT(*)", traffic=reason)
        subqueries[f"{SET_ASIDE}{reason}"] = count_annotation(count_sql, count_params)
    last: dict[str, Any] = Program.objects.filter(pk=program.pk).annotate(**subqueries).values(*subqueries).get()
    # Only a program without a counted click asks whether uncounted ones came; then every live click it has is
    # uncounted, and the newest is the first row of its time index. (Asked always, "the newest uncounted click"
    # would walk every click of a program whose clicks all counted.)
    last[UNCOUNTED_CLICK] = (
        None
        if last[CLICK] is not None
        else ClickEvent.objects.filter(program=program, is_test=False)
        .order_by("-click_timestamp")
        .values_list("click_timestamp", flat=True)
        .first()
    )
    return last


def _event_totals(program: Program) -> dict[bool, dict[str, int]]:
    """All-time rollup columns of the program per test flag, rollups plus the live delta."""

    def read(marks: Watermarks) -> list[dict[str, Any]]:
        rollups = rollup_sums(DailyRollup.objects.filter(program=program), "is_test")
        return list(rows_with_delta(marks, rollups, program_id=program.pk, live_only=False))

    totals = {flag: dict.fromkeys(ALL_COLUMNS, 0) for flag in (False, True)}
    for row in rollup_read(read):
        for column in ALL_COLUMNS:
            totals[row["is_test"]][column] += row[column] or 0
    return totals


def readiness_counts(*, program: Program, now: datetime | None = None) -> ReadinessCounts:
    """Counts from the daily rollups plus their live delta (tracking.rollups), last times from the indexes: the
    cost does not grow with the number of events. The user agents of recent bot clicks are read (one query more)
    only when there are some."""
    now = now or timezone.now()
    # A link whose partner is not enrolled in the program takes clicks, but every sale through it is refused
    # ("No partner-program relationship found"), so only enrolled links count as working.
    enrolled = Exists(PartnerProgram.objects.filter(partner_id=OuterRef("partner_id"), program=program))
    links = program.links.filter(is_active=True, partner__isnull=False, is_synthetic=False).aggregate(
        total=Count("pk"), enrolled=Count("pk", filter=enrolled)
    )
    last_processor_event_at = None
    if program.stripe_account_id:
        last_processor_event_at = (
            ProcessorEvent.objects.filter(program=program)
            .order_by("-received_at")
            .values_list("received_at", flat=True)
            .first()
        )
    live, test = (totals := _event_totals(program))[False], totals[True]
    last = _last_live_times(program, now=now)
    return ReadinessCounts(
        # Counted clicks only (the rollups count no other); last_uncounted: the latest live click that did not count.
        clicks={
            "live": live["clicks"],
            "test": test["clicks"],
            "last_live": last[CLICK],
            "last_uncounted": last[UNCOUNTED_CLICK],
        },
        # Test leads count whether settled or not, live ones only once settled.
        leads={
            "live": live["leads"],
            "test": test["leads"] + test["provisional_leads"],
            "last_live": last[LEAD],
        },
        leads_with_key=live["leads_with_key"],
        sales={"live": live["sales"], "test": test["sales"], "last_live": last[SALE]},
        attributed=live["attributed_sales"],
        links_total=links["total"],
        links_enrolled=links["enrolled"],
        last_processor_event_at=last_processor_event_at,
        bot_agents=bot_agents_read(program.pk, now=now) if last[RECENT_BOTS] else [],
        set_aside={str(reason): last[f"{SET_ASIDE}{reason}"] or 0 for reason in SET_ASIDE_REASONS},
        unheld_codes=unheld_codes_read(program, now=now) if last[UNHELD_CODES] else [],
    )


def referral_links_check(counts: ReadinessCounts) -> Check:
    title = "Active referral links"
    if counts.links_enrolled:
        unenrolled = counts.links_total - counts.links_enrolled
        return Check(
            "referral_links",
            WARN if unenrolled else PASS,
            title,
            f"{counts.links_enrolled} active link(s) with an enrolled partner"
            + (f"; {unenrolled} link(s) whose partner is not enrolled in the program" if unenrolled else ""),
            ENROL_PARTNER if unenrolled else "",
        )
    if counts.links_total:
        return Check(
            "referral_links",
            FAIL,
            title,
            f"{counts.links_total} active link(s), but no partner enrolled in the program: their sales are refused",
            ENROL_PARTNER,
        )
    return Check(
        "referral_links",
        FAIL,
        title,
        messages.NO_ACTIVE_LINK,
        "Create a partner and a referral link for this program (admin → Referral links).",
    )


def clicks_check(counts: ReadinessCounts, *, program: Program, base_url: str) -> Check:
    if counts.clicks["live"]:
        detail = f"{counts.clicks['live']} click(s), last at {utc_text(counts.clicks['last_live'])}"
        return Check("clicks_received", PASS, "Clicks received", detail)
    tag = tracker_script_tag(base_url=base_url, program_id=program.pk)
    if counts.clicks["last_uncounted"]:
        # Only bots, prefetches or duplicates came: the links are reached, but no visitor's click counted yet, so
        # the check still fails (nothing they bring is attributed or counted) and says why.
        return Check(
            "clicks_received",
            FAIL,
            "Clicks received",
            "No counted live click yet: only clicks the fraud rules did not count (bots, prefetches or "
            f"duplicates), the latest at {utc_text(counts.clicks['last_uncounted'])}",
            f"Open a page of {program.domain} with ?aff=<code> in a normal browser window (with the tracker: {tag}); "
            "crawlers, link previews and prefetches are recorded but never counted.",
        )
    return Check(
        "clicks_received",
        FAIL,
        "Clicks received",
        "No live click recorded yet",
        f"Add the tracker to every page of {program.domain}: {tag} then open a page with ?aff=<code>.",
    )


def bot_clicks_check(counts: ReadinessCounts) -> Check | None:
    """Names the clicks recently set aside as bots and their user agents, so a click that never attributes is never
    a mystery. None when none. Crawlers beside counted clicks are ordinary traffic (a pass that still names them: a
    live program is not held at "ready_with_warnings" by Googlebot); bots with no counted click beside them may be
    the integration's own clicks, a warning."""
    if not counts.bot_agents:
        return None
    total = sum(seen for _, seen in counts.bot_agents)
    named = ", ".join(f'"{agent[:BOT_AGENT_SHOWN]}" ({seen})' for agent, seen in counts.bot_agents[:BOT_AGENTS_NAMED])
    others = len(counts.bot_agents) - BOT_AGENTS_NAMED
    return Check(
        "bot_clicks",
        PASS if counts.clicks["live"] else WARN,
        "Clicks set aside as bots",
        f"{total} live click(s) of the last {BOT_DAYS} days set aside as bots (never counted, never attributed), "
        f"by user agent: {named}" + (f"; {others} other user agent(s)" if others > 0 else ""),
        "If one of these is your own server or app rather than a crawler, send the visitor's browser user agent as "
        "user_agent in the click body (without it, the User-Agent header is judged only when it is a browser's), "
        "or turn the bot rule off; crawlers and link previews need nothing.",
    )


# Why a click was set aside, per fraud.rules.Traffic value: what docs/readiness.md and the overview say too.
SET_ASIDE_WHY: dict[str, str] = {
    Traffic.DUPLICATE.value: "the same visitor clicked the same link again within the duplicate_click window: each "
    "visitor counts once, and its click id still attributes",
    Traffic.BOT.value: "a crawler's or link preview's user agent",
    Traffic.PREFETCH.value: "a HEAD or prefetch request, not a visit",
}


def clicks_set_aside(counts: ReadinessCounts) -> dict[str, Any]:
    """The live clicks set aside lately, as the verdict's `clicks_set_aside` carries them."""
    return {
        "days": BOT_DAYS,
        "total": sum(counts.set_aside.values()),
        "by_reason": dict(counts.set_aside),
    }


def set_aside_summary(by_reason: dict[str, int]) -> str:
    """'7 duplicate (why), 1 bot (why)': the reasons with clicks, most first."""
    reasons = sorted((reason for reason, seen in by_reason.items() if seen), key=lambda r: -by_reason[r])
    return ", ".join(
        f"{by_reason[reason]} {reason}" + (f" ({SET_ASIDE_WHY[reason]})" if reason in SET_ASIDE_WHY else "")
        for reason in reasons
    )


def clicks_set_aside_check(counts: ReadinessCounts) -> Check | None:
    """Says how many live clicks of the last BOT_DAYS days the fraud rules set aside, and why, so "8 clicks sent,
    1 counted" is never a mystery. None when none. It passes: setting clicks aside is the rules working; the clicks
    check fails on its own when no click counted at all."""
    total = sum(counts.set_aside.values())
    if not total:
        return None
    return Check(
        "clicks_set_aside",
        PASS,
        "Clicks set aside",
        f"{total} live click(s) of the last {BOT_DAYS} days set aside, not counted as clicks: "
        f"{set_aside_summary(counts.set_aside)}",
        "Nothing to fix for real traffic. To try a click again as a new visitor, use another browser or device "
        "(or wait out the duplicate_click window); the Review page lists each click set aside.",
    )


def unheld_codes_check(counts: ReadinessCounts) -> Check | None:
    """Names the coupon codes recent live sales carried that no partner holds (unregistered, or held by a code or
    partner since deactivated), so a sale the code should have credited is never a mystery. None when none."""
    if not counts.unheld_codes:
        return None
    total = sum(sales for _, sales in counts.unheld_codes)
    named = ", ".join(code for code, _ in counts.unheld_codes[:CODES_NAMED])
    others = len(counts.unheld_codes) - CODES_NAMED
    return Check(
        "coupon_codes_unheld",
        WARN,
        "Coupon codes no partner holds",
        f"{total} sale(s) of the last {CODE_DAYS} days carried coupon codes no partner holds: {named}"
        + (f"; {others} other code(s)" if others > 0 else ""),
        "Register each code for the partner who gives it out (the partner's coupon codes), or reactivate the code "
        "or partner that held it: the next sale carrying it is credited to that partner. A code no partner gives "
        "out (a store-wide promotion) needs nothing.",
    )


# What a cookie written by script lasts in Safari (its tracking prevention caps it), whatever Max-Age says.
SCRIPT_COOKIE_SAFARI_DAYS = 7
FIRST_PARTY_STEP = (
    "Serve the tracker from your own site: proxy a path of it (such as /_svc) to this service, load "
    "/_svc/js/svc-tracker.js from there, and the service sets the cookie itself for the whole window "
    "(docs/first-party.md)."
)


def cookie_mode_check(counts: ReadinessCounts, *, program: Program) -> Check | None:
    """Names how the svc_click_id cookie is kept: set by the service through the shop's own origin (first-party
    calls were seen: Program.first_party_seen_at, noted at most hourly), or written by the tracker's script, which
    Safari keeps only SCRIPT_COOKIE_SAFARI_DAYS days whatever the window. None until the program has seen a click
    or a first-party call (the clicks check says how to start). It passes either way: a script-written cookie works,
    and its detail names what it loses."""
    seen_at = program.first_party_seen_at
    window = program.cookie_window_days
    if seen_at is not None:
        return Check(
            "cookie_mode",
            PASS,
            "Click cookie",
            f"First-party calls seen (the tracker served from your own site), last at {utc_text(seen_at)}: the "
            f"service sets svc_click_id itself, for your whole window of {window} days",
        )
    if not (counts.clicks["live"] or counts.clicks["last_uncounted"] or counts.clicks["test"]):
        return None
    return Check(
        "cookie_mode",
        PASS,
        "Click cookie",
        f"script-written cookie: Safari keeps it {SCRIPT_COOKIE_SAFARI_DAYS} days, your window is {window}",
        FIRST_PARTY_STEP,
    )


def mistakes_check(mistakes: list[Mistake]) -> Check | None:
    """The mistakes weigh in the checklist: how many, the worst first (`mistakes` come worst first). It fails when
    one lost something (calls refused, test events in production), warns otherwise. None when there is none."""
    if not mistakes:
        return None
    failing = any(mistake.severity == FAIL for mistake in mistakes)
    named = "; ".join(f"{mistake.title} ({mistake.count}x)" for mistake in mistakes)
    return Check(
        "integration_mistakes",
        FAIL if failing else WARN,
        "Integration mistakes",
        f"{len(mistakes)} mistake(s) in the last {DIAGNOSIS_WINDOW.days} days of calls, worst first: {named}",
        mistakes[0].fix,
    )


def leads_check(counts: ReadinessCounts) -> Check:
    title = "Leads with customer_key"
    if counts.leads_with_key:
        return Check(
            "leads_with_customer_key", PASS, title, f"{counts.leads_with_key} settled lead(s) carry your user id"
        )
    if counts.leads["live"]:
        return Check(
            "leads_with_customer_key",
            WARN,
            title,
            f"{counts.leads['live']} lead(s) but none with customer_key",
            "Send your internal user id as customer_key on every lead, and the same id on sales.",
        )
    return Check(
        "leads_with_customer_key",
        FAIL,
        title,
        "No settled lead yet",
        "On signup call POST /api/v1/track/lead with the click_id from the svc_click_id cookie and your "
        "user id as customer_key, or window.svc.signup(userId, email) in the browser.",
    )


def sales_check(counts: ReadinessCounts, *, program: Program) -> Check:
    title = "Sales attributed"
    if counts.attributed:
        detail = f"{counts.attributed} of {counts.sales['live']} live sale(s) attributed"
        return Check("sales_attributed", PASS, title, detail)
    if counts.sales["live"]:
        return Check(
            "sales_attributed",
            WARN,
            title,
            f"{counts.sales['live']} sale(s), none attributed",
            "Send the same customer_key as at lead time (or the click_id) with each sale.",
        )
    return Check(
        "sales_attributed",
        FAIL,
        title,
        "No live sale yet",
        "Payments on the connected Stripe account record sales automatically."
        if program.stripe_account_id
        else "Call POST /api/v1/track/sale with transaction_id, amount_cents and customer_key after each "
        "payment, or connect Stripe.",
    )


def key_check(live_key: ProgramKey | None, *, now: datetime) -> Check:
    if live_key is None:
        return Check(
            "key_health", FAIL, "API key", "The program has no live key", "Regenerate the key in the dashboard."
        )
    rotation = KeyRotation.of(live_key, now)
    if rotation.deadline:
        return Check(
            "key_health",
            FAIL if rotation.retired else WARN,
            "API key",
            f"{'Retired on' if rotation.retired else 'Must be rotated before'} {utc_text(rotation.deadline)}",
            "Regenerate the key in the dashboard (owners) and update your integration.",
        )
    return Check("key_health", PASS, "API key", f"{live_key.masked} is healthy")


def stripe_check(counts: ReadinessCounts, *, program: Program) -> Check:
    if program.stripe_account_id:
        last = utc_text(counts.last_processor_event_at)
        detail = f"Connected ({program.stripe_account_id}); last event {last}"
        return Check("stripe_connection", PASS, "Stripe connection", detail)
    return Check(
        "stripe_connection",
        WARN,
        "Stripe connection",
        "Not connected (optional)",
        "Connect Stripe to record payments and refunds without calling the sale endpoint.",
    )


def live_events_check(counts: ReadinessCounts) -> Check:
    test_total = counts.clicks["test"] + counts.leads["test"] + counts.sales["test"]
    live_total = counts.clicks["live"] + counts.leads["live"] + counts.sales["live"]
    if live_total:
        return Check("live_events", PASS, "Live events", f"{live_total} live and {test_total} test event(s)")
    if test_total:
        return Check(
            "live_events",
            WARN,
            "Live events",
            f"Only test events so far ({test_total})",
            "Switch to the live key (aff_…, not aff_test_…) and drop additional_data.test_mode in production.",
        )
    return Check(
        "live_events",
        WARN,
        "Live events",
        "No events yet",
        "Run a verification (svc test-event, or Run verification in the dashboard) to prove the pipeline.",
    )


# The checks other apps answer, in this order: the latest integrity run (core.integrity), the last import from
# another platform (imports.readiness) and the connected billing platforms (billing.readiness). Each is a function
# of the program answering a Check's fields, or None when
# it has nothing to say.
program_check_providers: tuple[Callable[[Program], dict[str, str] | None], ...] = (
    integrity_readiness,
    import_check,
    billing_check,
)


def provided_checks(program: Program) -> list[Check]:
    return [Check(**fields) for provide in program_check_providers if (fields := provide(program))]


@dataclass(frozen=True)
class Verdict:
    ready: bool
    status: str
    next_step: str


def readiness_verdict(checks: list[Check], mistakes: list[Mistake] | None = None) -> Verdict:
    """Ready unless a check fails (the integration_mistakes check among them: a mistake that lost something fails
    it, any other warns). The next step is the fix of the worst mistake (`mistakes` come worst first), else the
    first failing check's, else the first warning's: a mistake names what the integration actually got wrong,
    where a check can only say what has not arrived yet. A program with a mistake is at best
    "ready_with_warnings", never plainly "ready"."""
    failing = [c for c in checks if c.status == FAIL]
    warning = [c for c in checks if c.status == WARN]
    if failing:
        status = "incomplete"
    else:
        status = "ready_with_warnings" if warning or mistakes else "ready"
    first = next(iter(failing or warning), None)
    next_step = mistakes[0].fix if mistakes else (first.next_step if first else "")
    return Verdict(ready=not failing, status=status, next_step=next_step)


def readiness_compute(*, program: Program, key: ProgramKey | None = None, base_url: str = "") -> dict[str, Any]:
    """Counts, checks and the mistakes seen in recent calls (insight.diagnosis) for one program. `key`, when
    given, is the key the caller used (its rotation state is checked); otherwise the program's live key is. The
    seven checks come first, always in the same order; then, when there is something to say, the cookie's mode, the bot
    clicks, the clicks set aside, the coupon codes no partner holds, the integration mistakes and the last import
    (docs/readiness.md)."""
    now = timezone.now()
    counts = readiness_counts(program=program, now=now)
    live_key = key or program_live_key_get(program_id=program.pk)
    checks = [
        referral_links_check(counts),
        clicks_check(counts, program=program, base_url=base_url.rstrip("/")),
        leads_check(counts),
        sales_check(counts, program=program),
        key_check(live_key, now=now),
        stripe_check(counts, program=program),
        live_events_check(counts),
    ]
    mistakes = mistakes_find(program=program, now=now)
    extras = (
        cookie_mode_check(counts, program=program),
        bot_clicks_check(counts),
        clicks_set_aside_check(counts),
        unheld_codes_check(counts),
        mistakes_check(mistakes),
        *provided_checks(program),
    )
    for extra in extras:
        if extra is not None:
            checks.append(extra)
    verdict = readiness_verdict(checks, mistakes)
    return {
        "program_id": program.pk,
        "ready": verdict.ready,
        "status": verdict.status,
        "next_step": verdict.next_step,
        "checked_at": now.isoformat(),
        "counts": {
            "clicks": counts.clicks["live"],
            "leads": counts.leads["live"],
            "sales": counts.sales["live"],
            "attributed_sales": counts.attributed,
            "test_clicks": counts.clicks["test"],
            "test_leads": counts.leads["test"],
            "test_sales": counts.sales["test"],
            # Live clicks of the last BOT_DAYS days the fraud rules did not count (`clicks_set_aside` says why).
            "clicks_set_aside": sum(counts.set_aside.values()),
        },
        "last_event_at": {
            "click": _iso(counts.clicks["last_live"]),
            "lead": _iso(counts.leads["last_live"]),
            "sale": _iso(counts.sales["last_live"]),
        },
        "checks": [asdict(c) for c in checks],
        "mistakes": [m.as_dict() for m in mistakes],
        "mistakes_count": len(mistakes),
        "clicks_set_aside": clicks_set_aside(counts),
    }
