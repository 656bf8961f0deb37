"""`svc mcp`: a Model Context Protocol server over stdio that offers the agent API (/api/agent/v1/) as tools.

The agent key comes from SVC_AGENT_KEY. At start the server asks GET /api/agent/v1/me for the key's scopes and
offers only the tools those scopes allow (write implies read); tools of routes the service may not have yet are
offered only when its OpenAPI description lists them. Every tool call is one HTTP call to the service; an API
error becomes a tool error carrying the API's error.code and message. stdout is the MCP channel: nothing else is
written there."""

import json
import sys
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from . import __version__
from .client import Api, CliFailure

AGENT_PREFIX = "/api/agent/v1"
SCHEMA_PATH = "/api/schema/"
KEY_ENV = "SVC_AGENT_KEY"

CURSOR = {"type": "string", "description": "next_cursor of the previous page; omit for the first page"}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "description": "Rows per page"}
PROGRAM_ID = {"type": "integer", "description": "Program id"}
COMMISSION_ID = {"type": "integer", "description": "Commission id"}
PARTNER_ID = {"type": "integer", "description": "Partner id"}
APPLICATION_ID = {"type": "integer", "description": "Partner application id"}
LINK_ID = {"type": "integer", "description": "Referral link id"}
RUN_ID = {"type": "integer", "description": "Payout run id"}
CURRENCY = {"type": "string", "enum": ["USD", "EUR", "VND"], "description": "Currency code"}
PARTNER_FIELDS: dict[str, Any] = {
    "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The partner's name"},
    "email": {"type": "string", "maxLength": 254, "description": "The partner's email (may be empty)"},
}
ENDPOINT_ID = {"type": "integer", "description": "Webhook endpoint id"}
GROUP_ID = {"type": "integer", "description": "Partner group id (of the program)"}
TIER_RULE_ID = {"type": "integer", "description": "Tier rule id (of the group)"}
BONUS_ID = {"type": "integer", "description": "Bonus id (of the group)"}
COUPON_CODE_ID = {"type": "integer", "description": "Coupon code id (of the program)"}
METRIC = {"type": "string", "enum": ["sales", "revenue"], "description": "sales: a count; revenue: in cents"}
IS_ACTIVE = {"type": "boolean", "description": "false: kept, but no longer evaluated or paid"}
GROUP_FIELDS: dict[str, Any] = {
    "name": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The group's name (unique)"},
    "commission_type": {
        "type": "string",
        "enum": ["percent", "fixed", "recurring_percent", "recurring_fixed"],
        "description": "percent types: commission_rate is a percentage; fixed types: cents",
    },
    "commission_rate": {
        "type": ["number", "string"],
        "description": "Positive; at most 100 for the percent types, else an amount in the smallest currency unit",
    },
    "duration_months": {"type": "integer", "minimum": 0, "description": "Recurring commissions: 0 = lifetime"},
    "hold_days": {"type": "integer", "minimum": 0, "maximum": 365, "description": "Days a commission is held"},
    "discount_type": {
        "type": "string",
        "enum": ["", "percent", "amount"],
        "description": "The discount the customers of the group's partners get (empty: none)",
    },
    "discount_percent": {
        "type": ["number", "string", "null"],
        "description": "percent discounts: above 0, at most 100",
    },
    "discount_amount_cents": {"type": ["integer", "null"], "minimum": 1, "description": "amount discounts"},
    "discount_currency": CURRENCY,
    "discount_duration": {
        "type": "string",
        "enum": ["once", "repeating", "forever"],
        "description": "The first payment, discount_duration_months months, or every payment",
    },
    "discount_duration_months": {"type": ["integer", "null"], "minimum": 1, "description": "repeating discounts"},
    "applications_open": {"type": "boolean", "description": "Anyone may apply to this group on its page"},
    "application_questions": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"label": {"type": "string"}, "required": {"type": "boolean"}},
            "required": ["label"],
        },
        "description": "Extra questions its application page asks",
    },
}
DELIVERY_ID = {"type": "integer", "description": "Webhook delivery id"}
FRAUD_RULE = {
    "type": "string",
    "enum": ["duplicate_click", "bot", "self_referral", "paid_ads", "sale_velocity", "visitor_velocity"],
    "description": "The fraud rule",
}
WEBHOOK_EVENT_TYPE = {
    "type": "string",
    "description": "lead.created, sale.created, commission.created, commission.approved, commission.refunded, "
    "commission.reversed, refund.applied, partner.enrolled, partner.group_changed, payout.created, payout.paid or "
    "payout.failed",
}
WEBHOOK_ENDPOINT_FIELDS: dict[str, Any] = {
    "url": {"type": "string", "description": "Where events are POSTed (http or https, a public address)"},
    "event_types": {
        "type": "array",
        "items": {"type": "string"},
        "minItems": 1,
        "description": 'Event types to receive, or ["*"] for every type',
    },
    "description": {"type": "string", "maxLength": 200, "description": "A note for its owner"},
    "enabled": {"type": "boolean", "description": "false: nothing is sent to it"},
    "include_test_events": {"type": "boolean", "description": "true: test-mode events are sent to it too"},
}
# Tools that lose something for good: clients may ask before calling them. A deactivated link refuses its clicks
# from then on, and no agent route turns it back on (nor a deactivated coupon code); a confirmed payout run has
# paid its partners.
DESTRUCTIVE_TOOLS = frozenset(
    {
        "void_commission",
        "delete_webhook_endpoint",
        "reset_fraud_rule",
        "deactivate_link",
        "reject_application",
        "confirm_payout_run",
        "delete_group",
        "delete_tier_rule",
        "delete_bonus",
        "deactivate_coupon_code",
    }
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: an agent route. Arguments named in the path ({program_id}) fill it; for GET the others are query
    parameters, for the other methods the JSON body."""

    name: str
    description: str
    method: Literal["GET", "POST", "PATCH", "DELETE"]
    path: str  # under /api/agent/v1
    properties: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    pick: str | None = None  # answer with this key of `data` only
    # Routes the service has had since the agent API began; the others are offered only if its OpenAPI lists them.
    always: bool = False

    @property
    def writes(self) -> bool:
        return self.method != "GET"

    def path_arguments(self) -> list[str]:
        return [part[1:-1] for part in self.path.split("/") if part.startswith("{") and part.endswith("}")]

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": self.properties, "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        return schema

    def as_tool(self) -> types.Tool:
        annotations = types.ToolAnnotations(
            read_only_hint=not self.writes,
            destructive_hint=self.name in DESTRUCTIVE_TOOLS,
            idempotent_hint=True,  # reads; writes are replay-safe through their Idempotency-Key
            open_world_hint=False,
        )
        return types.Tool(
            name=self.name, description=self.description, input_schema=self.input_schema(), annotations=annotations
        )


def _commission_action(
    action: str, description: str, required: dict[str, Any] | None = None, optional: dict[str, Any] | None = None
) -> ToolSpec:
    """POST /commissions/{commission_id}/<action>; the other arguments are its JSON body."""
    return ToolSpec(
        f"{action}_commission",
        description,
        "POST",
        f"/commissions/{{commission_id}}/{action}",
        {"commission_id": COMMISSION_ID, **(required or {}), **(optional or {})},
        required=("commission_id", *(required or {})),
    )


# Scope -> the tools it offers (None: every key). Extend here: a new agent route is one more ToolSpec.
SCOPE_TOOLS: dict[str | None, tuple[ToolSpec, ...]] = {
    None: (
        ToolSpec(
            "whoami",
            "The agent key in use: its workspace, the programs it may see (null: all of the workspace), its scopes "
            "and expiry.",
            "GET",
            "/me",
            always=True,
        ),
    ),
    "programs:read": (
        ToolSpec(
            "list_programs",
            "List the programs this key may see, newest first: settings (commission, cookie duration, domain).",
            "GET",
            "/programs",
            {"cursor": CURSOR, "limit": LIMIT},
            always=True,
        ),
        ToolSpec(
            "get_program",
            "One program: its settings and its readiness verdict (is tracking set up and working).",
            "GET",
            "/programs/{program_id}",
            {"program_id": PROGRAM_ID},
            required=("program_id",),
            always=True,
        ),
        ToolSpec(
            "program_readiness",
            "A program's readiness verdict only: status (ready, ready_with_warnings, incomplete), each check with "
            "its detail and the next step.",
            "GET",
            "/programs/{program_id}",
            {"program_id": PROGRAM_ID},
            required=("program_id",),
            pick="readiness",
            always=True,
        ),
        ToolSpec(
            "program_performance",
            "A program's performance over inclusive UTC days (default: the last 30; at most 366): clicks, leads, "
            "sales, revenue and commissions.",
            "GET",
            "/programs/{program_id}/performance",
            {
                "program_id": PROGRAM_ID,
                "dateFrom": {"type": "string", "format": "date", "description": "First day (YYYY-MM-DD)"},
                "dateTo": {"type": "string", "format": "date", "description": "Last day (YYYY-MM-DD)"},
            },
            required=("program_id",),
        ),
        ToolSpec(
            "list_fraud_rules",
            "A program's fraud rules (duplicate clicks, bots, self-referral, paid ads, velocity): each one's "
            "settings (enabled, flag or hold, threshold, window), whether they are the defaults, what it looks for.",
            "GET",
            "/programs/{program_id}/fraud-rules",
            {"program_id": PROGRAM_ID},
            required=("program_id",),
        ),
    ),
    "programs:write": (
        ToolSpec(
            "update_fraud_rule",
            "Change one fraud rule of a program (only the settings given): enabled, action (flag, or hold the "
            "commission too), threshold and window_minutes (for the rules that have them). New clicks and sales "
            "only.",
            "PATCH",
            "/programs/{program_id}/fraud-rules/{rule}",
            {
                "program_id": PROGRAM_ID,
                "rule": FRAUD_RULE,
                "enabled": {"type": "boolean", "description": "Whether the rule runs"},
                "action": {"type": "string", "enum": ["flag", "hold"], "description": "flag, or hold too"},
                "threshold": {"type": "integer", "minimum": 1, "description": "Velocity rules: fires above this"},
                "window_minutes": {"type": "integer", "minimum": 1, "description": "The window counted back"},
            },
            required=("program_id", "rule"),
        ),
        ToolSpec(
            "reset_fraud_rule",
            "Put one fraud rule of a program back on its defaults (its own settings are dropped).",
            "DELETE",
            "/programs/{program_id}/fraud-rules/{rule}",
            {"program_id": PROGRAM_ID, "rule": FRAUD_RULE},
            required=("program_id", "rule"),
        ),
    ),
    "partners:read": (
        ToolSpec(
            "list_partners",
            "List the partners this key may see, newest first, each with the programs it is enrolled in; "
            "program_id: only those enrolled in that program.",
            "GET",
            "/partners",
            {"program_id": PROGRAM_ID, "cursor": CURSOR, "limit": LIMIT},
        ),
        ToolSpec(
            "get_partner",
            "One partner: name, email and the programs it is enrolled in (of those the key may see).",
            "GET",
            "/partners/{partner_id}",
            {"partner_id": PARTNER_ID},
            required=("partner_id",),
        ),
        ToolSpec(
            "list_applications",
            "List a program's partner applications (from its public /join page), newest first; status: only "
            "pending, approved or rejected ones.",
            "GET",
            "/programs/{program_id}/applications",
            {
                "program_id": PROGRAM_ID,
                "status": {"type": "string", "enum": ["pending", "approved", "rejected"]},
                "cursor": CURSOR,
                "limit": LIMIT,
            },
            required=("program_id",),
        ),
        ToolSpec(
            "list_invitations",
            "List a program's partner invitations, newest first, each pending, accepted or expired.",
            "GET",
            "/programs/{program_id}/invitations",
            {"program_id": PROGRAM_ID, "cursor": CURSOR, "limit": LIMIT},
            required=("program_id",),
        ),
    ),
    "partners:write": (
        ToolSpec(
            "create_partner",
            "Create a partner in the key's workspace, enrolled in program_id at once when given (a key limited "
            "to programs must give one).",
            "POST",
            "/partners",
            {**PARTNER_FIELDS, "program_id": PROGRAM_ID},
            required=("name",),
        ),
        ToolSpec(
            "update_partner",
            "Change a partner's name or email (only those given).",
            "PATCH",
            "/partners/{partner_id}",
            {"partner_id": PARTNER_ID, **PARTNER_FIELDS},
            required=("partner_id",),
        ),
        ToolSpec(
            "invite_partner",
            "Invite someone by email to a program's partner portal: the email carries a one-time link (7 days) to "
            "set a password and join; the workspace's partner with that email is used, or made with name.",
            "POST",
            "/programs/{program_id}/invitations",
            {
                "program_id": PROGRAM_ID,
                "email": {"type": "string", "minLength": 3, "maxLength": 254, "description": "The email to invite"},
                "name": PARTNER_FIELDS["name"],
            },
            required=("program_id", "email"),
        ),
        ToolSpec(
            "approve_application",
            "Approve a pending partner application: the applicant is emailed a one-time link to the partner "
            "portal, as an invitation.",
            "POST",
            "/applications/{application_id}/approve",
            {"application_id": APPLICATION_ID},
            required=("application_id",),
        ),
        ToolSpec(
            "reject_application",
            "Reject a pending partner application (no email is sent; it cannot be approved afterwards).",
            "POST",
            "/applications/{application_id}/reject",
            {"application_id": APPLICATION_ID},
            required=("application_id",),
        ),
        ToolSpec(
            "enroll_partner",
            "Enroll a partner in a program, so its referral links there earn commissions (created: false when it "
            "already was).",
            "POST",
            "/partners/{partner_id}/enrollments",
            {"partner_id": PARTNER_ID, "program_id": PROGRAM_ID},
            required=("partner_id", "program_id"),
        ),
    ),
    "links:read": (
        ToolSpec(
            "list_links",
            "List the referral links of the programs this key may see, newest first: code (short_link), program, "
            "partner, active, counted clicks and the latest click.",
            "GET",
            "/links",
            {
                "program_id": PROGRAM_ID,
                "partner_id": PARTNER_ID,
                "active": {"type": "boolean", "description": "true: only links that take clicks; false: only off"},
                "cursor": CURSOR,
                "limit": LIMIT,
            },
        ),
    ),
    "links:write": (
        ToolSpec(
            "create_link",
            "Create a referral link for a partner enrolled in the program (enroll_partner first). short_link is "
            "the code visitors bring as ?aff=; generated from the partner's name when omitted.",
            "POST",
            "/links",
            {
                "program_id": PROGRAM_ID,
                "partner_id": PARTNER_ID,
                "short_link": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 100,
                    "pattern": "^[A-Za-z0-9_-]+$",
                    "description": "The code matched against ?aff= (A-Z a-z 0-9 _ -)",
                },
            },
            required=("program_id", "partner_id"),
        ),
        ToolSpec(
            "deactivate_link",
            "Deactivate a referral link: clicks on it are refused from now on (no tool turns it back on).",
            "POST",
            "/links/{link_id}/deactivate",
            {"link_id": LINK_ID},
            required=("link_id",),
        ),
    ),
    "events:read": (
        ToolSpec(
            "list_events",
            "List tracked events (clicks, leads, sales), newest first, filtered by type, program, partner, time "
            "and test mode.",
            "GET",
            "/events",
            {
                "type": {"type": "string", "description": "Event type: click, lead or sale"},
                "program_id": PROGRAM_ID,
                "partner_id": PARTNER_ID,
                "since": {"type": "string", "format": "date-time", "description": "Events at or after this time"},
                "until": {"type": "string", "format": "date-time", "description": "Events before this time"},
                "test": {"type": "boolean", "description": "Test-mode events (true) or live ones (false)"},
                "cursor": CURSOR,
                "limit": LIMIT,
            },
        ),
        ToolSpec(
            "list_flagged_clicks",
            "A program's clicks the fraud rules marked, newest first: duplicates, bots, prefetches (not counted) "
            "and paid-ad clicks, with link, partner, device and country.",
            "GET",
            "/programs/{program_id}/flagged-clicks",
            {
                "program_id": PROGRAM_ID,
                "kind": {"type": "string", "description": "duplicate, bot, prefetch or paid_ads"},
                "partner_id": PARTNER_ID,
                "cursor": CURSOR,
                "limit": LIMIT,
            },
            required=("program_id",),
        ),
    ),
    "commissions:read": (
        ToolSpec(
            "list_commissions",
            "List commissions, newest first, with filters (program, partner, status, on hold, held or flagged by "
            "a fraud rule).",
            "GET",
            "/commissions",
            {
                "program_id": PROGRAM_ID,
                "partner_id": PARTNER_ID,
                "status": {"type": "string", "description": "Only commissions in this state"},
                "held": {"type": "boolean", "description": "true: only those on hold; false: only those not"},
                "hold_rule": {"type": "string", "description": "Only those this fraud rule holds"},
                "flagged": {"type": "string", "description": "Only those whose sale this fraud rule flagged"},
                "cursor": CURSOR,
                "limit": LIMIT,
            },
        ),
        ToolSpec(
            "get_commission",
            "One commission with its ledger, refund history and hold decisions (who held, released or voided it, "
            "and why).",
            "GET",
            "/commissions/{commission_id}",
            {"commission_id": COMMISSION_ID},
            required=("commission_id",),
        ),
    ),
    "commissions:write": (
        _commission_action("approve", "Approve a pending commission now, before its hold period ends."),
        _commission_action(
            "void",
            "Void a commission: the partner is not paid for it. Give the reason.",
            required={
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "Why the commission is voided",
                }
            },
        ),
        _commission_action(
            "hold",
            "Place a commission on hold: it is not approved until released.",
            optional={"reason": {"type": "string", "maxLength": 500, "description": "Why it is held"}},
        ),
        _commission_action(
            "release",
            "Release a commission from hold: credited at once if its hold period has ended, else when it ends.",
            optional={"reason": {"type": "string", "maxLength": 500, "description": "Why it is released"}},
        ),
    ),
    "payouts:read": (
        ToolSpec(
            "partner_balances",
            "Partner balances from the ledger: what each partner has earned, is owed and has been paid.",
            "GET",
            "/payouts/balances",
            {"cursor": CURSOR, "limit": LIMIT},
        ),
        ToolSpec(
            "list_withdrawals",
            "List partner withdrawals (payout requests) and their status, newest first.",
            "GET",
            "/payouts/withdrawals",
            {"cursor": CURSOR, "limit": LIMIT},
        ),
        ToolSpec(
            "list_payout_runs",
            "List payout runs, newest first: program, currency, status (preview or confirmed), each partner's "
            "line (amount, rail, ready or why not), the payouts made and who previewed and confirmed it.",
            "GET",
            "/payouts/runs",
            {
                "program_id": PROGRAM_ID,
                "currency": CURRENCY,
                "status": {"type": "string", "description": "preview or confirmed"},
                "cursor": CURSOR,
                "limit": LIMIT,
            },
        ),
        ToolSpec(
            "get_payout_run",
            "One payout run with its lines, payouts and audit trail.",
            "GET",
            "/payouts/runs/{run_id}",
            {"run_id": RUN_ID},
            required=("run_id",),
        ),
    ),
    "payouts:write": (
        ToolSpec(
            "preview_payout_run",
            "Preview a payout run for a program in one currency: every partner owed at least the minimum "
            "(minimum_cents, in minor units; the program's minimum when omitted), the amount, the rail and whether "
            "they can be paid now. Nothing is paid until confirm_payout_run.",
            "POST",
            "/payouts/runs",
            {
                "program_id": PROGRAM_ID,
                "currency": CURRENCY,
                "minimum_cents": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Pay only partners owed at least this, in the currency's minor units",
                },
            },
            required=("program_id", "currency"),
        ),
        ToolSpec(
            "confirm_payout_run",
            "Confirm a previewed payout run: one payout per ready partner, debited from their balance at once; "
            "Stripe payouts are sent, PayPal and Wise ones wait for the owner to pay them. A run is confirmed "
            "once.",
            "POST",
            "/payouts/runs/{run_id}/confirm",
            {"run_id": RUN_ID},
            required=("run_id",),
        ),
    ),
    "groups:read": (
        ToolSpec(
            "list_groups",
            "List a program's partner groups, newest first: each one's commission terms, customer discount and "
            "application page. The default group (is_default) has the program's own terms.",
            "GET",
            "/programs/{program_id}/groups",
            {"program_id": PROGRAM_ID, "cursor": CURSOR, "limit": LIMIT},
            required=("program_id",),
        ),
        ToolSpec(
            "get_group",
            "One partner group of a program.",
            "GET",
            "/programs/{program_id}/groups/{group_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID},
            required=("program_id", "group_id"),
        ),
        ToolSpec(
            "list_tier_rules",
            "A group's tier rules: each moves its partners to target_group_id when their sales or revenue in a "
            "calendar month or quarter reach (promote) or stay below (demote) the threshold.",
            "GET",
            "/programs/{program_id}/groups/{group_id}/tier-rules",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, "cursor": CURSOR, "limit": LIMIT},
            required=("program_id", "group_id"),
        ),
        ToolSpec(
            "list_bonuses",
            "A group's bonuses: a one-off payment when a partner reaches a milestone (sales or revenue in a month, "
            "quarter or ever), paid once per partner and period.",
            "GET",
            "/programs/{program_id}/groups/{group_id}/bonuses",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, "cursor": CURSOR, "limit": LIMIT},
            required=("program_id", "group_id"),
        ),
        ToolSpec(
            "get_partner_group",
            "The group a partner enrolled in a program is in, with its terms.",
            "GET",
            "/programs/{program_id}/partners/{partner_id}/group",
            {"program_id": PROGRAM_ID, "partner_id": PARTNER_ID},
            required=("program_id", "partner_id"),
        ),
        ToolSpec(
            "list_group_changes",
            "A partner's group changes in a program, newest first: from and to which group, why (owner, tier, "
            "import, application), by whom and the figure that triggered a tier move.",
            "GET",
            "/programs/{program_id}/partners/{partner_id}/group-changes",
            {"program_id": PROGRAM_ID, "partner_id": PARTNER_ID, "cursor": CURSOR, "limit": LIMIT},
            required=("program_id", "partner_id"),
        ),
        ToolSpec(
            "list_coupon_codes",
            "A program's coupon codes, newest first (partner_id: one partner's): a sale carrying an active code "
            "is its partner's when no click attributes it.",
            "GET",
            "/programs/{program_id}/coupon-codes",
            {
                "program_id": PROGRAM_ID,
                "partner_id": PARTNER_ID,
                "active": {"type": "boolean", "description": "true: only active codes; false: only deactivated"},
                "cursor": CURSOR,
                "limit": LIMIT,
            },
            required=("program_id",),
        ),
    ),
    "groups:write": (
        ToolSpec(
            "create_group",
            "Create a partner group in a program with its own commission terms, customer discount and application "
            "page (only name is required; the rest default to 20 percent, 30 days' hold, no discount).",
            "POST",
            "/programs/{program_id}/groups",
            {"program_id": PROGRAM_ID, **GROUP_FIELDS},
            required=("program_id", "name"),
        ),
        ToolSpec(
            "update_group",
            "Change a group's settings (only those given). New terms apply to commissions earned from now on. The "
            "default group's commission terms are the program's settings and are refused here.",
            "PATCH",
            "/programs/{program_id}/groups/{group_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, **GROUP_FIELDS},
            required=("program_id", "group_id"),
        ),
        ToolSpec(
            "delete_group",
            "Delete an empty group (not the default one) with its tier rules and bonuses; move its partners first.",
            "DELETE",
            "/programs/{program_id}/groups/{group_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID},
            required=("program_id", "group_id"),
        ),
        ToolSpec(
            "create_tier_rule",
            "Add a tier rule to a group: move its partners to target_group_id when their figure reaches the "
            "threshold in the current month or quarter (promote), or stayed below it in the last one (demote).",
            "POST",
            "/programs/{program_id}/groups/{group_id}/tier-rules",
            {
                "program_id": PROGRAM_ID,
                "group_id": GROUP_ID,
                "target_group_id": {"type": "integer", "description": "Another group of the program"},
                "direction": {"type": "string", "enum": ["promote", "demote"], "description": "Default promote"},
                "metric": METRIC,
                "period": {"type": "string", "enum": ["month", "quarter"], "description": "Default month"},
                "threshold": {"type": "integer", "minimum": 1, "description": "A count of sales or revenue in cents"},
                "is_active": IS_ACTIVE,
            },
            required=("program_id", "group_id", "target_group_id", "metric", "threshold"),
        ),
        ToolSpec(
            "update_tier_rule",
            "Turn a tier rule off or on.",
            "PATCH",
            "/programs/{program_id}/groups/{group_id}/tier-rules/{rule_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, "rule_id": TIER_RULE_ID, "is_active": IS_ACTIVE},
            required=("program_id", "group_id", "rule_id", "is_active"),
        ),
        ToolSpec(
            "delete_tier_rule",
            "Delete a tier rule (the moves it made stay recorded).",
            "DELETE",
            "/programs/{program_id}/groups/{group_id}/tier-rules/{rule_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, "rule_id": TIER_RULE_ID},
            required=("program_id", "group_id", "rule_id"),
        ),
        ToolSpec(
            "create_bonus",
            "Add a bonus to a group: amount_cents paid once per partner and period when their sales or revenue "
            "reach the threshold (period lifetime: the first N sales ever).",
            "POST",
            "/programs/{program_id}/groups/{group_id}/bonuses",
            {
                "program_id": PROGRAM_ID,
                "group_id": GROUP_ID,
                "name": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The bonus's name"},
                "metric": METRIC,
                "period": {
                    "type": "string",
                    "enum": ["month", "quarter", "lifetime"],
                    "description": "Default lifetime",
                },
                "threshold": {"type": "integer", "minimum": 1, "description": "A count of sales or revenue in cents"},
                "amount_cents": {"type": "integer", "minimum": 1, "description": "The bonus, in minor units"},
                "currency": CURRENCY,
                "is_active": IS_ACTIVE,
            },
            required=("program_id", "group_id", "name", "metric", "threshold", "amount_cents"),
        ),
        ToolSpec(
            "update_bonus",
            "Turn a bonus off or on (a bonus already paid is stopped this way; it cannot be deleted).",
            "PATCH",
            "/programs/{program_id}/groups/{group_id}/bonuses/{bonus_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, "bonus_id": BONUS_ID, "is_active": IS_ACTIVE},
            required=("program_id", "group_id", "bonus_id", "is_active"),
        ),
        ToolSpec(
            "delete_bonus",
            "Delete a bonus that was never paid.",
            "DELETE",
            "/programs/{program_id}/groups/{group_id}/bonuses/{bonus_id}",
            {"program_id": PROGRAM_ID, "group_id": GROUP_ID, "bonus_id": BONUS_ID},
            required=("program_id", "group_id", "bonus_id"),
        ),
        ToolSpec(
            "move_partner_to_group",
            "Move a partner enrolled in a program to another of its groups: commissions earned from now on follow "
            "the new group's terms, earlier ones keep theirs (moved: false when it was there already).",
            "POST",
            "/programs/{program_id}/partners/{partner_id}/group-changes",
            {"program_id": PROGRAM_ID, "partner_id": PARTNER_ID, "group_id": GROUP_ID},
            required=("program_id", "partner_id", "group_id"),
        ),
        ToolSpec(
            "create_coupon_code",
            "Give a partner enrolled in the program a coupon code (letters, digits, - and _; case-insensitive). "
            "With the program's Stripe account connected it is made there as a promotion code of the partner's "
            "group's discount; otherwise it is registered as it is.",
            "POST",
            "/programs/{program_id}/coupon-codes",
            {
                "program_id": PROGRAM_ID,
                "partner_id": PARTNER_ID,
                "code": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 100,
                    "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]*$",
                    "description": "The code customers enter",
                },
            },
            required=("program_id", "partner_id", "code"),
        ),
        ToolSpec(
            "deactivate_coupon_code",
            "Deactivate a coupon code: sales carrying it are no longer attributed by it (no tool turns it back on).",
            "POST",
            "/programs/{program_id}/coupon-codes/{code_id}/deactivate",
            {"program_id": PROGRAM_ID, "code_id": COUPON_CODE_ID},
            required=("program_id", "code_id"),
        ),
    ),
    "webhooks:read": (
        ToolSpec(
            "list_webhook_endpoints",
            "List webhook endpoints, newest first: url, event types, enabled, failure streak (never the secret). "
            "program_id null means every program of the workspace.",
            "GET",
            "/webhooks/endpoints",
            {"program_id": PROGRAM_ID, "cursor": CURSOR, "limit": LIMIT},
        ),
        ToolSpec(
            "get_webhook_endpoint",
            "One webhook endpoint (never its secret).",
            "GET",
            "/webhooks/endpoints/{endpoint_id}",
            {"endpoint_id": ENDPOINT_ID},
            required=("endpoint_id",),
        ),
        ToolSpec(
            "list_webhook_deliveries",
            "An endpoint's deliveries, newest first: event, status (pending, succeeded, failed), attempts, last error.",
            "GET",
            "/webhooks/endpoints/{endpoint_id}/deliveries",
            {
                "endpoint_id": ENDPOINT_ID,
                "status": {"type": "string", "description": "pending, succeeded or failed"},
                "event_type": WEBHOOK_EVENT_TYPE,
                "cursor": CURSOR,
                "limit": LIMIT,
            },
            required=("endpoint_id",),
        ),
        ToolSpec(
            "list_webhook_attempts",
            "A delivery's attempts (HTTP requests), newest first: status code, latency, start of the answer, error.",
            "GET",
            "/webhooks/deliveries/{delivery_id}/attempts",
            {"delivery_id": DELIVERY_ID, "cursor": CURSOR, "limit": LIMIT},
            required=("delivery_id",),
        ),
        ToolSpec(
            "list_webhook_events",
            "Webhook events of the programs the key may see, newest first, as receivers get them.",
            "GET",
            "/webhooks/events",
            {"program_id": PROGRAM_ID, "type": WEBHOOK_EVENT_TYPE, "cursor": CURSOR, "limit": LIMIT},
        ),
    ),
    "webhooks:write": (
        ToolSpec(
            "create_webhook_endpoint",
            "Create a webhook endpoint for a program (program_id) or every program of the workspace. The answer "
            "holds the signing secret (whsec_…) once: hand it to the receiver now, no read shows it again.",
            "POST",
            "/webhooks/endpoints",
            {"program_id": PROGRAM_ID, **WEBHOOK_ENDPOINT_FIELDS},
            required=("url", "event_types"),
        ),
        ToolSpec(
            "update_webhook_endpoint",
            "Change a webhook endpoint's url, event_types, enabled, include_test_events or description (only those "
            "given).",
            "PATCH",
            "/webhooks/endpoints/{endpoint_id}",
            {"endpoint_id": ENDPOINT_ID, **WEBHOOK_ENDPOINT_FIELDS},
            required=("endpoint_id",),
        ),
        ToolSpec(
            "delete_webhook_endpoint",
            "Delete a webhook endpoint with its delivery log.",
            "DELETE",
            "/webhooks/endpoints/{endpoint_id}",
            {"endpoint_id": ENDPOINT_ID},
            required=("endpoint_id",),
        ),
        ToolSpec(
            "rotate_webhook_secret",
            "Rotate an endpoint's signing secret: the new one is answered once; the previous one keeps signing "
            "until previous_secret_expires_at (24 hours by default).",
            "POST",
            "/webhooks/endpoints/{endpoint_id}/rotate-secret",
            {"endpoint_id": ENDPOINT_ID},
            required=("endpoint_id",),
        ),
        ToolSpec(
            "resend_webhook_delivery",
            "Send one delivery again now (same event id, fresh retry schedule).",
            "POST",
            "/webhooks/deliveries/{delivery_id}/resend",
            {"delivery_id": DELIVERY_ID},
            required=("delivery_id",),
        ),
        ToolSpec(
            "resend_failed_webhook_deliveries",
            "Send again every failed delivery of an endpoint whose event happened from since (inclusive) to until "
            "(exclusive; a date means to the end of that UTC day).",
            "POST",
            "/webhooks/endpoints/{endpoint_id}/resend-failed",
            {
                "endpoint_id": ENDPOINT_ID,
                "since": {"type": "string", "description": "ISO 8601 date or date-time"},
                "until": {"type": "string", "description": "ISO 8601 date or date-time"},
            },
            required=("endpoint_id", "since", "until"),
        ),
    ),
}


def scope_allows(scopes: list[str], scope: str | None) -> bool:
    """As the service decides it: a write scope includes the read scope of its resource."""
    if scope is None or scope in scopes:
        return True
    resource, _, level = scope.partition(":")
    return level == "read" and f"{resource}:write" in scopes


def _route_template(path: str) -> str:
    """/commissions/{commission_id}/void and /commissions/{id}/void name the same route."""
    return "/".join("{}" if part.startswith("{") else part for part in path.rstrip("/").split("/"))


def _operation(openapi: dict[str, Any] | None, spec: ToolSpec) -> dict[str, Any] | None:
    if not openapi:
        return None
    wanted = _route_template(AGENT_PREFIX + spec.path)
    for path, item in (openapi.get("paths") or {}).items():
        if _route_template(path) == wanted and isinstance(item, dict):
            operation = item.get(spec.method.lower())
            return operation if isinstance(operation, dict) else None
    return None


def _enum_of(schema: dict[str, Any]) -> list[Any] | None:
    """The values a parameter takes: its enum, or that of one of its anyOf branches (the agent API declares an
    empty value as a second branch, since a blank query parameter means absent)."""
    enum = schema.get("enum")
    if isinstance(enum, list):
        return enum
    for branch in schema.get("anyOf") or []:
        branch_enum = branch.get("enum") if isinstance(branch, dict) else None
        if isinstance(branch_enum, list):
            return branch_enum
    return None


def _with_route_parameters(spec: ToolSpec, operation: dict[str, Any]) -> ToolSpec:
    """A GET tool takes the query parameters the route declares: a declared argument the route lacks is dropped
    (it would be refused or ignored), one the route adds is offered with its OpenAPI schema, and those the route
    requires are required."""
    if spec.writes:
        return spec
    declared = {p["name"]: p for p in operation.get("parameters") or [] if isinstance(p, dict) and p.get("name")}
    query = {name: p for name, p in declared.items() if p.get("in") == "query"}
    path_arguments = set(spec.path_arguments())
    properties: dict[str, Any] = {}
    for name, schema in spec.properties.items():
        if name in path_arguments:
            properties[name] = schema
        elif name in query:
            # The route's enum (a status's values) completes the declared schema.
            route_enum = _enum_of(query[name].get("schema") or {})
            string_enum = route_enum and schema.get("type") == "string"
            properties[name] = {"enum": route_enum, **schema} if string_enum else schema
    for name, parameter in query.items():
        if name not in properties:
            schema = dict(parameter.get("schema") or {})
            if parameter.get("description"):
                schema["description"] = parameter["description"]
            properties[name] = schema
    required = (*spec.required, *(name for name, p in query.items() if p.get("required") and name not in spec.required))
    return ToolSpec(spec.name, spec.description, spec.method, spec.path, properties, required, spec.pick, spec.always)


def tools_for(scopes: list[str], openapi: dict[str, Any] | None) -> dict[str, ToolSpec]:
    """The tools a key with these scopes is offered on a service with this OpenAPI description (None: unknown)."""
    offered: dict[str, ToolSpec] = {}
    for scope, specs in SCOPE_TOOLS.items():
        if not scope_allows(scopes, scope):
            continue
        for spec in specs:
            operation = _operation(openapi, spec)
            if operation is not None:
                offered[spec.name] = _with_route_parameters(spec, operation)
            elif spec.always:
                offered[spec.name] = spec
    return offered


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def tool_request(spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, dict[str, str] | None, dict[str, Any] | None]:
    """(path, query, JSON body) of a call; raises ValueError naming a missing or unknown argument."""
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        raise ValueError(f"Unknown argument: {unknown[0]}")
    missing = [name for name in spec.required if arguments.get(name) in (None, "")]
    if missing:
        raise ValueError(f"Missing argument: {missing[0]}")
    path = spec.path
    rest = {name: value for name, value in arguments.items() if value is not None}
    for name in spec.path_arguments():
        path = path.replace(f"{{{name}}}", str(rest.pop(name)))
    if spec.writes:
        return AGENT_PREFIX + path, None, rest
    return AGENT_PREFIX + path, {name: _query_value(value) for name, value in rest.items()} or None, None


def _text(payload: Any) -> list[types.ContentBlock]:
    return [types.TextContent(text=json.dumps(payload, indent=2))]


def error_result(code: str | None, message: str, status: int | None = None) -> types.CallToolResult:
    error: dict[str, Any] = {"code": code, "message": message}
    if status is not None:
        error["status"] = status
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}" if code else message)],
        structured_content={"error": error},
        is_error=True,
    )


def result_of(spec: ToolSpec, body: dict[str, Any]) -> dict[str, Any]:
    """The API's `data` (with `next_cursor` for a list, which MCP cannot return bare)."""
    data = body["data"]
    if "next_cursor" in body or isinstance(data, list):
        return {"data": data, "next_cursor": body.get("next_cursor")}
    if spec.pick is not None and isinstance(data, dict):
        return data.get(spec.pick) or {}
    return data if isinstance(data, dict) else {"data": data}


class AgentMcp:
    def __init__(self, api: Api, tools: dict[str, ToolSpec]) -> None:
        self.api = api
        self.tools = tools

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.as_tool() for spec in self.tools.values()])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = self.tools.get(params.name)
        if spec is None:
            return error_result("unknown_tool", f"No tool named {params.name} is offered to this key")
        try:
            path, query, body = tool_request(spec, dict(params.arguments or {}))
        except ValueError as exc:
            return error_result("invalid_arguments", str(exc))
        # A fresh key per call: a retry by the MCP client is a new call, a replay inside one call is not possible.
        headers = {"Idempotency-Key": str(uuid.uuid4())} if spec.writes else None
        call = partial(self.api.call, spec.method, path, params=query, json=body, headers=headers)
        try:
            answer = await anyio.to_thread.run_sync(call)
        except CliFailure as failure:
            return error_result(failure.code, failure.message, failure.status)
        payload = result_of(spec, answer)
        return types.CallToolResult(content=_text(payload), structured_content=payload)

    def server(self) -> Server:
        return Server(
            "svc",
            version=__version__,
            instructions="Tools of the svc affiliate tracking service's agent API, limited to this key's scopes.",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )


