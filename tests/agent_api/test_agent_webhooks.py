"""Outbound webhooks through the agent API: endpoints (list, create, get, change, delete, rotate the secret), their
deliveries and attempts, resending, and the webhook events of the key's programs. Every write is idempotent and
audited; a secret is answered once, by the write that made it."""

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from agent_api import messages
from agent_api.models import AgentAuditEntry, AgentIdempotencyRecord
from programs.models import AGENT_SCOPES, AgentKey
from tests.agent_api.conftest import agent_for
from tests.factories import MembershipFactory, ProgramFactory, WebhookEndpointFactory
from tests.helpers import platform_error
from webhooks import messages as webhook_messages
from webhooks.events import event_new
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.signing import secret_decrypt

pytestmark = pytest.mark.django_db

API = "/api/agent/v1/webhooks"
ENDPOINTS = f"{API}/endpoints"
EVENTS = f"{API}/events"
URL = "https://hooks.example.com/svc"


def post(agent, path: str, body: Any = None, **headers):
    return agent.client.post(path, {} if body is None else body, format="json", **headers)


def patch(agent, path: str, body: Any, **headers):
    return agent.client.patch(path, body, format="json", **headers)


def bad_request(message: str, code: str = "invalid_request") -> dict[str, Any]:
    return platform_error(400, "BadRequestError", message, code)


def not_found(message: str) -> dict[str, Any]:
    return platform_error(404, "NotFoundError", message, "not_found")


def event_for(program, *, type: str = "sale.created", created_at: datetime | None = None, **extra) -> WebhookEvent:
    """An event row as emission writes it, without fanning it out (the tests make the deliveries)."""
    event = event_new(program_id=program.pk, type=type, livemode=True, data={"amount_cents": 4900}, **extra)
    if created_at is not None:
        event.created_at = created_at
    event.save(force_insert=True)
    return event


def delivery_for(endpoint, *, status: str = DeliveryStatus.FAILED, event: WebhookEvent | None = None, **event_facts):
    program = endpoint.program or ProgramFactory.create(workspace=endpoint.workspace)
    event = event or event_for(program, **event_facts)
    return WebhookDelivery.objects.create(event=event, endpoint=endpoint, status=status, attempts=1)


def endpoint_shape(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": endpoint.pk,
        "program_id": endpoint.program_id,
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": endpoint.event_types,
        "enabled": endpoint.enabled,
        "include_test_events": endpoint.include_test_events,
        "secret_last4": endpoint.secret_last4,
        "previous_secret_expires_at": None,
        "disabled_at": None,
        "disabled_reason": "",
        "failing_since": None,
        "consecutive_failures": 0,
        "created_at": endpoint.created_at.isoformat(),
        "updated_at": endpoint.updated_at.isoformat(),
    }


@pytest.fixture
def endpoint(program):
    return WebhookEndpointFactory.create(program=program)


def test_it_adds_the_webhooks_scopes_and_the_key_command_issues_them(workspace):
    assert {"webhooks:read", "webhooks:write"} <= set(AGENT_SCOPES)
    out = StringIO()
    call_command(
        "agent_key",
        "issue",
        "--workspace",
        str(workspace.pk),
        "--name",
        "hooks",
        "--scope",
        "webhooks:write",
        stdout=out,
    )
    assert AgentKey.objects.get().scopes == ["webhooks:write"]


