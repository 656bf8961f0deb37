"""The request log (programs.calllog): every program API call leaves a row with its route, answer, key and a safe
excerpt of what it sent; rows are bounded and batched."""

from datetime import timedelta
from unittest import mock

import pytest
from django.db import DatabaseError
from django.utils import timezone

from programs import calllog
from programs.models import ApiCall
from tests.factories import ProgramFactory
from tests.helpers import bearer
from tests.tracking.sales import post_sale, sale_body

pytestmark = pytest.mark.django_db


def only_row() -> ApiCall:
    return ApiCall.objects.get()


def test_an_accepted_sale_is_logged_with_its_key_and_a_safe_excerpt(api_client, program, customer):
    response = post_sale(api_client, program, **sale_body(email="ada.lovelace@example.com", line_items=[{"x": 1}]))
    assert response.status_code == 200
    row = only_row()
    assert (row.program_id, row.method, row.route, row.status) == (program.pk, "POST", "track-sale", 200)
    assert (row.error_code, row.message, row.key_mode) == ("", "", "live")
    assert row.key_masked.endswith(program.raw_api_key[-4:]) and program.raw_api_key not in str(row.excerpt)
    assert row.excerpt == {
        "transaction_id": "txn_1",
        "customer_key": "user_1",
        "amount_cents": 10000,
        "email": "a***@example.com",
    }
    assert row.request_id == response["X-Request-ID"]


def test_a_refused_sale_is_logged_with_its_error(api_client, program):
    response = post_sale(api_client, program, **sale_body(currency="XYZ"))
    row = only_row()
    assert row.status == response.status_code == 422
    assert row.message == response.json()["error"]["message"]
    assert row.error_code == response.json()["error"].get("code", "")


@pytest.mark.parametrize("body", [b"{", b"\xff", b'{"a": 1, "a": 2}', b"[" * 2000])
def test_an_unparsed_bad_body_refused_earlier_is_logged_without_an_excerpt(api_client, settings, body):
    """A call refused before its body is read (here: rate limited) still has its body read for the log; a body
    that does not parse then leaves no excerpt and never turns the answer into a 500."""
    settings.RATELIMIT_SCALE = 1 / 60  # one click a minute
    click = {"path": "/api/v1/track/click", "content_type": "application/json", "REMOTE_ADDR": "203.0.113.9"}
    api_client.post(data=b"{}", **click)
    response = api_client.post(data=body, **click)
    assert response.status_code == 429
    row = ApiCall.objects.order_by("-id").first()
    assert (row.status, row.excerpt) == (429, {})


def test_a_test_key_is_logged_as_test(api_client, program, customer):
    post_sale(api_client, program, key=program.raw_test_api_key, **sale_body())
    assert only_row().key_mode == "test"


def test_an_unknown_key_is_logged_without_a_program(api_client, program):
    api_client.post("/api/v1/track/sale", sale_body(), format="json", **bearer("aff_unknown"))
    row = only_row()
    assert (row.program_id, row.status, row.key_masked) == (None, 401, "")


def test_a_click_is_logged_under_its_links_program(api_client, link):
    url = f"https://{link.program.domain}/?aff={link.short_link}"
    assert api_client.post("/api/v1/track/click", {"affiliate_url": url}, format="json").status_code == 200
    row = only_row()
    assert (row.program_id, row.route, row.excerpt["affiliate_url"]) == (link.program_id, "track-click", url)


def test_tracker_calls_are_logged_under_their_program(api_client, program):
    api_client.get("/api/v1/track/config", {"program_id": program.pk})
    api_client.post("/api/v1/track/visit", {"program_id": program.pk, "page_url": "https://x.test/"}, format="json")
    assert list(ApiCall.objects.order_by("pk").values_list("route", "program_id")) == [
        ("track-config", program.pk),
        ("track-visit", program.pk),
    ]


def test_a_log_failure_never_changes_the_answer(api_client, program, customer):
    with mock.patch.object(calllog, "_rows_write", side_effect=DatabaseError("down")):
        assert post_sale(api_client, program, **sale_body()).status_code == 200
    assert not ApiCall.objects.exists()


def test_rows_are_batched_until_the_batch_fills_or_is_flushed(api_client, program, settings):
    settings.REQUEST_LOG_BATCH = 3
    settings.REQUEST_LOG_FLUSH_SECONDS = 60
    api_client.get("/api/v1/track/config", {"program_id": program.pk})
    api_client.get("/api/v1/track/config", {"program_id": program.pk})
    assert ApiCall.objects.count() == 0
    api_client.get("/api/v1/track/config", {"program_id": program.pk})
    assert ApiCall.objects.count() == 3
    api_client.get("/api/v1/track/config", {"program_id": program.pk})
    assert calllog.api_calls_flush() == 1 and ApiCall.objects.count() == 4


def test_the_purge_keeps_the_retention_and_the_newest_rows_per_program(settings):
    settings.REQUEST_LOG_RETENTION_DAYS = 7
    settings.REQUEST_LOG_MAX_ROWS = 3
    busy, quiet = ProgramFactory.create(), ProgramFactory.create()
    now = timezone.now()
    old = ApiCall.objects.create(program=quiet, method="GET", route="r", status=200, created_at=now - timedelta(days=8))
    kept_quiet = ApiCall.objects.create(program=quiet, method="GET", route="r", status=200, created_at=now)
    busy_rows = [ApiCall.objects.create(program=busy, method="GET", route="r", status=200) for _ in range(5)]
    assert calllog.api_calls_purge(now=now) == 3
    assert set(ApiCall.objects.values_list("pk", flat=True)) == {kept_quiet.pk, *(r.pk for r in busy_rows[-3:])}
    assert not ApiCall.objects.filter(pk=old.pk).exists()


@pytest.mark.parametrize(
    ("value", "masked"), [("ada@example.com", "a***@example.com"), ("no-at-sign", "***"), ("@x.test", "***@x.test")]
)
def test_emails_are_masked(value, masked):
    assert calllog.email_mask(value) == masked
