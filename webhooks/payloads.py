"""The `data` of each event type: what docs/webhooks.md documents, built from the rows the emitting services
already hold. Duck-typed (the rows' models belong to the apps that emit, which depend on this one).

Ids are the service's own (the agent API's and dashboard's). Times are ISO 8601 in UTC. Money is in cents with
its currency."""

from typing import Any

from .models import EventType, utc_text


def lead_data(lead: Any) -> dict[str, Any]:
    """lead.created: a lead that counts (server-confirmed, or settled from a provisional one)."""
    return {
        "customer_id": lead.customer_id,
        "partner_id": lead.partner_id,
        "click_id": lead.click_id,
        "customer_key": lead.customer_key,
        "email": lead.email,
        "server_confirmed": lead.server_mode,
        "created_at": utc_text(lead.lead_timestamp),
    }


def sale_data(sale: Any) -> dict[str, Any]:
    """sale.created: attributed (partner_id set, a commission may follow) or not."""
    return {
        "transaction_id": sale.processor_event_id,
        "amount_cents": sale.amount_cents,
        "tax_cents": sale.tax_cents,
        "currency": sale.currency,
        "sale_type": sale.sale_type,
        "is_recurring": sale.is_recurring,
        "subscription_id": sale.subscription_id,
        "subscription_interval": sale.subscription_interval,
        "product_id": sale.product_id,
        "provider": sale.provider,
        "customer_id": sale.customer_id,
        "click_id": sale.click_id,
        "partner_id": sale.partner_id,
        "attributed": sale.attributed,
        "created_at": utc_text(sale.sale_date),
    }


def commission_data(commission: Any) -> dict[str, Any]:
    """commission.created / approved / refunded / reversed: the commission as the change left it. A milestone
    bonus (groups.models.BonusAward) has no sale (sale_id and customer_id null) and adds `kind` "bonus" and the
    bonus's name; a sale's commission is exactly as documented, with neither."""
    data = {
        "sale_id": commission.sale_id,
        "partner_id": commission.partner_id,
        "customer_id": commission.customer_id,
        "amount_cents": commission.amount_cents,
        "currency": commission.currency,
        "status": commission.status,
        "hold_until": utc_text(commission.hold_until),
        "approved_at": utc_text(commission.approved_at),
        "sale_refunded_cents": commission.sale_refunded_cents,
        "deducted_cents": commission.deducted_cents,
        "refund_reason": commission.refund_reason,
        "voided": commission.voided_at is not None,
        "void_reason": commission.void_reason,
        # A fraud rule's (or an owner's) hold: nothing is credited while held.
        "held": commission.held_at is not None,
        "hold_rule": commission.hold_rule,
        "flags": list(commission.flags),
        "created_at": utc_text(commission.created_at),
    }
    if commission.kind == "bonus":
        award = getattr(commission, "bonus_award", None)
        data["kind"] = "bonus"
        data["bonus"] = {"id": award.bonus_id, "name": award.bonus.name} if award is not None else None
    return data


def refund_data(
    *, sale: Any, commission: Any, refund_id: str | None, amount: int | None, deduction: int, reason: str
) -> dict[str, Any]:
    """refund.applied: one refund of a sale, applied to its commission (a full refund when amount_cents is null)."""
    return {
        "sale_id": sale.pk,
        "commission_id": commission.pk,
        "refund_id": refund_id,
        "amount_cents": amount,
        "currency": sale.currency,
        "sale_refunded_cents": commission.sale_refunded_cents,
        "deduction_cents": deduction,
        "commission_status": commission.status,
        "reason": reason,
    }


def partner_enrolled_data(*, enrolment: Any, partner: Any) -> dict[str, Any]:
    """partner.enrolled: a partner joined the program (id is the enrolment's)."""
    return {
        "partner_id": partner.pk,
        "name": partner.name,
        "email": partner.email,
        "enrolled_at": utc_text(getattr(enrolment, "created_at", None)),
    }


def partner_group_changed_data(*, change: Any, from_name: str, to_name: str) -> dict[str, Any]:
    """partner.group_changed: a partner put in another group of the program (id is the change's)."""
    return {
        "partner_id": change.partner_id,
        "from_group_id": change.from_group_id,
        "from_group": from_name,
        "to_group_id": change.to_group_id,
        "to_group": to_name,
        "reason": change.reason,
        "period": change.period_key,
        "figure": change.figure,
        "changed_at": utc_text(change.created_at),
    }


