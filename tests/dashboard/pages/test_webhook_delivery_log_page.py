"""An endpoint's delivery log on its dashboard page: newest first with each delivery's attempts, filtered by status
and event type, paged; and resending one delivery, or every failed one of a period (program:manage)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from dashboard import messages as texts
from dashboard.webhook_views import DELIVERIES_PER_PAGE
from tests.dashboard.pages.webhook_rows import delivery_make
from tests.factories import ProgramFactory, WebhookEndpointFactory
from webhooks import messages
from webhooks.models import DeliveryStatus, WebhookDelivery

pytestmark = pytest.mark.django_db


def page(response) -> str:
    return response.content.decode()


@pytest.fixture
def endpoint(program):
    return WebhookEndpointFactory(program=program)


def log_url(program, endpoint, query: str = "") -> str:
    return f"/programs/{program.pk}/webhooks/{endpoint.pk}{query}"


def test_it_shows_the_log_newest_first_with_each_deliverys_attempts(member_client, program, endpoint):
    now = timezone.now()
    older = delivery_make(endpoint, type="lead.created", status=DeliveryStatus.SUCCEEDED, at=now - timedelta(hours=2))
    newer = delivery_make(endpoint, type="sale.created", status=DeliveryStatus.FAILED, at=now, attempts=3)
    newer.attempt_log.filter(number=3).update(manual=True, latency_ms=1234, error="ReadTimeout")

    body = page(member_client.get(log_url(program, endpoint)))

    assert body.index(f'id="delivery-{newer.pk}"') < body.index(f'id="delivery-{older.pk}"')
    row = body[body.index(f'id="delivery-{newer.pk}"') : body.index(f'id="delivery-{older.pk}"')]
    assert newer.event.public_id in row and "sale.created" in row and 'data-status="failed"' in row
    assert "<code>500</code> HTTP 500" in row  # last status code and error
    attempts = row[row.index(f'data-attempts-for="{newer.pk}"') :]
    assert "3 attempts" in attempts
    assert attempts.index('data-attempt="1"') < attempts.index('data-attempt="3"')
    third = attempts[attempts.index('data-attempt="3"') :]
    assert "manual" in third[:200] and "1234" in third and "ReadTimeout" in third and "upstream broke 3" in third
    assert "manual" not in attempts[attempts.index('data-attempt="1"') : attempts.index('data-attempt="2"')]
    older_row = body[body.index(f'id="delivery-{older.pk}"') :]
    assert "lead.created" in older_row and 'data-status="succeeded"' in older_row and ">ok</pre>" in older_row


def test_it_filters_the_log_by_status_and_event_type(member_client, program, endpoint):
    failed_sale = delivery_make(endpoint, type="sale.created", status=DeliveryStatus.FAILED)
    ok_sale = delivery_make(endpoint, type="sale.created", status=DeliveryStatus.SUCCEEDED)
    failed_lead = delivery_make(endpoint, type="lead.created", status=DeliveryStatus.FAILED)
    pending = delivery_make(endpoint, type="lead.created", status=DeliveryStatus.PENDING, attempts=0)

    def shown(query: str) -> set[int]:
        body = page(member_client.get(log_url(program, endpoint, query)))
        return {d.pk for d in (failed_sale, ok_sale, failed_lead, pending) if f'id="delivery-{d.pk}"' in body}

    assert shown("?status=failed") == {failed_sale.pk, failed_lead.pk}
    assert shown("?status=pending") == {pending.pk}
    assert shown("?type=sale.created") == {failed_sale.pk, ok_sale.pk}
    assert shown("?status=failed&type=lead.created") == {failed_lead.pk}
    # Values that are no status or type filter nothing (the form only offers known ones).
    assert shown("?status=exploded&type=nope") == {failed_sale.pk, ok_sale.pk, failed_lead.pk, pending.pk}
    empty = page(member_client.get(log_url(program, endpoint, "?status=succeeded&type=lead.created")))
    assert "No deliveries match these filters." in empty


def test_it_pages_the_log_and_keeps_the_filters(member_client, program, endpoint):
    start = timezone.now() - timedelta(hours=1)
    made = [delivery_make(endpoint, at=start + timedelta(seconds=n)) for n in range(DELIVERIES_PER_PAGE + 1)]
    first = page(member_client.get(log_url(program, endpoint, "?status=failed")))
    assert f'id="delivery-{made[-1].pk}"' in first and f'id="delivery-{made[0].pk}"' not in first
    assert "?status=failed&amp;page=2" in first and f"{DELIVERIES_PER_PAGE + 1} total" in first
    second = page(member_client.get(log_url(program, endpoint, "?status=failed&page=2")))
    assert f'id="delivery-{made[0].pk}"' in second and f'id="delivery-{made[1].pk}"' not in second


def test_a_workspace_wide_endpoints_log_holds_every_programs_deliveries(member_client, program):
    wide = WebhookEndpointFactory(program=None, workspace=program.workspace)
    sibling = ProgramFactory(workspace=program.workspace)
    mine = delivery_make(wide, program_id=program.pk)
    theirs = delivery_make(wide, program_id=sibling.pk)
    body = page(member_client.get(log_url(program, wide)))
    assert f'id="delivery-{mine.pk}"' in body and f'id="delivery-{theirs.pk}"' in body


def test_the_log_costs_the_same_queries_however_many_deliveries(
    member_client, program, endpoint, django_assert_num_queries
):
    for n in range(DELIVERIES_PER_PAGE + 5):
        delivery_make(endpoint, type="sale.created" if n % 2 else "lead.created", attempts=1 + n % 3)
    # 1 session, 2 user, 3 program, 4 membership (program_for_action), 5 membership (the role, program_access),
    # 6 the endpoint (webhooks.selectors.endpoint_get), 7 the capped count (CappedPaginator), 8 the page's
    # deliveries with their events, 9 the page's attempts (webhooks.selectors.attempts_by_delivery).
    with django_assert_num_queries(9):
        response = member_client.get(log_url(program, endpoint, "?status=failed&page=2"))
    assert response.status_code == 200


def test_an_empty_log_costs_fewer_queries(member_client, program, endpoint, django_assert_num_queries):
    # 1-7 as above; the count is 0, so the page's slice is empty and Django reads no rows (8), nor attempts (9).
    with django_assert_num_queries(7):
        body = page(member_client.get(log_url(program, endpoint)))
    assert "No deliveries." in body


# --- resending one delivery ---------------------------------------------------------------------------------------


def resend_url(program, endpoint, delivery) -> str:
    return f"/programs/{program.pk}/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/resend"


def test_it_resends_a_delivery_and_comes_back_to_the_log_as_it_was(owner_client, program, endpoint):
    delivery = delivery_make(endpoint, status=DeliveryStatus.FAILED, attempts=2)

    response = owner_client.post(resend_url(program, endpoint, delivery), {"back": "?status=failed&page=1"})

    assert response.status_code == 302
    assert response["Location"] == log_url(program, endpoint, "?status=failed&page=1")
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.resent and delivery.scheduled_attempts == 0
    body = page(owner_client.get(response["Location"]))
    assert texts.DELIVERY_RESENT.format(event_id=delivery.event.public_id) in body


def test_the_resend_button_is_offered_to_roles_that_manage_on_deliveries_not_pending(
    owner_client, member_client, program, endpoint
):
    failed = delivery_make(endpoint, status=DeliveryStatus.FAILED)
    pending = delivery_make(endpoint, status=DeliveryStatus.PENDING, attempts=0)
    body = page(owner_client.get(log_url(program, endpoint)))
    assert f'data-resend="{failed.pk}"' in body and f'data-resend="{pending.pk}"' not in body
    assert 'id="resend-failed"' in body
    member_page = page(member_client.get(log_url(program, endpoint)))
    assert "data-resend=" not in member_page and 'id="resend-failed"' not in member_page


def test_resending_a_pending_delivery_says_so_and_changes_nothing(owner_client, program, endpoint):
    delivery = delivery_make(endpoint, status=DeliveryStatus.PENDING, attempts=1)
    response = owner_client.post(resend_url(program, endpoint, delivery), follow=True)
    assert texts.DELIVERY_ALREADY_PENDING.format(event_id=delivery.event.public_id) in page(response)
    delivery.refresh_from_db()
    assert not delivery.resent and delivery.scheduled_attempts == 1


def test_resending_to_a_disabled_endpoint_is_refused(owner_client, program):
    endpoint = WebhookEndpointFactory(program=program, enabled=False, disabled_at=timezone.now())
    delivery = delivery_make(endpoint, status=DeliveryStatus.FAILED)
    response = owner_client.post(resend_url(program, endpoint, delivery), follow=True)
    assert escape(messages.ENDPOINT_DISABLED_NO_RESEND) in page(response)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and not delivery.resent


def test_a_member_cannot_resend(member_client, program, endpoint):
    delivery = delivery_make(endpoint, status=DeliveryStatus.FAILED)
    assert member_client.post(resend_url(program, endpoint, delivery)).status_code == 403
    url = f"/programs/{program.pk}/webhooks/{endpoint.pk}/resend-failed"
    now = timezone.now()
    since, until = (
        (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
        (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
    )
    assert member_client.post(url, {"since": since, "until": until}).status_code == 403
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and not delivery.resent


def test_another_endpoints_delivery_is_404_under_this_endpoint(owner_client, program, endpoint):
    other = WebhookEndpointFactory(program=program)
    delivery = delivery_make(other, status=DeliveryStatus.FAILED)
    assert owner_client.post(resend_url(program, endpoint, delivery)).status_code == 404
    foreign = delivery_make(WebhookEndpointFactory(), status=DeliveryStatus.FAILED)
    assert owner_client.post(resend_url(program, foreign.endpoint, foreign)).status_code == 404
    assert not WebhookDelivery.objects.filter(resent=True).exists()


def test_resend_answers_post_only(owner_client, program, endpoint):
    delivery = delivery_make(endpoint)
    assert owner_client.get(resend_url(program, endpoint, delivery)).status_code == 405


# --- resending the failed deliveries of a period ------------------------------------------------------------------

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def resend_failed(client, program, endpoint, since: str, until: str, **extra):
    url = f"/programs/{program.pk}/webhooks/{endpoint.pk}/resend-failed"
    return client.post(url, {"since": since, "until": until, **extra})


def test_it_resends_the_failed_deliveries_of_a_period(owner_client, program, endpoint, frozen):
    inside = [delivery_make(endpoint, at=NOW - timedelta(hours=h)) for h in (1, 5)]
    before = delivery_make(endpoint, at=NOW - timedelta(days=2))
    succeeded = delivery_make(endpoint, status=DeliveryStatus.SUCCEEDED, at=NOW - timedelta(hours=2))

    response = resend_failed(owner_client, program, endpoint, "2026-11-19T12:00", "2026-11-20T12:01", back="?type=x")

    assert response["Location"] == log_url(program, endpoint, "?type=x")
    resent = set(WebhookDelivery.objects.filter(resent=True).values_list("pk", flat=True))
    assert resent == {d.pk for d in inside}
    assert set(WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING).values_list("pk", flat=True)) == resent
    before.refresh_from_db()
    succeeded.refresh_from_db()
    assert before.status == DeliveryStatus.FAILED and succeeded.status == DeliveryStatus.SUCCEEDED
    body = page(owner_client.get(response["Location"]))
    assert texts.FAILED_RESENT.format(count=2, since="2026-11-19 12:00", until="2026-11-20 12:01") in body


def test_a_period_with_no_failed_deliveries_says_nothing_was_resent(owner_client, program, endpoint, frozen):
    delivery_make(endpoint, at=NOW - timedelta(days=3))
    response = resend_failed(owner_client, program, endpoint, "2026-11-20T00:00", "2026-11-20T12:00")
    body = page(owner_client.get(response["Location"]))
    assert texts.FAILED_NONE.format(since="2026-11-20 00:00", until="2026-11-20 12:00") in body
    assert not WebhookDelivery.objects.filter(resent=True).exists()


@pytest.mark.parametrize(
    ("since", "until", "message"),
    [
        ("2026-11-20T12:00", "2026-11-20T12:00", messages.RESEND_PERIOD_INVALID),
        ("2026-11-21T00:00", "2026-11-20T00:00", messages.RESEND_PERIOD_INVALID),
        ("yesterday", "2026-11-20T00:00", texts.PERIOD_UNREADABLE),
        ("2026-11-19T00:00", "", texts.PERIOD_UNREADABLE),
        ("2026-13-40T00:00", "2026-11-20T00:00", texts.PERIOD_UNREADABLE),
    ],
)
def test_it_refuses_a_period_it_cannot_use(owner_client, program, endpoint, frozen, since, until, message):
    delivery_make(endpoint, at=NOW - timedelta(hours=1))
    response = resend_failed(owner_client, program, endpoint, since, until)
    assert escape(message) in page(owner_client.get(response["Location"]))
    assert not WebhookDelivery.objects.filter(resent=True).exists()


def test_resending_failed_deliveries_of_a_disabled_endpoint_is_refused(owner_client, program, frozen):
    endpoint = WebhookEndpointFactory(program=program, enabled=False, disabled_reason="The endpoint answered 410 Gone.")
    delivery_make(endpoint, at=NOW - timedelta(hours=1))
    response = resend_failed(owner_client, program, endpoint, "2026-11-19T00:00", "2026-11-21T00:00")
    assert escape(messages.ENDPOINT_DISABLED_NO_RESEND) in page(owner_client.get(response["Location"]))
    assert not WebhookDelivery.objects.filter(resent=True).exists()


def test_a_back_address_that_is_not_a_query_is_ignored(owner_client, program, endpoint, frozen):
    response = resend_failed(
        owner_client, program, endpoint, "2026-11-19T00:00", "2026-11-21T00:00", back="https://evil.example.com/"
    )
    assert response["Location"] == log_url(program, endpoint)


def test_a_receivers_response_is_shown_as_text_never_as_markup(member_client, program, endpoint):
    """The excerpt and error are whatever the receiver (or its network) sent back."""
    delivery = delivery_make(endpoint, attempts=1)
    delivery.attempt_log.update(response_excerpt="<script>alert(1)</script>", error="<b>boom</b>")
    body = page(member_client.get(log_url(program, endpoint)))
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<b>boom</b>" not in body and "&lt;b&gt;boom&lt;/b&gt;" in body
