"""One workspace with something behind every id the contract cases name: an owner and a member signed in, a
program with its keys, a partner and link, a customer with a sale and two commissions (one pending, one credited
and half withdrawn), a webhook endpoint with an event, a failed delivery and its attempt, agent keys, login
tokens and a CLI login under way, and a partner group with a tier rule, a bonus and a coupon code. The cases
(tests/contract/cases.py) reach them by name."""

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from cli_api.services import cli_token_create, login_session_start
from commissions.approval import commission_approve
from commissions.services import withdrawal_request
from groups.models import Bonus, CouponCode, TierRule
from groups.selectors import default_group
from groups.services import group_create
from payouts.services import run_confirm, run_preview
from programs.models import AGENT_SCOPES, PartnerApplication, Role
from programs.services import agent_key_create
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.payouts.money import credited as credited_commission
from tests.payouts.money import payable_partner
from webhooks.events import event_new
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery

UNKNOWN_ID = 987654321


@dataclass
class World:
    clients: dict[str, APIClient]
    ids: dict[str, Any]
    objects: dict[str, Any] = field(default_factory=dict)


def _client(**credentials: str) -> APIClient:
    client = APIClient()
    if credentials:
        client.credentials(**credentials)
    return client


def _bearer(raw: str) -> APIClient:
    return _client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def world_build() -> World:
    owner = MembershipFactory.create(role=Role.OWNER)
    workspace = owner.workspace
    member = MembershipFactory.create(workspace=workspace, role=Role.MEMBER)
    program = ProgramFactory.create(workspace=workspace)
    unenrolled_program = ProgramFactory.create(workspace=workspace)  # the partner's next enrolment
    stranger_program = ProgramFactory.create()  # another workspace's
    link = ReferralLinkFactory.create(program=program)
    partner = link.partner
    assert partner is not None
    customer = CustomerFactory.create(link=link, customer_key="cust-contract")
    sale = SaleFactory.create(customer=customer, processor_event_id="txn_contract")
    commission = CommissionFactory.create(sale=sale, hold_until=timezone.now())
    credited = CommissionFactory.create(sale__customer__link=link, amount_cents=2_000, hold_until=timezone.now())
    assert commission_approve(commission_id=credited.pk)
    withdrawal = withdrawal_request(partner=partner, amount_cents=500, currency="USD")
    endpoint = WebhookEndpointFactory.create(program=program)
    application = PartnerApplication.objects.create(
        program=program, name="Applicant", email="applicant@example.com", promotion="A newsletter"
    )
    # A partner paid by PayPal: a confirmed USD run left an open payout, and a EUR run waits in preview.
    payee = payable_partner(program, name="Payee")
    credited_commission(payee, program, amount=10_000)
    credited_commission(payee, program, amount=10_000, currency="EUR")
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="command").pk, actor="command")
    run = run_preview(program=program, currency="EUR", actor="command")
    event = event_new(program_id=program.pk, type="sale.created", livemode=True, data={"amount_cents": 4900})
    event.save(force_insert=True)
    delivery = WebhookDelivery.objects.create(event=event, endpoint=endpoint, status=DeliveryStatus.FAILED, attempts=1)
    WebhookAttempt.objects.create(delivery=delivery, number=1)
    # A group besides the default one, with a tier rule, a bonus and the partner's coupon code; nobody is in it, so
    # every spec answer stays the default group's (test_default_group_unchanged.py).
    group = group_create(program=program, name="Contract gold")
    tier_rule = TierRule.objects.create(group=group, target=default_group(program), metric="sales", threshold=5)
    bonus = Bonus.objects.create(group=group, name="Five sales", metric="sales", threshold=5, amount_cents=500)
    coupon_code = CouponCode.objects.create(program=program, partner=partner, code="CONTRACT")
    _, agent_key = agent_key_create(workspace=workspace, name="contract", scopes=AGENT_SCOPES)
    # Two one-scope keys: every scoped route is refused to one of them (403).
    _, events_reader = agent_key_create(workspace=workspace, name="events reader", scopes=("events:read",))
    _, programs_reader = agent_key_create(workspace=workspace, name="programs reader", scopes=("programs:read",))
    _, login_token = cli_token_create(user=owner.user)
    _, member_token = cli_token_create(user=member.user)
    owner_session = _client()
    owner_session.force_login(owner.user)
    member_session = _client()
    member_session.force_login(member.user)
    stranger = UserFactory.create()
    stranger_session = _client()
    stranger_session.force_login(stranger)
    login = login_session_start()
    keys: Any = program  # ProgramFactory leaves the raw keys on the instance
    return World(
        clients={
            "anonymous": _client(),
            "program_key": _bearer(keys.raw_api_key),
            "test_key": _bearer(keys.raw_test_api_key),
            "bad_key": _bearer("aff_" + "x" * 44),
            "owner": owner_session,
            "member": member_session,
            "stranger": stranger_session,
            "cli": _bearer(login_token),
            "cli_member": _bearer(member_token),
            "bad_token": _bearer("svcl_" + "x" * 44),
            "agent": _bearer(agent_key),
            "events_reader": _bearer(events_reader),
            "programs_reader": _bearer(programs_reader),
            "bad_agent": _bearer("agt_" + "x" * 43),
        },
        ids={
            "program": program.pk,
            "program2": unenrolled_program.pk,
            "stranger_program": stranger_program.pk,
            "link": link.pk,
            "short_link": link.short_link,
            "partner": partner.pk,
            "customer_key": customer.customer_key,
            "click_id": customer.click_id,
            "transaction_id": sale.processor_event_id,
            "commission": commission.pk,
            "credited": credited.pk,
            "withdrawal": withdrawal.pk,
            "endpoint": endpoint.pk,
            "application": application.pk,
            "run": run.pk,
            "payout": payout.pk,
            "event": event.pk,
            "delivery": delivery.pk,
            "state": login.state,
            "unknown": UNKNOWN_ID,
            "domain": program.domain,
            "group": group.pk,
            "group_name": group.name,
            "default_group": default_group(program).pk,
            "tier_rule": tier_rule.pk,
            "bonus": bonus.pk,
            "coupon_code": coupon_code.pk,
            "code": coupon_code.code,
        },
        objects={"owner": owner.user, "member": member.user, "program": program, "endpoint": endpoint},
    )