class TestAccess:
    def read_routes(self, endpoint, delivery) -> list[str]:
        return [
            ENDPOINTS,
            f"{ENDPOINTS}/{endpoint.pk}",
            f"{ENDPOINTS}/{endpoint.pk}/deliveries",
            f"{API}/deliveries/{delivery.pk}/attempts",
            EVENTS,
        ]

    def test_it_reads_with_webhooks_read_and_refuses_every_write_saying_which_scope(self, workspace, endpoint):
        delivery = delivery_for(endpoint)
        reader = agent_for(workspace, scopes=("webhooks:read",))
        for route in self.read_routes(endpoint, delivery):
            assert reader.get(route).status_code == 200, route
        writes = [
            post(reader, ENDPOINTS, {"url": URL, "event_types": ["*"]}),
            patch(reader, f"{ENDPOINTS}/{endpoint.pk}", {"enabled": False}),
            reader.client.delete(f"{ENDPOINTS}/{endpoint.pk}"),
            post(reader, f"{ENDPOINTS}/{endpoint.pk}/rotate-secret"),
            post(reader, f"{API}/deliveries/{delivery.pk}/resend"),
            post(reader, f"{ENDPOINTS}/{endpoint.pk}/resend-failed", {"since": "2026-01-01", "until": "2026-01-02"}),
        ]
        for response in writes:
            assert response.status_code == 403
            assert response.json() == platform_error(
                403,
                "ForbiddenError",
                messages.SCOPE_MISSING.format(scope="webhooks:write"),
                "missing_scope",
                {"scope": "webhooks:write"},
            )
        endpoint.refresh_from_db()
        assert endpoint.enabled and WebhookEndpoint.objects.count() == 1
        assert not AgentAuditEntry.objects.exists()

    def test_it_refuses_a_key_without_a_webhooks_scope_and_write_includes_read(self, workspace, endpoint):
        delivery = delivery_for(endpoint)
        others = agent_for(workspace, scopes=tuple(s for s in AGENT_SCOPES if not s.startswith("webhooks:")))
        writer = agent_for(workspace, scopes=("webhooks:write",))
        for route in self.read_routes(endpoint, delivery):
            refused = others.get(route)
            assert refused.status_code == 403
            assert refused.json()["error"]["message"] == "This agent API key lacks the webhooks:read scope"
            assert writer.get(route).status_code == 200

    def test_a_program_key_or_a_dashboard_session_never_authenticates(self, workspace, program, endpoint):
        with_program_key = APIClient()
        with_program_key.credentials(HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
        session = APIClient()
        session.force_login(MembershipFactory.create(workspace=workspace, role="owner").user)
        for client, message in ((with_program_key, messages.PROGRAM_KEY_REFUSED), (session, messages.KEY_REQUIRED)):
            for response in (
                client.get(ENDPOINTS),
                client.post(ENDPOINTS, {"url": URL, "event_types": ["*"]}, format="json"),
                client.post(f"{ENDPOINTS}/{endpoint.pk}/rotate-secret"),
            ):
                assert response.status_code == 401
                assert response.json()["error"]["message"] == message
        assert WebhookEndpoint.objects.count() == 1
        assert WebhookEndpoint.objects.get().secret_encrypted == endpoint.secret_encrypted


class TestCreate:
    def test_it_makes_a_program_endpoint_and_answers_its_secret_once(self, agent, workspace, program):
        response = post(
            agent,
            ENDPOINTS,
            {
                "program_id": program.pk,
                "url": URL,
                "event_types": ["sale.created", "commission.created", "sale.created"],
                "description": "CRM sync",
                "include_test_events": True,
            },
        )
        assert response.status_code == 201, response.content
        data = response.json()["data"]
        endpoint = WebhookEndpoint.objects.get()
        secret = data.pop("secret")
        assert secret.startswith("whsec_") and secret_decrypt(endpoint.secret_encrypted) == secret
        assert data == endpoint_shape(endpoint)
        assert (endpoint.workspace, endpoint.program, endpoint.event_types) == (
            workspace,
            program,
            ["sale.created", "commission.created"],
        )
        assert (endpoint.description, endpoint.enabled, endpoint.include_test_events) == ("CRM sync", True, True)
        assert data["secret_last4"] == secret[-4:]

        # No read shows it again.
        for read in (agent.get(ENDPOINTS), agent.get(f"{ENDPOINTS}/{endpoint.pk}")):
            assert read.status_code == 200
            assert secret not in read.content.decode() and "secret_encrypted" not in read.content.decode()
            assert "secret" not in (
                read.json()["data"][0] if isinstance(read.json()["data"], list) else read.json()["data"]
            )

        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id, entry.before) == (
            "webhook_endpoint.create",
            "webhook_endpoint",
            str(endpoint.pk),
            None,
        )
        assert entry.after == data
        assert secret not in json.dumps(entry.after)

    def test_it_makes_a_workspace_wide_endpoint_without_program_id(self, agent, workspace):
        response = post(agent, ENDPOINTS, {"url": URL, "event_types": ["*"]})
        assert response.status_code == 201
        endpoint = WebhookEndpoint.objects.get()
        assert (endpoint.workspace, endpoint.program_id, endpoint.event_types) == (workspace, None, ["*"])
        assert response.json()["data"]["program_id"] is None
        assert (endpoint.enabled, endpoint.include_test_events, endpoint.description) == (True, False, "")

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"event_types": ["*"]}, messages.WEBHOOK_URL_REQUIRED),
            ({"url": None, "event_types": ["*"]}, messages.WEBHOOK_URL_REQUIRED),
            ({"url": 7, "event_types": ["*"]}, webhook_messages.URL_INVALID),
            ({"url": "", "event_types": ["*"]}, webhook_messages.URL_INVALID),
            ({"url": "ftp://hooks.example.com/", "event_types": ["*"]}, webhook_messages.URL_INVALID),
            ({"url": "https://" + "h" * 2000 + ".example.com/", "event_types": ["*"]}, webhook_messages.URL_INVALID),
            ({"url": "https://user:pw@hooks.example.com/", "event_types": ["*"]}, webhook_messages.URL_CREDENTIALS),
            (
                {"url": "http://127.0.0.1:3000/hooks", "event_types": ["*"]},
                webhook_messages.URL_PRIVATE.format(address="127.0.0.1"),
            ),
            ({"url": URL}, webhook_messages.EVENT_TYPES_REQUIRED),
            ({"url": URL, "event_types": []}, webhook_messages.EVENT_TYPES_REQUIRED),
            ({"url": URL, "event_types": "sale.created"}, webhook_messages.EVENT_TYPES_REQUIRED),
            ({"url": URL, "event_types": [3]}, webhook_messages.EVENT_TYPES_REQUIRED),
            ({"url": URL, "event_types": ["sale.made"]}, webhook_messages.EVENT_TYPE_UNKNOWN.format(type="sale.made")),
            ({"url": URL, "event_types": ["*"], "enabled": "yes"}, "enabled must be true or false"),
            ({"url": URL, "event_types": ["*"], "include_test_events": 1}, "include_test_events must be true or false"),
            ({"url": URL, "event_types": ["*"], "description": "d" * 201}, messages.WEBHOOK_DESCRIPTION_INVALID),
            ({"url": URL, "event_types": ["*"], "program_id": "abc"}, messages.PROGRAM_ID_INVALID),
            ([{"url": URL, "event_types": ["*"]}], messages.BODY_NOT_OBJECT),
        ],
    )
    def test_it_refuses_bad_input_saying_why_and_makes_nothing(self, agent, settings, body, message):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        response = post(agent, ENDPOINTS, body)
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        assert not WebhookEndpoint.objects.exists()
        assert not AgentAuditEntry.objects.exists()

    def test_it_takes_a_private_url_when_the_setting_allows_it(self, agent, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
        response = post(agent, ENDPOINTS, {"url": "http://127.0.0.1:3000/hooks", "event_types": ["*"]})
        assert response.status_code == 201

    def test_a_program_of_another_workspace_is_not_found(self, agent):
        foreign = ProgramFactory.create()
        response = post(agent, ENDPOINTS, {"program_id": foreign.pk, "url": URL, "event_types": ["*"]})
        assert response.status_code == 404
        assert response.json() == not_found(messages.PROGRAM_NOT_FOUND)
        assert not WebhookEndpoint.objects.exists()

    def test_a_key_limited_to_programs_must_name_one_of_them(self, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        limited = agent_for(workspace, programs=(program,))
        refused = post(limited, ENDPOINTS, {"url": URL, "event_types": ["*"]})
        assert refused.json() == bad_request(messages.WEBHOOK_LIMITED_KEY_NEEDS_PROGRAM)
        assert post(limited, ENDPOINTS, {"program_id": other.pk, "url": URL, "event_types": ["*"]}).status_code == 404
        assert not WebhookEndpoint.objects.exists()
        made = post(limited, ENDPOINTS, {"program_id": program.pk, "url": URL, "event_types": ["*"]})
        assert made.status_code == 201 and made.json()["data"]["program_id"] == program.pk

    def test_a_retry_with_the_same_idempotency_key_answers_the_same_endpoint_and_secret(self, agent, program):
        body = {"program_id": program.pk, "url": URL, "event_types": ["lead.created"]}
        first = post(agent, ENDPOINTS, body, HTTP_IDEMPOTENCY_KEY="create-hook-1")
        again = post(agent, ENDPOINTS, body, HTTP_IDEMPOTENCY_KEY="create-hook-1")
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json()
        assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
        assert WebhookEndpoint.objects.count() == 1 and AgentAuditEntry.objects.count() == 1
        assert AgentAuditEntry.objects.get().idempotency_key == "create-hook-1"
        # The record that replays it keeps the secret encrypted, as the endpoint does.
        secret = first.json()["data"]["secret"]
        assert secret not in AgentIdempotencyRecord.objects.get().response_body

        conflict = post(agent, ENDPOINTS, {**body, "url": URL + "/other"}, HTTP_IDEMPOTENCY_KEY="create-hook-1")
        assert conflict.status_code == 409
        assert conflict.json()["error"]["code"] == "idempotency_conflict"
        assert WebhookEndpoint.objects.count() == 1


class TestList:
    def test_it_lists_the_workspace_endpoints_newest_first_in_pages(self, agent, workspace, program):
        older = WebhookEndpointFactory.create(program=program)
        wide = WebhookEndpointFactory.create(program=None, workspace=workspace)
        newer = WebhookEndpointFactory.create(program=ProgramFactory.create(workspace=workspace))
        WebhookEndpointFactory.create()  # another workspace's
        first = agent.get(ENDPOINTS, {"limit": 2}).json()
        assert [e["id"] for e in first["data"]] == [newer.pk, wide.pk]
        assert first["data"][1] == endpoint_shape(wide)
        second = agent.get(ENDPOINTS, {"limit": 2, "cursor": first["next_cursor"]}).json()
        assert [e["id"] for e in second["data"]] == [older.pk] and second["next_cursor"] is None
        only = agent.get(ENDPOINTS, {"program_id": program.pk}).json()["data"]
        assert [e["id"] for e in only] == [older.pk]

    def test_it_refuses_bad_filters(self, agent):
        assert agent.get(ENDPOINTS, {"program_id": "x"}).json() == bad_request(messages.PROGRAM_ID_FILTER_INVALID)
        assert agent.get(ENDPOINTS, {"limit": "0"}).json() == bad_request(messages.LIMIT_INVALID)
        assert agent.get(ENDPOINTS, {"cursor": "nope"}).json() == bad_request(messages.CURSOR_INVALID)
        foreign = ProgramFactory.create()
        assert agent.get(ENDPOINTS, {"program_id": foreign.pk}).json() == not_found(messages.PROGRAM_NOT_FOUND)

    def test_a_key_limited_to_programs_sees_only_their_endpoints(self, workspace, program):
        mine = WebhookEndpointFactory.create(program=program)
        WebhookEndpointFactory.create(program=None, workspace=workspace)
        WebhookEndpointFactory.create(program=ProgramFactory.create(workspace=workspace))
        limited = agent_for(workspace, programs=(program,))
        assert [e["id"] for e in limited.get(ENDPOINTS).json()["data"]] == [mine.pk]


class TestOneEndpoint:
    def test_it_answers_one_endpoint_with_the_previous_secrets_expiry_while_it_signs(self, agent, endpoint):
        assert agent.get(f"{ENDPOINTS}/{endpoint.pk}").json() == {"data": endpoint_shape(endpoint)}
        expires = timezone.now() + timedelta(hours=3)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(previous_secret_expires_at=expires)
        assert (
            agent.get(f"{ENDPOINTS}/{endpoint.pk}").json()["data"]["previous_secret_expires_at"] == expires.isoformat()
        )
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(previous_secret_expires_at=timezone.now())
        assert agent.get(f"{ENDPOINTS}/{endpoint.pk}").json()["data"]["previous_secret_expires_at"] is None

    def test_it_changes_only_the_fields_sent_and_audits_before_and_after(self, agent, endpoint):
        before = endpoint_shape(endpoint)
        response = patch(
            agent,
            f"{ENDPOINTS}/{endpoint.pk}",
            {"url": URL + "/v2", "event_types": ["refund.applied"], "enabled": False, "description": "paused"},
        )
        assert response.status_code == 200, response.content
        endpoint.refresh_from_db()
        assert (endpoint.url, endpoint.event_types, endpoint.enabled, endpoint.description) == (
            URL + "/v2",
            ["refund.applied"],
            False,
            "paused",
        )
        assert endpoint.disabled_at is not None and endpoint.include_test_events is False
        data = response.json()["data"]
        assert data["disabled_at"] == endpoint.disabled_at.isoformat() and "secret" not in data
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_id, entry.before, entry.after) == (
            "webhook_endpoint.update",
            str(endpoint.pk),
            before,
            data,
        )

    def test_enabling_a_disabled_endpoint_clears_why_it_was_disabled(self, agent, endpoint):
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            enabled=False,
            disabled_at=timezone.now(),
            disabled_reason="The receiver answered 410 Gone",
            failing_since=timezone.now(),
            consecutive_failures=9,
        )
        data = patch(agent, f"{ENDPOINTS}/{endpoint.pk}", {"enabled": True}).json()["data"]
        assert (data["enabled"], data["disabled_at"], data["disabled_reason"]) == (True, None, "")
        assert (data["failing_since"], data["consecutive_failures"]) == (None, 0)

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, messages.WEBHOOK_PATCH_EMPTY),
            ({"url": "not a url"}, webhook_messages.URL_INVALID),
            ({"url": None}, messages.WEBHOOK_URL_REQUIRED),
            ({"event_types": []}, webhook_messages.EVENT_TYPES_REQUIRED),
            ({"event_types": ["sale.created", "nope"]}, webhook_messages.EVENT_TYPE_UNKNOWN.format(type="nope")),
            ({"enabled": None}, "enabled must be true or false"),
            ({"description": 5}, messages.WEBHOOK_DESCRIPTION_INVALID),
            ("enabled", messages.BODY_NOT_OBJECT),
        ],
    )
    def test_it_refuses_a_bad_change_and_changes_nothing(self, agent, endpoint, body, message):
        before = endpoint_shape(endpoint)
        response = patch(agent, f"{ENDPOINTS}/{endpoint.pk}", body)
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        endpoint.refresh_from_db()
        assert endpoint_shape(endpoint) == before
        assert not AgentAuditEntry.objects.exists()

    def test_it_deletes_an_endpoint_with_its_deliveries(self, agent, endpoint):
        delivery_for(endpoint)
        before = endpoint_shape(endpoint)
        response = agent.client.delete(f"{ENDPOINTS}/{endpoint.pk}")
        assert response.status_code == 200
        assert response.json() == {"data": {"id": endpoint.pk, "deleted": True}}
        assert not WebhookEndpoint.objects.exists() and not WebhookDelivery.objects.exists()
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_id, entry.before, entry.after) == (
            "webhook_endpoint.delete",
            str(endpoint.pk),
            before,
            None,
        )
        again = agent.client.delete(f"{ENDPOINTS}/{endpoint.pk}")
        assert again.status_code == 404 and again.json() == not_found(messages.WEBHOOK_ENDPOINT_NOT_FOUND)


