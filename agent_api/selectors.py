"""What an agent key may see: the programs of its workspace, or only those it is limited to, the partners of
the workspace, or only those enrolled in one of its programs, the commissions, events, links and withdrawals of
what it sees, the webhook endpoints (with their deliveries) and webhook events that belong to what it sees, what
the fraud rules found in a program it sees, and the groups (with their tier rules and bonuses), group changes and
coupon codes of a program it sees. Every query an agent route runs is built here."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from django.db.models import Model, Prefetch, Q, QuerySet

from commissions.models import (
    Commission,
    CommissionReview,
    CommissionStatus,
    LedgerEntry,
    NotificationOutbox,
    Withdrawal,
)
from commissions.selectors import (
    commission_ledger,
    commission_refund_steps,
    commissions_with_money,
    ledger_balances,
    open_withdrawals_by_partner,
)
from core.api.query import Instant, TimeBounds, time_bounds
from core.errors import NotFoundError
from core.ids import id_parse
from groups.models import Bonus, CouponCode, GroupChange, PartnerGroup, TierRule
from groups.selectors import default_group
from programs.models import AgentKey, Partner, PartnerProgram, Program, ProgramKey, ReferralLink
from programs.selectors import live_keys
from tracking.models import ClickEvent, LeadEvent, SaleEvent
from tracking.selectors.clicks import flagged_by, marked_clicks
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

from . import messages

if TYPE_CHECKING:
    from commissions.selectors import CommissionWithMoney

M = TypeVar("M", bound=Model)


def visible_get(visible: QuerySet[M], raw_id: object, not_found: str) -> M:
    """The object of `visible` with this id; 404 not_found for a malformed id or one the key may not see (an
    object of another workspace is not revealed)."""
    pk = id_parse(raw_id)
    found = visible.filter(pk=pk).first() if pk is not None else None
    if found is None:
        raise NotFoundError(not_found, code=messages.CODE_NOT_FOUND)
    return found


def narrowed(rows: QuerySet[M], *conditions: Q | None, **lookups: object) -> QuerySet[M]:
    """`rows` filtered by each ORM lookup (`partner_id=4`), then each condition, whose value is given: None means
    the caller did not ask for that filter. One filter() per filter given, so a lookup across a multi-valued
    relation joins on its own, as a chain of filter() calls does."""
    for lookup, value in lookups.items():
        if value is not None:
            rows = rows.filter(**{lookup: value})
    for condition in conditions:
        if condition is not None:
            rows = rows.filter(condition)
    return rows


def agent_programs(key: AgentKey) -> QuerySet[Program]:
    if key.workspace_id is None:
        return Program.objects.none()  # such a key never authenticates (agent_api.auth)
    programs = Program.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        programs = programs.filter(pk__in=key.limited_program_ids)
    return programs


def agent_program_get(key: AgentKey, program_id: object) -> Program:
    return visible_get(agent_programs(key), program_id, messages.PROGRAM_NOT_FOUND)


def agent_partners(key: AgentKey) -> QuerySet[Partner]:
    if key.workspace_id is None:
        return Partner.objects.none()  # such a key never authenticates (agent_api.auth)
    partners = Partner.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        partners = partners.filter(program_links__program__in=key.limited_program_ids).distinct()
    return partners


def agent_partner_get(key: AgentKey, partner_id: object) -> Partner:
    return visible_get(agent_partners(key), partner_id, messages.PARTNER_NOT_FOUND)


def agent_links(key: AgentKey) -> QuerySet[ReferralLink]:
    """The links of the programs the key may see, without those the service made itself (`svc test-event`)."""
    return ReferralLink.objects.filter(program__in=agent_programs(key), is_synthetic=False)


def agent_link_get(key: AgentKey, link_id: object) -> ReferralLink:
    return visible_get(agent_links(key), link_id, messages.LINK_NOT_FOUND)


def agent_webhook_endpoints(key: AgentKey) -> QuerySet[WebhookEndpoint]:
    """The webhook endpoints of the key's workspace. A key limited to programs sees only its programs' endpoints:
    a workspace-wide one (no program) receives every program's events, so it is not theirs to read or change."""
    if key.workspace_id is None:
        return WebhookEndpoint.objects.none()  # such a key never authenticates (agent_api.auth)
    endpoints = WebhookEndpoint.objects.filter(workspace_id=key.workspace_id)
    if key.limited_program_ids is not None:
        endpoints = endpoints.filter(program_id__in=key.limited_program_ids)
    return endpoints


