"""The portal's Performance page (/portal/performance): a partner's own numbers, counted as the owner's performance
report counts them (the same rollups plus the live delta), per day and per link. Partners are untrusted: every
filter is tried with another partner's and another workspace's ids, and with junk."""

from datetime import date, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from portal import services
from programs.models import PartnerProgram
from tests.event_activity import ACTIVITY_DAY1, ACTIVITY_DAY2, ACTIVITY_NOW, click, lead, sale
from tests.factories import MembershipFactory, PartnerFactory, ProgramFactory, ReferralLinkFactory
from tracking.rollups import rollups_update
from tracking.selectors.performance import tracking_performance_get

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen")]

NOW, DAY1, DAY2 = ACTIVITY_NOW, ACTIVITY_DAY1, ACTIVITY_DAY2
PASSWORD = "long enough passphrase 1"
URL = "/portal/performance"
RANGE = {"from": "2025-05-18", "to": "2025-05-20"}
COLUMNS = ("clicks", "leads", "sales", "revenue_cents", "commission_cents")


@pytest.fixture(autouse=True)
def counts_cleared(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro")


def account_of(*partners, email: str) -> Client:
    """A browser signed in to the portal as a new account holding these partner rows."""
    account = services.account_create(email, PASSWORD)
    for partner in partners:
        partner.account = account
        partner.save(update_fields=["account"])
    browser = Client()
    response = browser.post("/portal/sign-in", {"email": email, "password": PASSWORD})
    assert response.status_code == 302
    return browser


@pytest.fixture
def alice(alice_link) -> Client:
    return account_of(alice_link.partner, email="alice@example.com")


@pytest.fixture
def bob(bob_link) -> Client:
    return account_of(bob_link.partner, email="bob@example.com")


def settle() -> None:
    rollups_update(settle=timedelta(0))


def numbers(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in COLUMNS}


def page(browser: Client, status: int = 200, **params):
    response = browser.get(URL, params)
    assert response.status_code == status, response.content[:500]
    return response


def owner_row(program, partner_id: int, **dates) -> dict[str, Any]:
    report = tracking_performance_get(program=program, **dates)
    [row] = [row for row in report["by_partner"] if row["partner_id"] == partner_id]
    return numbers(row)


def test_the_numbers_are_the_owners_report_for_the_partner_from_the_rollups_and_the_live_delta(
    program, activity, alice_link, bob_link, alice, bob
):
    settle()
    # Above the watermark: counted live, as the owner's report counts them.
    later = click(alice_link, DAY2 + timedelta(hours=2))
    lead(later, DAY2 + timedelta(hours=2))
    sale(later, DAY2 + timedelta(hours=3), 4000, commission=800)
    click(bob_link, DAY2 + timedelta(hours=4))
    dates = {"date_from": date(2025, 5, 18), "date_to": date(2025, 5, 20)}

    mine = page(alice, **RANGE).context
    theirs = page(bob, **RANGE).context
    assert numbers(mine["totals"]) == owner_row(program, alice_link.partner_id, **dates)
    assert numbers(theirs["totals"]) == owner_row(program, bob_link.partner_id, **dates)
    assert numbers(mine["totals"]) == {
        "clicks": 3,
        "leads": 2,
        "sales": 3,
        "revenue_cents": 17000,
        "commission_cents": 2800,
    }
    # The two partners' days add up to the owner's days: each sees only theirs, and nothing is lost.
    owner_days = tracking_performance_get(program=program, **dates)["by_day"]
    for day, a, b in zip(owner_days, mine["by_day"], theirs["by_day"], strict=True):
        assert day["date"] == a["date"] == b["date"]
        assert numbers(day) == {name: a[name] + b[name] for name in COLUMNS}
    text = page(alice, **RANGE).content.decode()
    assert "170.00" in text and "28.00" in text  # amounts through core.money.money


def test_the_default_range_is_the_last_30_days_and_test_events_are_left_out(program, activity, alice_link, alice):
    settle()
    context = page(alice).context
    assert (context["date_from"], context["date_to"]) == (date(2025, 4, 21), date(2025, 5, 20))
    assert len(context["by_day"]) == 30
    # The test click, lead and sale of the activity and the click 40 days back are not counted.
    assert numbers(context["totals"]) == {
        "clicks": 2,
        "leads": 1,
        "sales": 2,
        "revenue_cents": 13000,
        "commission_cents": 2000,
    }
    assert numbers(context["totals"]) == owner_row(
        program, alice_link.partner_id, date_from=date(2025, 4, 21), date_to=date(2025, 5, 20)
    )
    assert page(alice, **{"from": "2025-05-19", "to": "2025-05-19"}).context["totals"]["clicks"] == 0


def test_per_link_clicks_and_the_link_filter(program, alice_link, alice):
    second = ReferralLinkFactory(program=program, partner=alice_link.partner, short_link="alice-two")
    click(alice_link, DAY1)
    click(second, DAY1)
    settle()
    click(second, DAY2)  # live
    context = page(alice, **RANGE).context
    assert [(row["name"], row["clicks"]) for row in context["by_link"]] == [
        ("alice-two", 2),
        (alice_link.short_link, 1),
    ]
    only = page(alice, **RANGE, link=second.pk)
    assert only.context["totals"]["clicks"] == 2 and only.context["link"] == second
    assert "Leads and sales are not counted per link" in only.content.decode()
    assert [row["clicks"] for row in only.context["by_day"]] == [1, 1, 0]
    # A link deleted since: its clicks still count, under "(no link)", as its raw clicks then name none.
    gone = ReferralLinkFactory(program=program, partner=alice_link.partner, short_link="alice-gone")
    click(gone, DAY1)
    settle()
    gone.delete()
    context = page(alice, **RANGE).context
    assert context["totals"]["clicks"] == 4
    assert [(row["name"], row["clicks"]) for row in context["by_link"]][-1] == ("(no link)", 1)


def test_two_partners_of_one_program_each_see_only_theirs(program, alice_link, bob_link, alice, bob):
    click(alice_link, DAY1)
    click(bob_link, DAY1)
    click(bob_link, DAY2)
    assert page(alice, **RANGE).context["totals"]["clicks"] == 1
    assert page(bob, **RANGE).context["totals"]["clicks"] == 2
    # Another partner's link, or program of another workspace: the same 404 as an unknown id.
    other = ReferralLinkFactory(program=ProgramFactory(name="Elsewhere"))
    click(other, DAY1)
    unknown = page(alice, 404, link=999_999_999)
    for params in ({"link": bob_link.pk}, {"link": other.pk}, {"program": other.program_id}):
        refused = page(alice, 404, **params)
        assert refused.context["error"] == unknown.context["error"] == "No such program or link among yours."
        assert "totals" not in refused.context
    page(alice, 404, program=999_999_999)
    page(alice, 404, program=program.pk, link=other.pk)


def test_a_partner_of_two_workspaces_sees_both_programs_and_nothing_else(program, alice_link, bob_link):
    elsewhere = ProgramFactory(name="Other Co")
    there = ReferralLinkFactory(
        program=elsewhere, partner=PartnerFactory(workspace=elsewhere.workspace, name="Alice there")
    )
    stranger = ReferralLinkFactory(program=elsewhere)
    click(alice_link, DAY1)
    click(there, DAY1)
    click(there, DAY2)
    click(stranger, DAY1)
    click(bob_link, DAY1)
    settle()
    browser = account_of(alice_link.partner, there.partner, email="alice@example.com")
    context = page(browser, **RANGE).context
    assert context["totals"]["clicks"] == 3
    assert {row["name"]: row["clicks"] for row in context["by_program"]} == {"Acme Pro": 1, "Other Co": 2}
    assert page(browser, **RANGE, program=elsewhere.pk).context["totals"]["clicks"] == 2
    assert page(browser, **RANGE, program=program.pk).context["totals"]["clicks"] == 1
    assert page(browser, **RANGE, link=there.pk).context["totals"]["clicks"] == 2
    page(browser, 404, link=stranger.pk)


def test_only_programs_the_partner_is_enrolled_in(program, alice_link, alice):
    click(alice_link, DAY1)
    PartnerProgram.objects.filter(partner=alice_link.partner, program=program).delete()
    assert page(alice, **RANGE).context["totals"]["clicks"] == 0
    page(alice, 404, program=program.pk)
    page(alice, 404, link=alice_link.pk)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "junk"}, "from must be a date (YYYY-MM-DD)"),
        ({"to": "2025-02-30"}, "to must be a date (YYYY-MM-DD)"),
        ({"from": "99999-01-01"}, "from must be a date"),
        ({"from": "2025-05-20", "to": "2025-05-19"}, "from must not be after to"),
        ({"from": "2024-01-01", "to": "2025-05-20"}, "at most 366 days"),
        ({"program": "abc"}, "program must be a number"),
        ({"program": "-1"}, "program must be a number"),
        ({"program": "1e3"}, "program must be a number"),
        ({"link": "9" * 40}, "link must be a number"),
    ],
)
def test_bad_input_is_refused_with_a_message_never_a_500(alice, params, message):
    response = page(alice, 400, **params)
    assert message in response.content.decode()
    assert "totals" not in response.context


