"""The request log keeps no key and no full email (docs/dashboard-api.md): whatever an allow-listed field holds is
redacted before the row is written, refused calls included, and the Logs page, the dashboard's logs route and the
CLI's show the masked form only. Rows written before that are cleaned by migration 0009."""

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from cli_api.models import LOGIN_TOKEN_PREFIX
from core import messages
from programs.keys import AGENT_KEY_PREFIX, generate_key
from programs.models import ApiCall, Membership, Role
from tests.factories import CustomerFactory, MembershipFactory
from tests.helpers import bearer
from tests.tracking.sales import REFUND_URL, post_sale, sale_body
from webhooks.signing import secret_generate

pytestmark = pytest.mark.django_db

EMAIL, MASKED_EMAIL = "jane@corp.example", "j***@corp.example"
CARD, MASKED_CARD = "4242 4242 4242 4242", "**** **** **** 4242"
redaction_migration = importlib.import_module("programs.migrations.0009_api_call_log_redacted")


@pytest.fixture
def leaks(program) -> dict[str, str]:
    """One of each: the program's live key and what the other apps issue, made by their own generators."""
    return {
        "email": EMAIL,
        "live key": program.raw_api_key,
        "agent key": generate_key(AGENT_KEY_PREFIX),
        "CLI token": generate_key(LOGIN_TOKEN_PREFIX),
        "webhook secret": secret_generate(),
        "card": CARD,
    }


def shown_anywhere(program) -> str:
    """Everything a member and the CLI can read of the log: the Logs page, the dashboard's route, svc logs' route."""
    member = Client()
    membership: Membership = MembershipFactory.create(workspace=program.workspace, role=Role.MEMBER)
    member.force_login(membership.user)
    page = member.get(f"/programs/{program.pk}/logs")
    dashboard = member.get(f"/api/tracking/logs/{program.pk}")
    cli = APIClient().get("/api/v1/cli/logs", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
    assert page.status_code == dashboard.status_code == cli.status_code == 200
    return "\n".join(response.content.decode() for response in (page, dashboard, cli))


def assert_none_shown(text: str, leaks: dict[str, str]) -> None:
    for kind, value in leaks.items():
        assert value not in text, kind


def test_a_sale_whose_customer_key_is_an_email_keeps_it_masked(api_client, program, link):
    CustomerFactory(link=link, customer_key=EMAIL)
    assert post_sale(api_client, program, **sale_body(customer_key=EMAIL)).status_code == 200
    row = ApiCall.objects.get()
    assert row.excerpt["customer_key"] == MASKED_EMAIL
    shown = shown_anywhere(program)
    assert EMAIL not in shown and MASKED_EMAIL in shown


def test_a_refused_refund_quoting_secrets_in_its_reason_keeps_none_of_them(api_client, program, leaks):
    reason = " ".join(leaks.values())
    response = api_client.post(
        REFUND_URL, {"transaction_id": "txn_1", "reason": reason}, format="json", **bearer(program.raw_api_key)
    )
    assert response.status_code == 400 and response.json()["error"]["message"] == messages.REFUND_REASON_INVALID
    row = ApiCall.objects.get()
    assert row.excerpt["reason"] == (
        f"{MASKED_EMAIL} aff_[redacted] agt_[redacted] svcl_[redacted] whsec_[redacted] {MASKED_CARD}"
    )
    shown = shown_anywhere(program)
    assert_none_shown(shown, leaks)
    assert MASKED_EMAIL in shown and MASKED_CARD in shown


def test_every_kept_field_is_redacted_not_only_free_text(api_client, program, leaks):
    """Ids, URLs and numbers are kept as sent unless they hold a secret: an integrator pasting a key where an id
    goes, a page URL with the visitor's email in its query, a card number sent as a customer key."""
    body = {
        "transaction_id": leaks["agent key"],
        "customer_key": 4242424242424242,
        "refund_id": leaks["CLI token"],
        "click_id": f"https://shop.example/thanks?email={EMAIL.replace('@', '%40')}",
        "currency": leaks["webhook secret"],
    }
    post_sale(api_client, program, **body)
    row = ApiCall.objects.get()
    assert row.excerpt == {
        "transaction_id": "agt_[redacted]",
        "customer_key": "************4242",
        "refund_id": "svcl_[redacted]",
        "click_id": f"https://shop.example/thanks?email={MASKED_EMAIL}",
        "currency": "whsec_[redacted]",
    }
    assert_none_shown(shown_anywhere(program), leaks)


def test_a_get_query_with_a_key_in_it_is_redacted(api_client, program, leaks):
    api_client.get("/api/v1/track/config", {"program_id": program.pk, "session_id": leaks["live key"]})
    row = ApiCall.objects.get()
    assert row.excerpt == {"program_id": str(program.pk), "session_id": "aff_[redacted]"}


def test_a_long_value_is_redacted_before_it_is_cut(api_client, program):
    """Cut first, the 200th character could fall inside an address and leave its local part unmasked."""
    reason = "x" * 195 + " " + EMAIL
    api_client.post(REFUND_URL, {"transaction_id": "t", "reason": reason}, format="json", **bearer(program.raw_api_key))
    kept = ApiCall.objects.get().excerpt["reason"]
    assert len(kept) == 200 and "jane" not in kept and kept.endswith(" j***")


def test_the_migration_cleans_rows_written_before_the_redaction(program, leaks, monkeypatch):
    monkeypatch.setattr(redaction_migration, "BATCH", 2)  # several batches
    old = ApiCall.objects.create(
        program=program,
        method="POST",
        route="track-refund",
        status=400,
        message=f"reason was {EMAIL}",
        request_id=leaks["CLI token"],
        excerpt={"customer_key": EMAIL, "reason": " ".join(leaks.values()), "nested": {"key": [leaks["live key"]]}},
    )
    clean = {"transaction_id": "txn_1", "customer_key": "user_1", "amount_cents": 4900, "email": "a***@x.io"}
    untouched = [
        ApiCall.objects.create(program=program, method="POST", route="track-sale", status=200, excerpt=clean)
        for _ in range(4)
    ]

    changed = redaction_migration.api_call_rows_redact(apps, SimpleNamespace(connection=connection))

    assert changed == 1
    old.refresh_from_db()
    assert old.excerpt == {
        "customer_key": MASKED_EMAIL,
        "reason": f"{MASKED_EMAIL} aff_[redacted] agt_[redacted] svcl_[redacted] whsec_[redacted] {MASKED_CARD}",
        "nested": {"key": ["aff_[redacted]"]},
    }
    assert (old.message, old.request_id) == (f"reason was {MASKED_EMAIL}", "svcl_[redacted]")
    assert all(ApiCall.objects.get(pk=row.pk).excerpt == clean for row in untouched)
    assert_none_shown(shown_anywhere(program), leaks)
    assert redaction_migration.api_call_rows_redact(apps, SimpleNamespace(connection=connection)) == 0