def agent_webhook_endpoint_get(key: AgentKey, endpoint_id: object) -> WebhookEndpoint:
    return visible_get(agent_webhook_endpoints(key), endpoint_id, messages.WEBHOOK_ENDPOINT_NOT_FOUND)


def agent_webhook_deliveries(key: AgentKey) -> QuerySet[WebhookDelivery]:
    """The deliveries to the endpoints the key may see, each with its event (one join)."""
    return WebhookDelivery.objects.filter(endpoint__in=agent_webhook_endpoints(key)).select_related("event")


def agent_webhook_delivery_get(key: AgentKey, delivery_id: object) -> WebhookDelivery:
    return visible_get(agent_webhook_deliveries(key), delivery_id, messages.WEBHOOK_DELIVERY_NOT_FOUND)


def webhook_endpoint_deliveries(endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    """The deliveries of an endpoint the key may see (agent_webhook_endpoint_get), each with its event."""
    return WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")


def agent_webhook_attempts(delivery: WebhookDelivery) -> QuerySet[WebhookAttempt]:
    return WebhookAttempt.objects.filter(delivery=delivery)


def agent_webhook_events(key: AgentKey) -> QuerySet[WebhookEvent]:
    """The webhook events of the programs the key may see (real and `svc trigger` ones)."""
    return WebhookEvent.objects.filter(program__in=agent_programs(key))


def commission_reviews(commission: Commission) -> QuerySet[CommissionReview]:
    """The decisions on a commission's hold, oldest first."""
    return CommissionReview.objects.filter(commission=commission).order_by("created_at", "pk")


def program_flagged_clicks(program: Program) -> QuerySet[ClickEvent]:
    """The clicks of a program the fraud rules marked (not counted, or flagged), each with its link. The
    condition is that of the partial index click_program_flagged, so a page is a scan of that index only."""
    return marked_clicks(program_id=program.pk).select_related("link")


# --- programs -------------------------------------------------------------------------------------------------------


def agent_programs_with_live_key(key: AgentKey) -> QuerySet[Program]:
    """The programs the key may see; `program.keys` holds only the live key (at most one) on these rows."""
    return agent_programs(key).prefetch_related(Prefetch("keys", queryset=live_keys()))


# --- partners -------------------------------------------------------------------------------------------------------


def agent_partners_list(key: AgentKey, *, program: Program | None = None) -> QuerySet[Partner]:
    """The partners the key may see (only those enrolled in `program` when given), each with its enrollments in
    the programs the key may see (`program_links`, by program id)."""
    partners = narrowed(agent_partners(key), program_links__program=program)
    visible = PartnerProgram.objects.order_by("program_id")
    if key.limited_program_ids is not None:
        visible = visible.filter(program_id__in=key.limited_program_ids)
    return partners.prefetch_related(Prefetch("program_links", queryset=visible))


def agent_partner_program_ids(key: AgentKey, partner: Partner) -> list[int]:
    """The programs the partner is enrolled in, of those the key may see, by id."""
    return sorted(
        PartnerProgram.objects.filter(partner=partner, program__in=agent_programs(key)).values_list(
            "program_id", flat=True
        )
    )


# --- links ----------------------------------------------------------------------------------------------------------


def agent_links_list(
    key: AgentKey, *, program: Program | None = None, partner_id: int | None = None, active: bool | None = None
) -> QuerySet[ReferralLink]:
    return narrowed(agent_links(key), program=program, partner_id=partner_id, is_active=active)


# --- events ---------------------------------------------------------------------------------------------------------

# Per type: the rows, with what their items read joined in (so a page is one query), and the event's own time.
_EVENT_SOURCES: dict[str, tuple[Callable[[], QuerySet[Any]], str]] = {
    "click": (lambda: ClickEvent.objects.select_related("link"), "click_timestamp"),
    "lead": (lambda: LeadEvent.objects.all(), "lead_timestamp"),
    "sale": (lambda: SaleEvent.objects.select_related("commission"), "sale_date"),
}


def agent_events(
    key: AgentKey,
    *,
    event_type: str,
    program: Program | None,
    is_test: bool,
    bounds: TimeBounds,
    partner_id: int | None = None,
) -> QuerySet[Any]:
    """The clicks, leads or sales (`event_type`) of the programs the key may see, or of `program`, live or test,
    whose own time is within `bounds`."""
    rows, time_field = _EVENT_SOURCES[event_type]
    programs = Q(program=program) if program is not None else Q(program__in=agent_programs(key))
    events = rows().filter(programs & Q(is_test=is_test) & bounds.q(time_field))
    return narrowed(events, partner_id=partner_id)


def agent_flagged_clicks(
    program: Program, *, marked: Q | None = None, partner_id: int | None = None
) -> QuerySet[ClickEvent]:
    """program_flagged_clicks, only those `marked` so (tracking.selectors.clicks.marked_as) and of one partner
    when given."""
    return narrowed(program_flagged_clicks(program), marked, partner_id=partner_id)


# --- commissions ----------------------------------------------------------------------------------------------------


def visible_commissions(key: AgentKey) -> "QuerySet[CommissionWithMoney]":
    """The commissions of the programs the key may see, with what they pay, their partner and sale."""
    commissions = Commission.objects.filter(program__in=agent_programs(key)).select_related("partner", "sale")
    return commissions_with_money(commissions)


def agent_commissions_list(
    key: AgentKey,
    *,
    program: Program | None = None,
    partner_id: int | None = None,
    status: CommissionStatus | str | None = None,
    held: bool | None = None,
    hold_rule: str | None = None,
    flagged: str | None = None,
    created_since: Instant | None = None,
    created_until: Instant | None = None,
) -> "QuerySet[CommissionWithMoney]":
    """visible_commissions, narrowed by each filter given (they combine)."""
    commissions = narrowed(
        visible_commissions(key),
        flagged_by(flagged) if flagged is not None else None,
        program=program,
        partner_id=partner_id,
        status=status,
        held_at__isnull=None if held is None else not held,
        hold_rule=hold_rule,
    )
    # A date as created_until covers its whole UTC day.
    return commissions.filter(time_bounds(created_since, created_until).q("created_at"))


def agent_commission_id_get(key: AgentKey, raw_id: object) -> int:
    """The id of a commission the key may see; 404 not_found otherwise (as visible_get)."""
    pk = id_parse(raw_id)
    if pk is None or not visible_commissions(key).filter(pk=pk).exists():
        raise NotFoundError(messages.COMMISSION_NOT_FOUND, code=messages.CODE_NOT_FOUND)
    return pk


@dataclass(frozen=True)
class CommissionDetail:
    """A commission with its history: its ledger entries and hold decisions, oldest first, and one step per
    refund applied. The commission's own fields read through to it."""

    commission: "CommissionWithMoney"
    ledger: QuerySet[LedgerEntry]
    refund_steps: QuerySet[NotificationOutbox]
    reviews: QuerySet[CommissionReview]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.commission, name)