class TestRotate:
    def test_it_answers_the_new_secret_once_and_the_old_one_signs_for_the_overlap(self, agent, endpoint, settings):
        settings.WEBHOOK_ROTATION_OVERLAP_HOURS = 24
        old = endpoint.secret_for_tests
        started = timezone.now()
        response = post(agent, f"{ENDPOINTS}/{endpoint.pk}/rotate-secret")
        assert response.status_code == 200, response.content
        data = response.json()["data"]
        secret = data.pop("secret")
        endpoint.refresh_from_db()
        assert secret.startswith("whsec_") and secret != old
        assert secret_decrypt(endpoint.secret_encrypted) == secret
        assert secret_decrypt(endpoint.previous_secret_encrypted) == old
        expires = datetime.fromisoformat(data["previous_secret_expires_at"])
        assert expires == endpoint.previous_secret_expires_at
        assert started + timedelta(hours=24) <= expires <= timezone.now() + timedelta(hours=24)
        assert data["secret_last4"] == secret[-4:]

        read = agent.get(f"{ENDPOINTS}/{endpoint.pk}")
        assert read.json()["data"] == data and secret not in read.content.decode()
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.after) == ("webhook_endpoint.rotate_secret", data)
        assert entry.before is not None and entry.before["previous_secret_expires_at"] is None
        assert secret not in json.dumps([entry.before, entry.after]) and old not in json.dumps(entry.before)

    def test_a_retried_rotation_rotates_once_and_answers_the_same_secret(self, agent, endpoint):
        path = f"{ENDPOINTS}/{endpoint.pk}/rotate-secret"
        first = post(agent, path, HTTP_IDEMPOTENCY_KEY="rotate-1")
        again = post(agent, path, HTTP_IDEMPOTENCY_KEY="rotate-1")
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        endpoint.refresh_from_db()
        assert secret_decrypt(endpoint.secret_encrypted) == first.json()["data"]["secret"]
        assert secret_decrypt(endpoint.previous_secret_encrypted) == endpoint.secret_for_tests
        assert AgentAuditEntry.objects.count() == 1
        assert first.json()["data"]["secret"] not in AgentIdempotencyRecord.objects.get().response_body


