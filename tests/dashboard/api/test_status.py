"""GET /api/tracking/status/:programId"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from programs.models import ProgramKey, Role
from programs.services import program_key_mark_rotation
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent, LeadEvent, ProcessorEvent

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


def status(client, program):
    return client.get(f"/api/tracking/status/{program.pk}")


@pytest.fixture
def program():
    return ProgramFactory(
        name="Shop",
        domain="shop.example.com",
        commission_type="recurring_percent",
        commission_rate=Decimal("12.5"),
        duration_months=12,
        cookie_duration=45,
        hold_days=14,
        lead_auth="server_required",
    )


def test_it_answers_the_program_role_actions_and_latest_events(sign_in, program):
    link = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link)
    ClickEvent.objects.create(program=program, customer=customer, click_id="c1", click_timestamp=T0)
    ClickEvent.objects.create(program=program, customer=customer, click_id="c1", click_timestamp=T0 + timedelta(1))
    # Test events never count as the latest.
    ClickEvent.objects.create(program=program, click_id="t", click_timestamp=T0 + timedelta(5), is_test=True)
    LeadEvent.objects.create(program=program, customer=customer, click_id="c1", lead_timestamp=T0 + timedelta(2))
    SaleFactory(customer=customer, sale_date=T0 + timedelta(3))
    SaleFactory(customer=customer, sale_date=T0 + timedelta(9), is_test=True)
    live_key = ProgramKey.objects.get(program=program, mode="live")

    response = status(sign_in(program, Role.ADMIN), program)

    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "program": {
                "id": program.pk,
                "name": "Shop",
                "domain": "shop.example.com",
                "commission_type": "recurring_percent",
                "commission_rate": 12.5,
                "duration_months": 12,
                "cookie_window_days": 45,
                "hold_days": 14,
                "lead_auth": "server_required",
                "api_token_masked": live_key.masked,
                "key_rotation": {"flagged": False, "marked_at": None, "deadline": None, "retired": False},
                "stripe": {
                    "connected": False,
                    "account_id": "",
                    "connected_at": None,
                    "last_event_at": None,
                    "last_event_type": None,
                },
            },
            "role": "admin",
            "actions": ["program:manage", "tracking:list", "tracking:test"],
            "last_event_at": {
                "click": (T0 + timedelta(1)).isoformat(),
                "lead": (T0 + timedelta(2)).isoformat(),
                "sale": (T0 + timedelta(3)).isoformat(),
            },
        }
    }
    assert live_key.masked.endswith(program.raw_api_key[-4:])
    assert program.raw_api_key not in response.content.decode()


def test_the_latest_click_is_the_latest_counted_one(owner, program):
    ClickEvent.objects.create(program=program, click_id="c1", click_timestamp=T0)
    for n, traffic in enumerate(("duplicate", "bot", "prefetch"), start=1):
        ClickEvent.objects.create(program=program, click_id=f"u{n}", click_timestamp=T0 + timedelta(n), traffic=traffic)

    assert status(owner, program).json()["data"]["last_event_at"]["click"] == T0.isoformat()


def test_a_whole_rate_is_an_integer(sign_in):
    program = ProgramFactory(commission_rate=Decimal("20"))
    rate = status(sign_in(program), program).json()["data"]["program"]["commission_rate"]
    assert rate == 20 and isinstance(rate, int)


@pytest.mark.parametrize(
    ("role", "actions"),
    [
        (Role.OWNER, ["program:manage", "program:regenerate_key", "tracking:list", "tracking:test"]),
        (Role.MEMBER, ["tracking:list"]),
    ],
)
def test_it_lists_the_roles_actions(sign_in, program, role, actions):
    data = status(sign_in(program, role), program).json()["data"]
    assert (data["role"], data["actions"]) == (role, actions)


def test_it_shows_a_flagged_then_retired_key(owner, program, time_machine):
    time_machine.move_to(T0, tick=False)
    key = ProgramKey.objects.get(program=program, mode="live")
    program_key_mark_rotation(key=key, deadline=T0 + timedelta(days=7))
    flagged = status(owner, program).json()["data"]["program"]["key_rotation"]
    assert flagged == {
        "flagged": True,
        "marked_at": T0.isoformat(),
        "deadline": (T0 + timedelta(days=7)).isoformat(),
        "retired": False,
    }
    time_machine.move_to(T0 + timedelta(days=7), tick=False)
    assert status(owner, program).json()["data"]["program"]["key_rotation"]["retired"] is True


def test_it_shows_the_stripe_connection_and_its_latest_event(owner, program):
    program.stripe_account_id = "acct_123"
    program.stripe_connected_at = T0
    program.save()
    for n, (kind, at) in enumerate([("invoice.payment_succeeded", T0 + timedelta(1)), ("charge.refunded", T0)]):
        ProcessorEvent.objects.create(
            event_id=f"evt_{n}", event_type=kind, account_id="acct_123", program=program, payload={}, received_at=at
        )
    stripe = status(owner, program).json()["data"]["program"]["stripe"]
    assert stripe == {
        "connected": True,
        "account_id": "acct_123",
        "connected_at": T0.isoformat(),
        "last_event_at": (T0 + timedelta(1)).isoformat(),
        "last_event_type": "invoice.payment_succeeded",
    }


def test_it_reads_a_constant_number_of_queries(owner, program, django_assert_num_queries):
    link = ReferralLinkFactory(program=program)
    for n in range(5):
        ClickEvent.objects.create(program=program, click_id=f"c{n}", link=link, click_timestamp=timezone.now())
    # 1 session, 2 user, 3 program, 4 membership (the permission), 5 membership again (the role),
    # 6 live key, 7 latest processor event, 8 latest click, lead and sale (one query, three subqueries)
    with django_assert_num_queries(8):
        assert status(owner, program).status_code == 200