@pytest.mark.parametrize("params", [{"from": "2025-05-01\x00"}, {"link": "1\x00"}, {"program": "\x00"}])
def test_nul_bytes_are_refused_before_the_page(alice, params):
    # The project's middleware refuses a NUL byte in any query parameter, for every route.
    response = page(alice, 400, **params)
    assert "must not contain NUL characters" in response.content.decode()


def test_the_calendars_last_day_and_an_id_beyond_a_bigint(alice):
    assert len(page(alice, **{"from": "9999-12-30", "to": "9999-12-31"}).context["by_day"]) == 2
    assert len(page(alice, **{"from": "0001-01-01", "to": "0001-01-01"}).context["by_day"]) == 1
    # One end near the calendar's ends: the default span stops there, as the owner's report's does.
    assert len(page(alice, **{"from": "9999-12-31"}).context["by_day"]) == 1
    assert len(page(alice, **{"to": "0001-01-01"}).context["by_day"]) == 1
    page(alice, 404, program=str(2**63))


def test_signed_out_and_an_owners_dashboard_session_go_to_sign_in(program):
    response = Client().get(URL, RANGE)
    assert response.status_code == 302
    assert response["Location"] == "/portal/sign-in?next=" + quote(f"{URL}?from=2025-05-18&to=2025-05-20", safe="")
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    assert owner.get(URL).status_code == 302