# Types whose real event names no row of its own (no `data.id`): a refund is a step on a sale's commission.
WITHOUT_OBJECT_ID = frozenset({EventType.REFUND_APPLIED})

# An example `data` of every type, for `svc trigger` and the docs' samples (object_id 0: nothing real).
EXAMPLE_DATA: dict[str, dict[str, Any]] = {
    EventType.LEAD_CREATED: {
        "customer_id": 0,
        "partner_id": 0,
        "click_id": "clk_example",
        "customer_key": "user_example",
        "email": "customer@example.com",
        "server_confirmed": True,
        "created_at": "2026-01-01T00:00:00Z",
    },
    EventType.SALE_CREATED: {
        "transaction_id": "txn_example",
        "amount_cents": 4900,
        "tax_cents": None,
        "currency": "USD",
        "sale_type": "payment",
        "is_recurring": False,
        "subscription_id": "",
        "subscription_interval": "",
        "product_id": "",
        "provider": "other",
        "customer_id": 0,
        "click_id": "clk_example",
        "partner_id": 0,
        "attributed": True,
        "created_at": "2026-01-01T00:00:00Z",
    },
    **{
        kind: {
            "sale_id": 0,
            "partner_id": 0,
            "customer_id": 0,
            "amount_cents": 980,
            "currency": "USD",
            "status": status,
            "hold_until": "2026-01-31T00:00:00Z",
            "approved_at": "2026-01-31T00:00:00Z" if status == "approved" else None,
            "sale_refunded_cents": {"refunded": 2450, "reversed": 4900}.get(status, 0),
            "deducted_cents": {"refunded": 490, "reversed": 980}.get(status, 0),
            "refund_reason": "requested_by_customer" if status in ("refunded", "reversed") else "",
            "voided": False,
            "void_reason": "",
            "held": False,
            "hold_rule": "",
            "flags": [],
            "created_at": "2026-01-01T00:00:00Z",
        }
        for kind, status in (
            (EventType.COMMISSION_CREATED, "pending"),
            (EventType.COMMISSION_APPROVED, "approved"),
            (EventType.COMMISSION_REFUNDED, "refunded"),
            (EventType.COMMISSION_REVERSED, "reversed"),
        )
    },
    EventType.REFUND_APPLIED: {
        "sale_id": 0,
        "commission_id": 0,
        "refund_id": "re_example",
        "amount_cents": 2450,
        "currency": "USD",
        "sale_refunded_cents": 2450,
        "deduction_cents": 490,
        "commission_status": "refunded",
        "reason": "requested_by_customer",
    },
    EventType.PARTNER_ENROLLED: {
        "partner_id": 0,
        "name": "Example Partner",
        "email": "partner@example.com",
        "enrolled_at": "2026-01-01T00:00:00Z",
    },
    EventType.PARTNER_GROUP_CHANGED: {
        "partner_id": 0,
        "from_group_id": 0,
        "from_group": "Default",
        "to_group_id": 0,
        "to_group": "Gold",
        "reason": "tier",
        "period": "2026-01",
        "figure": 12,
        "changed_at": "2026-01-31T00:00:00Z",
    },
    **{
        kind: {
            "run_id": 0,
            "partner_id": 0,
            "amount_cents": 12_500,
            "currency": "USD",
            "status": status,
            "rail": "stripe",
            "stripe_transfer_id": "tr_example" if status == "paid" else None,
            "failure_code": "account_invalid" if status == "failed" else None,
            "failure_message": "The destination account cannot receive transfers." if status == "failed" else None,
            "created_at": "2026-02-01T00:00:00Z",
            "paid_at": "2026-02-01T00:00:05Z" if status == "paid" else None,
            "failed_at": "2026-02-01T00:00:05Z" if status == "failed" else None,
        }
        for kind, status in (
            (EventType.PAYOUT_CREATED, "pending"),
            (EventType.PAYOUT_PAID, "paid"),
            (EventType.PAYOUT_FAILED, "failed"),
        )
    },
}
