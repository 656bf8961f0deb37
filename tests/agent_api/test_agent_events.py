"""GET /api/agent/v1/events: clicks, leads or sales of the programs a key may see, filtered, live unless
test=true, newest first by id with cursor pagination at a constant number of queries per page."""

from datetime import UTC, datetime, timedelta

import pytest

from agent_api import messages
from programs.models import Partner, Program, ReferralLink
from tests.agent_api.conftest import agent_for
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    PartnerFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
    WorkspaceFactory,
)
from tests.helpers import platform_error
from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent

pytestmark = pytest.mark.django_db

EVENTS = "/api/agent/v1/events"
DAY = datetime(2025, 5, 18, 9, 0, tzinfo=UTC)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.json()
    return [item["id"] for item in response.json()["data"]]


def link_of(program: Program, partner: Partner | None = None) -> ReferralLink:
    partner = partner or PartnerFactory.create(workspace=program.workspace)
    return ReferralLinkFactory.create(program=program, partner=partner)


def click(link: ReferralLink, when: datetime = DAY, **extra) -> ClickEvent:
    customer = CustomerFactory.create(link=link)
    return ClickEvent.objects.create(
        program=customer.program,
        partner=link.partner,
        link=link,
        customer=customer,
        click_id=customer.click_id,
        click_timestamp=when,
        **extra,
    )


def lead(customer: Customer, when: datetime = DAY, **extra) -> LeadEvent:
    return LeadEvent.objects.create(
        program=customer.program,
        customer=customer,
        partner=customer.first_partner,
        click_id=customer.click_id,
        lead_timestamp=when,
        **extra,
    )


def sale(link: ReferralLink, when: datetime = DAY, **extra) -> SaleEvent:
    return SaleFactory.create(customer=CustomerFactory.create(link=link), sale_date=when, **extra)


def one_of_each(link: ReferralLink, when: datetime = DAY, is_test: bool = False) -> dict[str, int]:
    made_click = click(link, when, is_test=is_test)
    assert made_click.customer is not None
    made_lead = lead(made_click.customer, when, is_test=is_test)
    made_sale = sale(link, when, is_test=is_test)
    return {"click": made_click.pk, "lead": made_lead.pk, "sale": made_sale.pk}


class TestScopes:
    def test_a_key_without_events_read_gets_403_naming_the_scope(self, workspace, program):
        response = agent_for(workspace, scopes=("programs:read",)).get(EVENTS, {"type": "click"})
        assert response.status_code == 403
        assert response.json() == platform_error(
            403,
            "ForbiddenError",
            messages.SCOPE_MISSING.format(scope="events:read"),
            "missing_scope",
            {"scope": "events:read"},
        )

    def test_write_includes_read(self, workspace, program):
        assert agent_for(workspace, scopes=("events:write",)).get(EVENTS, {"type": "sale"}).status_code == 200


class TestWhatAKeySees:
    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    def test_events_of_another_workspace_are_not_listed(self, workspace, program, kind):
        mine = one_of_each(link_of(program))
        one_of_each(link_of(ProgramFactory.create(workspace=WorkspaceFactory.create())))
        assert ids(agent_for(workspace).get(EVENTS, {"type": kind})) == [mine[kind]]

    def test_a_program_id_of_another_workspace_is_not_found(self, workspace, program):
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        one_of_each(link_of(foreign))
        response = agent_for(workspace).get(EVENTS, {"type": "click", "program_id": foreign.pk})
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")

    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    def test_a_limited_key_sees_only_its_programs_events(self, workspace, program, kind):
        other = ProgramFactory.create(workspace=workspace)
        mine = one_of_each(link_of(program))
        one_of_each(link_of(other))
        agent = agent_for(workspace, programs=(program,))
        assert ids(agent.get(EVENTS, {"type": kind})) == [mine[kind]]
        response = agent.get(EVENTS, {"type": kind, "program_id": other.pk})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"

    def test_no_program_key_or_secret_is_returned(self, workspace, program):
        one_of_each(link_of(program))
        agent = agent_for(workspace)
        for kind in ("click", "lead", "sale"):
            body = agent.get(EVENTS, {"type": kind}).content.decode()
            assert program.raw_api_key not in body
            assert agent.raw_key not in body


