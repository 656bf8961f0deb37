"""Attribution explained as a page: the sale's rule, click and window, the policy's arithmetic, refunds and ledger;
a customer's clicks, leads and sales; linked from each commission."""

import pytest

from commissions.services import commission_hold
from insight.explain import EXPLAIN_SALE_NOT_FOUND
from tests.factories import CommissionFactory, CustomerFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/explain"


@pytest.fixture
def customer(program):
    return CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")


@pytest.fixture
def sale(customer):
    return SaleFactory(customer=customer, processor_event_id="txn_1", attributed_by="customer_key")


def test_an_outsider_is_refused(outsider_client, program):
    assert outsider_client.get(url(program), {"transaction_id": "txn_1"}).status_code == 403


def test_without_a_selector_it_shows_the_form(member_client, program):
    response = member_client.get(url(program))
    assert response.status_code == 200
    assert 'name="by"' in response.content.decode()


def test_it_explains_an_attributed_sale(member_client, program, sale):
    commission = CommissionFactory(sale=sale)
    response = member_client.get(url(program), {"transaction_id": "txn_1"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "Sale <code>txn_1</code>" in body
    assert "Matched rule: <strong>customer_key</strong>" in body
    assert "matched</span> customer_key: the earliest customer" in body
    assert "the window is" in body and "within it." in body
    assert f"Commission #{commission.pk}" in body and "of 100.00 USD =" in body
    assert sale.customer.click_id in body


def test_the_forms_selector_and_value_work_too(member_client, program, customer, sale):
    body = member_client.get(url(program), {"by": "customer_key", "value": "user_1"}).content.decode()
    assert f"Customer <code>{customer.click_id}</code>" in body
    assert 'href="?transaction_id=txn_1"' in body


def test_an_unknown_sale_is_404_with_the_reason(member_client, program):
    response = member_client.get(url(program), {"transaction_id": "nope"})
    assert response.status_code == 404
    assert EXPLAIN_SALE_NOT_FOUND in response.content.decode()


def test_two_selectors_are_400(member_client, program):
    response = member_client.get(url(program), {"transaction_id": "a", "click_id": "b"})
    assert response.status_code == 400
    assert "Give exactly one of transaction_id, click_id or customer_key" in response.content.decode()


def test_each_commission_links_to_its_explanation(member_client, program, sale):
    CommissionFactory(sale=sale)
    body = member_client.get(f"/programs/{program.pk}/commissions").content.decode()
    assert f'href="/programs/{program.pk}/explain?transaction_id=txn_1"' in body


def test_the_events_page_has_the_explain_form(member_client, program):
    body = member_client.get(f"/programs/{program.pk}/events").content.decode()
    assert f'action="/programs/{program.pk}/explain"' in body


def test_a_held_commission_shows_its_rule_what_to_do_and_its_decisions(member_client, program, sale):
    commission = CommissionFactory(sale=sale)
    commission_hold(commission_id=commission.pk, reason="checking the buyer", actor="user:alice")

    body = member_client.get(url(program), {"transaction_id": "txn_1"}).content.decode()

    assert 'id="explain-review"' in body and "on hold</span>" in body
    assert "On hold by the owner: checking the buyer." in body and "Review tab" in body
    assert "held by user:alice: checking the buyer" in body


def test_a_bots_click_is_explained_alone(member_client, program):
    link = ReferralLinkFactory(program=program)
    ClickEvent.objects.create(program=program, link=link, partner=link.partner, click_id="cust_bot", traffic="bot")

    body = member_client.get(url(program), {"click_id": "cust_bot"}).content.decode()

    assert 'id="explain-click"' in body
    assert "bot: a crawler&#x27;s user agent; recorded, never counted, never attributed" in body
    assert "cannot attribute" in body