class TestDeliveries:
    def test_it_lists_an_endpoints_deliveries_with_filters_in_pages(self, agent, endpoint, program):
        failed_sale = delivery_for(endpoint, type="sale.created")
        ok_lead = delivery_for(endpoint, status=DeliveryStatus.SUCCEEDED, type="lead.created")
        pending_sale = delivery_for(endpoint, status=DeliveryStatus.PENDING, type="sale.created")
        delivery_for(WebhookEndpointFactory.create(program=program))  # another endpoint's
        path = f"{ENDPOINTS}/{endpoint.pk}/deliveries"

        listed = agent.get(path).json()
        assert [d["id"] for d in listed["data"]] == [pending_sale.pk, ok_lead.pk, failed_sale.pk]
        event = failed_sale.event
        assert listed["data"][2] == {
            "id": failed_sale.pk,
            "endpoint_id": endpoint.pk,
            "event_id": event.public_id,
            "event_type": "sale.created",
            "livemode": True,
            "event_created_at": event.created_at.isoformat(),
            "status": "failed",
            "attempts": 1,
            "next_attempt_at": None,
            "last_status_code": None,
            "last_error": "",
            "delivered_at": None,
            "created_at": failed_sale.created_at.isoformat(),
            "updated_at": failed_sale.updated_at.isoformat(),
        }
        assert [d["id"] for d in agent.get(path, {"status": "failed"}).json()["data"]] == [failed_sale.pk]
        sales = agent.get(path, {"event_type": "sale.created"}).json()["data"]
        assert [d["id"] for d in sales] == [pending_sale.pk, failed_sale.pk]
        page = agent.get(path, {"limit": 2}).json()
        assert [d["id"] for d in page["data"]] == [pending_sale.pk, ok_lead.pk]
        rest = agent.get(path, {"limit": 2, "cursor": page["next_cursor"]}).json()
        assert [d["id"] for d in rest["data"]] == [failed_sale.pk] and rest["next_cursor"] is None

    def test_it_refuses_bad_delivery_filters(self, agent, endpoint):
        path = f"{ENDPOINTS}/{endpoint.pk}/deliveries"
        assert agent.get(path, {"status": "lost"}).json() == bad_request(messages.WEBHOOK_DELIVERY_STATUS_INVALID)
        assert agent.get(path, {"event_type": "sale"}).json() == bad_request(
            "event_type must be one of: lead.created, sale.created, commission.created, commission.approved, "
            "commission.refunded, commission.reversed, refund.applied, partner.enrolled, partner.group_changed, "
            "payout.created, payout.paid, payout.failed"
        )

    def test_it_lists_a_deliverys_attempts_newest_first(self, agent, endpoint):
        delivery = delivery_for(endpoint)
        first = WebhookAttempt.objects.create(
            delivery=delivery, number=1, status_code=500, latency_ms=120, response_excerpt="oops", error=""
        )
        second = WebhookAttempt.objects.create(
            delivery=delivery, number=2, manual=True, status_code=200, latency_ms=40, succeeded=True
        )
        WebhookAttempt.objects.create(delivery=delivery_for(endpoint), number=1)  # another delivery's
        listed = agent.get(f"{API}/deliveries/{delivery.pk}/attempts").json()
        assert [a["id"] for a in listed["data"]] == [second.pk, first.pk] and listed["next_cursor"] is None
        assert listed["data"][1] == {
            "id": first.pk,
            "number": 1,
            "manual": False,
            "started_at": first.started_at.isoformat(),
            "status_code": 500,
            "latency_ms": 120,
            "succeeded": False,
            "response_excerpt": "oops",
            "error": "",
            "in_flight": False,
        }
        page = agent.get(f"{API}/deliveries/{delivery.pk}/attempts", {"limit": 1}).json()
        assert [a["id"] for a in page["data"]] == [second.pk] and page["next_cursor"]