class TestItems:
    def test_a_click_carries_its_link_landing_page_referrer_utm_and_country(self, workspace, program):
        link = link_of(program)
        made = click(
            link,
            page_url="https://shop.example/pricing?utm_source=news&utm_medium=email&utm_campaign=spring",
            referrer_url="https://news.example/post",
            geo_country="DE",
            device_type="mobile",
        )
        [item] = agent_for(workspace).get(EVENTS, {"type": "click"}).json()["data"]
        assert item == {
            "id": made.pk,
            "type": "click",
            "program_id": program.pk,
            "partner_id": link.partner_id,
            "link": link.short_link,
            "click_id": made.click_id,
            "timestamp": DAY.isoformat(),
            "page_url": made.page_url,
            "referrer_url": "https://news.example/post",
            "utm_source": "news",
            "utm_medium": "email",
            "utm_campaign": "spring",
            "geo_country": "DE",
            "device_type": "mobile",
            "traffic": "",
            "flags": [],
            "is_test": False,
            "created_at": made.created_at.isoformat(),
        }

    def test_a_lead_carries_its_customer_key_email_and_whether_it_is_settled(self, workspace, program):
        made_click = click(link_of(program))
        assert made_click.customer is not None
        made = lead(made_click.customer, customer_key="cus_1", email="Ann@Example.com", provisional=True)
        [item] = agent_for(workspace).get(EVENTS, {"type": "lead"}).json()["data"]
        assert item == {
            "id": made.pk,
            "type": "lead",
            "program_id": program.pk,
            "partner_id": made_click.partner_id,
            "click_id": made_click.click_id,
            "customer_key": "cus_1",
            "email": "Ann@Example.com",
            "timestamp": DAY.isoformat(),
            "provisional": True,
            "settled_at": None,
            "is_test": False,
            "created_at": made.created_at.isoformat(),
        }

    def test_a_sale_carries_its_transaction_amount_refund_and_commission(self, workspace, program):
        link = link_of(program)
        made = sale(link, amount_cents=12_345, currency="EUR", sale_type="subscription", is_recurring=True)
        commission = CommissionFactory.create(sale=made, status="approved", sale_refunded_cents=2_000)
        bare = sale(link)
        first, second = agent_for(workspace).get(EVENTS, {"type": "sale"}).json()["data"]
        assert first["id"] == bare.pk
        assert (first["commission"], first["refunded_cents"]) == (None, None)
        assert second == {
            "id": made.pk,
            "type": "sale",
            "program_id": program.pk,
            "partner_id": link.partner_id,
            "click_id": made.click_id,
            "transaction_id": made.processor_event_id,
            "amount_cents": 12_345,
            "currency": "EUR",
            "sale_type": "subscription",
            "payment_status": "paid",
            "is_recurring": True,
            "attributed": True,
            "refunded_cents": 2_000,
            "timestamp": DAY.isoformat(),
            "commission": {"id": commission.pk, "status": "approved"},
            "is_test": False,
            "created_at": made.created_at.isoformat(),
        }