def agent_commission_detail_get(key: AgentKey, raw_id: object) -> CommissionDetail:
    """A commission the key may see (404 not_found otherwise), with its history (read when rendered)."""
    commission = visible_get(visible_commissions(key), raw_id, messages.COMMISSION_NOT_FOUND)
    return CommissionDetail(
        commission=commission,
        ledger=commission_ledger(commission_id=commission.pk),
        refund_steps=commission_refund_steps(commission_id=commission.pk),
        reviews=commission_reviews(commission),
    )


# --- payouts --------------------------------------------------------------------------------------------------------

LEDGER_WHOLE = "partner"
LEDGER_PROGRAMS = "programs"


def visible_withdrawals(key: AgentKey) -> QuerySet[Withdrawal]:
    """The withdrawals of the partners the key may see (a withdrawal has no program)."""
    return Withdrawal.objects.filter(partner__in=agent_partners(key)).select_related("partner")


def agent_withdrawals_list(
    key: AgentKey, *, partner_id: int | None = None, status: str | None = None
) -> QuerySet[Withdrawal]:
    return narrowed(visible_withdrawals(key), partner_id=partner_id, status=status)


@dataclass(frozen=True)
class BalanceScope:
    """Whose balances a call reads: `partners`, and the ledger entries of `programs`, or every entry of each
    partner (`programs` None: LEDGER_WHOLE)."""

    partners: QuerySet[Partner]
    programs: QuerySet[Program] | None

    @property
    def ledger_scope(self) -> str:
        return LEDGER_WHOLE if self.programs is None else LEDGER_PROGRAMS


def agent_balance_scope(
    key: AgentKey, *, program: Program | None = None, partner_id: int | None = None
) -> BalanceScope:
    """A key that sees every program reads each partner's whole ledger; a key limited to programs, or a call for
    one program, reads only the entries of those programs (payouts and adjustments have none)."""
    partners = agent_partners(key)
    programs = agent_programs(key)
    whole_ledger = key.limited_program_ids is None
    if program is not None:
        partners = partners.filter(program_links__program=program)
        programs = programs.filter(pk=program.pk)
        whole_ledger = False
    if partner_id is not None:
        partners = partners.filter(pk=partner_id)
    return BalanceScope(partners=partners, programs=None if whole_ledger else programs)