class TestResend:
    def test_it_resends_a_failed_delivery(self, agent, endpoint):
        delivery = delivery_for(endpoint)
        before = agent.get(f"{ENDPOINTS}/{endpoint.pk}/deliveries").json()["data"][0]
        response = post(agent, f"{API}/deliveries/{delivery.pk}/resend")
        assert response.status_code == 200, response.content
        delivery.refresh_from_db()
        assert (delivery.status, delivery.resent, delivery.scheduled_attempts) == ("pending", True, 0)
        data = response.json()["data"]
        assert data["queued"] is True
        assert data["delivery"]["status"] == "pending"
        assert data["delivery"]["next_attempt_at"] == delivery.next_attempt_at.isoformat()
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id, entry.before, entry.after) == (
            "webhook_delivery.resend",
            "webhook_delivery",
            str(delivery.pk),
            before,
            data["delivery"],
        )

    def test_a_pending_delivery_is_left_as_it_is(self, agent, endpoint):
        delivery = delivery_for(endpoint, status=DeliveryStatus.PENDING)
        data = post(agent, f"{API}/deliveries/{delivery.pk}/resend").json()["data"]
        assert data["queued"] is False
        delivery.refresh_from_db()
        assert delivery.resent is False

    def test_it_refuses_to_resend_to_a_disabled_endpoint_and_changes_nothing(self, agent, endpoint):
        delivery = delivery_for(endpoint)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
        for response in (
            post(agent, f"{API}/deliveries/{delivery.pk}/resend"),
            post(agent, f"{ENDPOINTS}/{endpoint.pk}/resend-failed", {"since": "2020-01-01", "until": "2099-01-01"}),
        ):
            assert response.status_code == 409
            assert response.json() == platform_error(
                409, "ConflictError", webhook_messages.ENDPOINT_DISABLED_NO_RESEND, "webhook_endpoint_disabled"
            )
        delivery.refresh_from_db()
        assert (delivery.status, delivery.resent) == ("failed", False)
        assert not AgentAuditEntry.objects.exists()

    def test_it_resends_the_failed_deliveries_of_a_period(self, agent, endpoint, program):
        day = datetime(2026, 3, 10, tzinfo=UTC)
        early = delivery_for(endpoint, created_at=day)
        late = delivery_for(endpoint, created_at=day + timedelta(hours=23, minutes=59))
        next_day = delivery_for(endpoint, created_at=day + timedelta(days=1))
        succeeded = delivery_for(endpoint, status=DeliveryStatus.SUCCEEDED, created_at=day + timedelta(hours=1))
        response = post(
            agent, f"{ENDPOINTS}/{endpoint.pk}/resend-failed", {"since": "2026-03-10", "until": "2026-03-10"}
        )
        assert response.status_code == 200, response.content
        assert response.json() == {
            "data": {
                "endpoint_id": endpoint.pk,
                "since": "2026-03-10T00:00:00+00:00",
                "until": "2026-03-11T00:00:00+00:00",
                "queued": 2,
            }
        }
        statuses = {d.pk: (d.status, d.resent) for d in WebhookDelivery.objects.all()}
        assert statuses[early.pk] == statuses[late.pk] == ("pending", True)
        assert statuses[next_day.pk] == ("failed", False) and statuses[succeeded.pk] == ("succeeded", False)
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_id, entry.after) == (
            "webhook_endpoint.resend_failed",
            str(endpoint.pk),
            response.json()["data"],
        )

        # A time as until is exclusive.
        exact = post(
            agent,
            f"{ENDPOINTS}/{endpoint.pk}/resend-failed",
            {"since": "2026-03-11T00:00:00Z", "until": "2026-03-11T00:00:01Z"},
        )
        assert exact.json()["data"]["queued"] == 1

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"until": "2026-03-10"}, messages.WEBHOOK_SINCE_INVALID),
            ({"since": "2026-03-10"}, messages.WEBHOOK_UNTIL_INVALID),
            ({"since": "yesterday", "until": "2026-03-10"}, messages.WEBHOOK_SINCE_INVALID),
            ({"since": "2026-03-10", "until": None}, messages.WEBHOOK_UNTIL_INVALID),
            (
                {"since": "2026-03-10T12:00:00Z", "until": "2026-03-10T12:00:00Z"},
                webhook_messages.RESEND_PERIOD_INVALID,
            ),
            ({"since": "2026-03-11", "until": "2026-03-10"}, webhook_messages.RESEND_PERIOD_INVALID),
        ],
    )
    def test_it_refuses_a_bad_period_and_resends_nothing(self, agent, endpoint, body, message):
        delivery = delivery_for(endpoint, created_at=datetime(2026, 3, 10, 6, tzinfo=UTC))
        response = post(agent, f"{ENDPOINTS}/{endpoint.pk}/resend-failed", body)
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        delivery.refresh_from_db()
        assert delivery.status == "failed" and not AgentAuditEntry.objects.exists()