def test_not_a_get_is_refused(alice):
    assert alice.post(URL).status_code == 405


def queries_of(browser: Client, **params) -> int:
    with CaptureQueriesContext(connection) as queries:
        page(browser, **params)
    return len(queries)


def test_the_query_count_is_flat_in_days_and_links(program, alice_link, alice, django_assert_num_queries):
    wide = {"from": "2025-04-21", "to": "2025-05-20"}
    click(alice_link, DAY1)
    settle()
    click(alice_link, DAY2)  # live
    one_day_one_link = queries_of(alice, **wide)
    one_link_only = queries_of(alice, **wide, link=alice_link.pk)

    links = [ReferralLinkFactory(program=program, partner=alice_link.partner) for _ in range(19)]
    for n in range(30):
        for link in links:
            customer = click(link, DAY2 + timedelta(days=1 - n))
            if n % 5 == 0:
                sale(customer, DAY2 + timedelta(days=1 - n), 1000, commission=200)
    settle()
    for link in links[:5]:
        click(link, DAY2)  # live
    context = page(alice, **wide).context
    assert len(context["by_link"]) == 20 and sum(1 for row in context["by_day"] if row["clicks"]) == 30
    with django_assert_num_queries(one_day_one_link):
        page(alice, **wide)
    with django_assert_num_queries(one_link_only):
        page(alice, **wide, link=links[0].pk)
