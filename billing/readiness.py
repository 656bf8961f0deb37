"""The readiness checklist's "Billing platforms" check (listed by insight.readiness): for each connected platform,
whether events arrive, whether deliveries fail their signature, whether payments arrive without the checkout's
attribution data, and events that failed or named a currency the service does not record. None when the program
connected no platform. One query, whatever the program holds."""

from datetime import timedelta

from django.db.models import Count, Max, Q
from django.utils import timezone

from core.times import utc_text
from programs.models import Program

from .models import BillingConnection, BillingEvent

CHECK_ID = "billing_platforms"
TITLE = "Billing platforms"
# What the check looks back over for events without attribution data, failures and unsupported currencies.
RECENT = timedelta(days=30)


def billing_check(program: Program) -> dict[str, str] | None:
    """The check's fields (id, status, title, detail, next_step), or None when no platform is connected."""
    since = timezone.now() - RECENT
    recent = Q(events__received_at__gte=since)
    connections = list(
        BillingConnection.objects.filter(program=program, is_active=True)
        .annotate(
            last_received=Max("events__received_at"),
            unattributed=Count("events", filter=recent & Q(events__carried_attribution=False)),
            failed=Count("events", filter=recent & Q(events__status=BillingEvent.Status.FAILED)),
            unsupported=Count("events", filter=recent & Q(events__outcome__startswith="currency ")),
        )
        .order_by("platform")
    )
    if not connections:
        return None
    problems: list[str] = []
    warnings: list[str] = []
    facts: list[str] = []
    for connection in connections:
        label = connection.get_platform_display()
        if connection.last_received is None:
            warnings.append(
                f"{label}: no event received yet. Paste this connection's URL as a webhook in {label} and enable "
                f"its events (the Billing page lists them)"
            )
        else:
            facts.append(f"{label}: last event {utc_text(connection.last_received)}")
        failures_recent = connection.last_signature_failure_at and connection.last_signature_failure_at >= since
        if failures_recent:
            problems.append(
                f"{label}: deliveries failed their signature ({connection.signature_failures} in all, last "
                f"{utc_text(connection.last_signature_failure_at)}: {connection.last_signature_failure}). Paste the "
                f"secret {label} shows for this webhook again"
            )
        if connection.unattributed:
            warnings.append(
                f"{label}: {connection.unattributed} payment(s) in 30 days carried no svc_click_id or svc_customer_key;"
                f" pass the click id into checkout (docs/billing/{connection.platform}.md)"
            )
        if connection.failed:
            warnings.append(
                f"{label}: {connection.failed} event(s) failed to process; replay them (svc billing replay)"
            )
        if connection.unsupported:
            warnings.append(
                f"{label}: {connection.unsupported} payment(s) in a currency the service does not record (nothing "
                f"was recorded)"
            )
    status = "fail" if problems else ("warn" if warnings else "pass")
    detail = "; ".join(facts) or "Connected"
    return {
        "id": CHECK_ID,
        "status": status,
        "title": TITLE,
        "detail": detail,
        "next_step": ". ".join([*problems, *warnings]) + ("." if problems or warnings else ""),
    }