class TestWebhookEvents:
    def test_it_lists_the_events_of_the_key_programs_with_filters_in_pages(self, agent, workspace, program):
        other_program = ProgramFactory.create(workspace=workspace)
        lead = event_for(program, type="lead.created")
        sale = event_for(program, type="sale.created")
        trigger = event_for(other_program, type="sale.created", synthetic=True)
        event_for(ProgramFactory.create(), type="sale.created")  # another workspace's

        listed = agent.get(EVENTS).json()
        assert [e["id"] for e in listed["data"]] == [trigger.public_id, sale.public_id, lead.public_id]
        assert listed["data"][1] == {**sale.payload(), "synthetic": False}
        assert listed["data"][0]["synthetic"] is True
        by_program = agent.get(EVENTS, {"program_id": program.pk}).json()["data"]
        assert [e["id"] for e in by_program] == [sale.public_id, lead.public_id]
        sales = agent.get(EVENTS, {"program_id": program.pk, "type": "sale.created"}).json()["data"]
        assert [e["id"] for e in sales] == [sale.public_id]
        page = agent.get(EVENTS, {"limit": 2}).json()
        rest = agent.get(EVENTS, {"limit": 2, "cursor": page["next_cursor"]}).json()
        assert [e["id"] for e in rest["data"]] == [lead.public_id] and rest["next_cursor"] is None

        limited = agent_for(workspace, programs=(other_program,))
        assert [e["id"] for e in limited.get(EVENTS).json()["data"]] == [trigger.public_id]

    def test_it_refuses_bad_event_filters(self, agent):
        assert (
            agent.get(EVENTS, {"type": "sale"})
            .json()["error"]["message"]
            .startswith("type must be one of: lead.created, sale.created")
        )
        assert agent.get(EVENTS, {"program_id": "-1"}).json() == bad_request(messages.PROGRAM_ID_FILTER_INVALID)
        assert agent.get(EVENTS, {"program_id": ProgramFactory.create().pk}).json() == not_found(
            messages.PROGRAM_NOT_FOUND
        )