def _openapi(api: Api) -> dict[str, Any] | None:
    """The service's OpenAPI description, or None (then only the tools of the first agent routes are offered)."""
    try:
        response = api.get_json(SCHEMA_PATH, params={"format": "json"})
    except CliFailure as failure:
        print(f"svc mcp: could not read the OpenAPI description ({failure.message})", file=sys.stderr)
        return None
    return response if isinstance(response, dict) else None


def prepare(base_url: str, key: str | None) -> AgentMcp:
    """Checks the key with GET /me and chooses the tools; raises CliFailure (the API's message) otherwise."""
    if not key or not key.strip():
        raise CliFailure(f"{KEY_ENV} is not set: export the agent key (agt_…) the operator issued you.")
    api = Api(base_url, token=key.strip())
    me = api.call("GET", f"{AGENT_PREFIX}/me")["data"]
    scopes = [scope for scope in me.get("scopes") or [] if isinstance(scope, str)]
    return AgentMcp(api, tools_for(scopes, _openapi(api)))


async def _serve(agent: AgentMcp) -> None:
    server = agent.server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(base_url: str, key: str | None) -> int:
    """Serves until the client closes stdin. 1 when the key is missing or refused (the reason on stderr)."""
    try:
        agent = prepare(base_url, key)
    except CliFailure as failure:
        facts = f" (HTTP {failure.status}, {failure.code})" if failure.status else ""
        print(f"svc mcp: {failure.message}{facts}", file=sys.stderr)
        return 1
    print(f"svc mcp: serving {len(agent.tools)} tools for {base_url}: {', '.join(agent.tools)}", file=sys.stderr)
    anyio.run(_serve, agent)
    return 0