@dataclass(frozen=True)
class CurrencyBalance:
    currency: str
    balance_cents: int
    open_withdrawals_cents: int


@dataclass(frozen=True)
class PartnerBalance:
    partner: Partner
    ledger_scope: str
    balances: list[CurrencyBalance]


def partner_balances(scope: BalanceScope, partners: Iterable[Partner]) -> list[PartnerBalance]:
    """Each partner's ledger balance (of the scope's ledger) and open withdrawals per currency, by currency code;
    two grouped queries whatever the number of partners."""
    rows = list(partners)
    partner_ids = [partner.pk for partner in rows]
    balances = ledger_balances(partner_ids=partner_ids, programs=scope.programs)
    open_withdrawals = open_withdrawals_by_partner(partner_ids=partner_ids)
    result = []
    for partner in rows:
        ledger = balances.get(partner.pk, {})
        asked = open_withdrawals.get(partner.pk, {})
        by_currency = [
            CurrencyBalance(currency, ledger.get(currency, 0), asked.get(currency, 0))
            for currency in sorted({*ledger, *asked})
        ]
        result.append(PartnerBalance(partner=partner, ledger_scope=scope.ledger_scope, balances=by_currency))
    return result


# --- webhooks -------------------------------------------------------------------------------------------------------


def agent_webhook_endpoints_list(key: AgentKey, *, program: Program | None = None) -> QuerySet[WebhookEndpoint]:
    return narrowed(agent_webhook_endpoints(key), program=program)


def agent_webhook_deliveries_list(
    endpoint: WebhookEndpoint, *, status: str | None = None, event_type: str | None = None
) -> QuerySet[WebhookDelivery]:
    return narrowed(webhook_endpoint_deliveries(endpoint), status=status, event__type=event_type)


def agent_webhook_events_list(
    key: AgentKey, *, program: Program | None = None, event_type: str | None = None
) -> QuerySet[WebhookEvent]:
    return narrowed(agent_webhook_events(key), program=program, type=event_type)


@dataclass(frozen=True)
class ProgramWithLiveKey:
    """A program with its live key (None when it has none)."""

    program: Program
    live_key: ProgramKey | None


def programs_with_live_key(programs: Iterable[Program]) -> list[ProgramWithLiveKey]:
    """Programs read through agent_programs_with_live_key, each with the live key prefetched on it."""
    return [ProgramWithLiveKey(program, next(iter(program.keys.all()), None)) for program in programs]


# Groups of a program the key may see (agent_program_get first): every read narrows to that program.


def program_group_rows(program: Program) -> QuerySet[PartnerGroup]:
    """The program's groups, its default one made first when it has none yet; each with its program (the default
    group's terms are the program's columns)."""
    default_group(program)
    return PartnerGroup.objects.filter(program=program).select_related("program")


def program_group_get(program: Program, group_id: object) -> PartnerGroup:
    return visible_get(program_group_rows(program), group_id, messages.GROUP_NOT_FOUND)


def group_tier_rules(group: PartnerGroup) -> QuerySet[TierRule]:
    return TierRule.objects.filter(group=group)


def group_tier_rule_get(group: PartnerGroup, rule_id: object) -> TierRule:
    return visible_get(group_tier_rules(group), rule_id, messages.TIER_RULE_NOT_FOUND)


def group_bonuses(group: PartnerGroup) -> QuerySet[Bonus]:
    return Bonus.objects.filter(group=group)


def group_bonus_get(group: PartnerGroup, bonus_id: object) -> Bonus:
    return visible_get(group_bonuses(group), bonus_id, messages.BONUS_NOT_FOUND)


def enrolment_of(program: Program, partner: Partner) -> PartnerProgram | None:
    """The partner's enrolment in the program, with both (partner_move reads the program's default group)."""
    return PartnerProgram.objects.select_related("program", "group").filter(program=program, partner=partner).first()


def partner_group_changes(partner: Partner, *, program: Program) -> QuerySet[GroupChange]:
    """The partner's group changes in the program, each with the groups it names (one join)."""
    return GroupChange.objects.filter(program=program, partner=partner).select_related("from_group", "to_group")


def program_coupon_codes(
    program: Program, *, partner_id: int | None = None, active: bool | None = None
) -> QuerySet[CouponCode]:
    return narrowed(CouponCode.objects.filter(program=program), partner_id=partner_id, is_active=active)


def program_coupon_code_get(program: Program, code_id: object) -> CouponCode:
    return visible_get(program_coupon_codes(program), code_id, messages.COUPON_CODE_NOT_FOUND)