class TestIsolation:
    def test_another_workspaces_endpoints_and_deliveries_are_not_found_and_not_changed(self, agent, workspace):
        foreign = WebhookEndpointFactory.create()
        delivery = delivery_for(foreign)
        WebhookAttempt.objects.create(delivery=delivery, number=1)
        foreign_shape = endpoint_shape(foreign)
        endpoint_routes = [
            agent.get(f"{ENDPOINTS}/{foreign.pk}"),
            patch(agent, f"{ENDPOINTS}/{foreign.pk}", {"enabled": False}),
            agent.client.delete(f"{ENDPOINTS}/{foreign.pk}"),
            post(agent, f"{ENDPOINTS}/{foreign.pk}/rotate-secret"),
            agent.get(f"{ENDPOINTS}/{foreign.pk}/deliveries"),
            post(agent, f"{ENDPOINTS}/{foreign.pk}/resend-failed", {"since": "2020-01-01", "until": "2099-01-01"}),
            agent.get(f"{ENDPOINTS}/not-a-number"),
        ]
        for response in endpoint_routes:
            assert response.status_code == 404
            assert response.json() == not_found(messages.WEBHOOK_ENDPOINT_NOT_FOUND)
        for response in (
            agent.get(f"{API}/deliveries/{delivery.pk}/attempts"),
            post(agent, f"{API}/deliveries/{delivery.pk}/resend"),
            agent.get(f"{API}/deliveries/99999999999999999999/attempts"),
        ):
            assert response.status_code == 404
            assert response.json() == not_found(messages.WEBHOOK_DELIVERY_NOT_FOUND)
        assert agent.get(ENDPOINTS).json()["data"] == []
        assert agent.get(EVENTS).json()["data"] == []
        foreign.refresh_from_db()
        delivery.refresh_from_db()
        assert endpoint_shape(foreign) == foreign_shape
        assert secret_decrypt(foreign.secret_encrypted) == foreign.secret_for_tests
        assert (delivery.status, delivery.resent) == ("failed", False)
        assert not AgentAuditEntry.objects.exists()

    def test_a_key_limited_to_programs_cannot_reach_a_workspace_wide_endpoint(self, workspace, program):
        wide = WebhookEndpointFactory.create(program=None, workspace=workspace)
        limited = agent_for(workspace, programs=(program,))
        assert limited.get(f"{ENDPOINTS}/{wide.pk}").status_code == 404
        assert post(limited, f"{ENDPOINTS}/{wide.pk}/rotate-secret").status_code == 404
        assert agent_for(workspace).get(f"{ENDPOINTS}/{wide.pk}").status_code == 200