class TestFilters:
    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    def test_test_events_are_left_out_unless_test_is_true(self, workspace, program, kind):
        link = link_of(program)
        live = one_of_each(link)
        test = one_of_each(link, is_test=True)
        agent = agent_for(workspace)
        assert ids(agent.get(EVENTS, {"type": kind})) == [live[kind]]
        assert ids(agent.get(EVENTS, {"type": kind, "test": "false"})) == [live[kind]]
        assert ids(agent.get(EVENTS, {"type": kind, "test": "true"})) == [test[kind]]

    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    def test_program_id_and_partner_id_narrow_the_list(self, workspace, program, kind):
        other = ProgramFactory.create(workspace=workspace)
        alice = PartnerFactory.create(workspace=workspace)
        by_alice = one_of_each(link_of(program, alice))
        by_bob = one_of_each(link_of(program))
        elsewhere = one_of_each(link_of(other, alice))
        agent = agent_for(workspace)
        assert ids(agent.get(EVENTS, {"type": kind})) == [elsewhere[kind], by_bob[kind], by_alice[kind]]
        assert ids(agent.get(EVENTS, {"type": kind, "program_id": program.pk})) == [by_bob[kind], by_alice[kind]]
        assert ids(agent.get(EVENTS, {"type": kind, "partner_id": alice.pk})) == [elsewhere[kind], by_alice[kind]]
        both = {"type": kind, "program_id": program.pk, "partner_id": alice.pk}
        assert ids(agent.get(EVENTS, both)) == [by_alice[kind]]

    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    def test_since_and_until_bound_the_events_own_time(self, workspace, program, kind):
        link = link_of(program)
        # Made in this order, so ids and times disagree: the filter reads the event's time, not its id.
        late = one_of_each(link, DAY + timedelta(days=1))
        early = one_of_each(link, DAY - timedelta(days=1))
        on_day = one_of_each(link, DAY)
        agent = agent_for(workspace)
        since = {"type": kind, "since": DAY.isoformat()}
        assert ids(agent.get(EVENTS, since)) == [on_day[kind], late[kind]]
        until = {"type": kind, "until": DAY.isoformat()}
        assert ids(agent.get(EVENTS, until)) == [on_day[kind], early[kind]]
        # A date as until covers its whole day; as since, from its start.
        day = DAY.date().isoformat()
        assert ids(agent.get(EVENTS, {"type": kind, "since": day, "until": day})) == [on_day[kind]]
        just_after = {"type": kind, "since": (DAY + timedelta(seconds=1)).isoformat(), "until": day}
        assert ids(agent.get(EVENTS, just_after)) == []

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({}, messages.EVENT_TYPE_INVALID),
            ({"type": ""}, messages.EVENT_TYPE_INVALID),
            ({"type": "conversion"}, messages.EVENT_TYPE_INVALID),
            ({"type": "click", "program_id": "abc"}, messages.EVENT_PROGRAM_ID_INVALID),
            ({"type": "click", "program_id": "0"}, messages.EVENT_PROGRAM_ID_INVALID),
            ({"type": "click", "program_id": "99999999999999999999"}, messages.EVENT_PROGRAM_ID_INVALID),
            ({"type": "click", "partner_id": "-1"}, messages.EVENT_PARTNER_ID_INVALID),
            ({"type": "click", "since": "yesterday"}, messages.EVENT_SINCE_INVALID),
            ({"type": "click", "until": "2025-13-01"}, messages.EVENT_UNTIL_INVALID),
            ({"type": "click", "since": "2025-05-19", "until": "2025-05-18"}, messages.EVENT_RANGE_INVALID),
            ({"type": "click", "test": "yes"}, messages.EVENT_TEST_INVALID),
            ({"type": "click", "limit": "0"}, messages.LIMIT_INVALID),
            ({"type": "click", "cursor": "nope"}, messages.CURSOR_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, params, message):
        response = agent.get(EVENTS, params)
        assert response.status_code == 400
        assert response.json()["error"]["message"] == message
        assert response.json()["error"]["code"] == "invalid_request"

    def test_an_unknown_partner_lists_nothing(self, agent, program):
        one_of_each(link_of(program))
        assert ids(agent.get(EVENTS, {"type": "sale", "partner_id": 999_999_999})) == []


class TestCursorPagination:
    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    def test_pages_cover_every_event_once_newest_first(self, workspace, program, kind):
        link = link_of(program)
        made = [one_of_each(link, DAY + timedelta(minutes=n))[kind] for n in range(5)]
        agent = agent_for(workspace)
        seen: list[int] = []
        cursor = None
        pages = 0
        while True:
            response = agent.get(EVENTS, {"type": kind, "limit": 2, **({"cursor": cursor} if cursor else {})})
            seen += ids(response)
            cursor = response.json()["next_cursor"]
            pages += 1
            if cursor is None:
                break
        assert pages == 3
        assert seen == sorted(made, reverse=True)

    @pytest.mark.parametrize("kind", ["click", "lead", "sale"])
    @pytest.mark.parametrize("by_program", [False, True])
    def test_a_page_costs_the_same_queries_whatever_its_depth_and_size(
        self, workspace, program, kind, by_program, django_assert_num_queries
    ):
        link = link_of(program)
        for n in range(7):
            made = one_of_each(link, DAY + timedelta(minutes=n))
            if n % 2:
                CommissionFactory.create(sale=SaleEvent.objects.get(pk=made["sale"]))
        agent = agent_for(workspace)
        params = {"type": kind, "limit": 3, **({"program_id": program.pk} if by_program else {})}
        cursor = agent.get(EVENTS, params).json()["next_cursor"]
        # The key, whether it is limited to programs, (the program asked for,) the page with what it joins.
        expected = 4 if by_program else 3
        with django_assert_num_queries(expected):
            assert len(ids(agent.get(EVENTS, {**params, "cursor": cursor}))) == 3
        with django_assert_num_queries(expected):
            assert len(ids(agent.get(EVENTS, {**params, "limit": 100}))) == 7