def test_a_resend_queues_the_send_once_the_write_commits(agent, endpoint, django_capture_on_commit_callbacks):
    delivery = delivery_for(endpoint)
    others = [delivery_for(endpoint, created_at=datetime(2026, 3, 10, 6, tzinfo=UTC)) for _ in range(2)]
    with django_capture_on_commit_callbacks() as one:
        post(agent, f"{API}/deliveries/{delivery.pk}/resend")
    with django_capture_on_commit_callbacks() as period:
        post(agent, f"{ENDPOINTS}/{endpoint.pk}/resend-failed", {"since": "2026-03-10", "until": "2026-03-10"})
    with django_capture_on_commit_callbacks() as nothing:
        post(agent, f"{ENDPOINTS}/{endpoint.pk}/resend-failed", {"since": "2020-03-10", "until": "2020-03-10"})
    assert (len(one), len(period), len(nothing)) == (1, 1, 0)
    assert all(d.status == "pending" for d in WebhookDelivery.objects.filter(pk__in=[o.pk for o in others]))


@pytest.mark.parametrize(
    "route", ["endpoints", "deliveries", "attempts", "events"], ids=["endpoints", "deliveries", "attempts", "events"]
)
def test_a_list_costs_the_same_queries_whatever_its_length(agent, workspace, program, route):
    endpoint = WebhookEndpointFactory.create(program=program)
    delivery = delivery_for(endpoint)
    paths = {
        "endpoints": ENDPOINTS,
        "deliveries": f"{ENDPOINTS}/{endpoint.pk}/deliveries",
        "attempts": f"{API}/deliveries/{delivery.pk}/attempts",
        "events": EVENTS,
    }

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert agent.get(paths[route]).status_code == 200
        return len(captured)

    agent.get("/api/agent/v1/me")  # the key's first use writes last_used_at; later ones within a minute do not
    few = queries()
    for number in range(1, 6):
        WebhookEndpointFactory.create(program=program)
        delivery_for(endpoint)
        WebhookAttempt.objects.create(delivery=delivery, number=number)
    assert queries() == few
