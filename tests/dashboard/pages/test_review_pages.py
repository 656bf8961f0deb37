"""The review tab: held commissions (filters, release, void), the latest decisions and the flagged clicks, read by
any member and acted on by roles with program:manage only; bad input and refused actions come back as messages
with nothing changed."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from commissions.models import Commission, CommissionReview, LedgerEntry
from commissions.services import commission_release, partner_balance
from core import messages as commission_messages
from dashboard import messages as texts
from dashboard.review_views import CLICKS_PER_PAGE, HELD_PER_PAGE
from tests.dashboard.pages.review_rows import click, held_by_owner, held_by_rule, link_of
from tests.factories import CommissionFactory, CustomerFactory, ProgramFactory, SaleFactory

pytestmark = pytest.mark.django_db

FULL_HASH = "abcdef0123456789abcdef0123456789"


def url(program) -> str:
    return f"/programs/{program.pk}/review"


def page(response) -> str:
    return response.content.decode()


def row(body: str, element_id: str) -> str:
    start = body.index(f'id="{element_id}"')
    return body[start : body.index("</tr>", start)]


@pytest.fixture
def link(program):
    return link_of(program)


def release(client, program, commission, **data):
    return client.post(f"/programs/{program.pk}/review/commissions/{commission.pk}/release", data)


def void(client, program, commission, **data):
    return client.post(f"/programs/{program.pk}/review/commissions/{commission.pk}/void", data)


def messages_of(response) -> list[str]:
    return [str(message) for message in response.wsgi_request._messages]


# --- the held commissions ---------------------------------------------------------------------------------------


def test_it_lists_held_commissions_newest_first_with_why(member_client, program, link):
    older = held_by_rule(link, flags=["self_referral", "paid_ads"], sale_cents=25000)
    Commission.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(hours=2))
    owner_held = held_by_owner(link, reason="checking the order")
    not_held = CommissionFactory(sale=SaleFactory(customer=CustomerFactory(link=link)))
    elsewhere = held_by_rule(link_of(ProgramFactory()))

    body = page(member_client.get(url(program)))

    assert body.index(f'id="held-{owner_held.pk}"') < body.index(f'id="held-{older.pk}"')
    assert f'id="held-{not_held.pk}"' not in body and f'id="held-{elsewhere.pk}"' not in body
    held = row(body, f"held-{older.pk}")
    assert link.partner.name in held
    assert "250.00 USD" in held and "50.00 USD" in held  # sale, commission
    assert "Self-referral" in held and escape("the customer's email is the partner's") in held
    assert "<code>self_referral</code>, <code>paid_ads</code>" in held
    assert older.held_at.strftime("%Y-%m-%d %H:%M") in held
    owner_row = row(body, f"held-{owner_held.pk}")
    assert "Owner hold" in owner_row and "checking the order" in owner_row


def test_the_held_list_filters_by_rule_owner_hold_and_partner(member_client, program, link):
    self_referral = held_by_rule(link, rule="self_referral")
    velocity = held_by_rule(link, rule="sale_velocity", reason="4 sales from click id x within 1440 minutes")
    owner_held = held_by_owner(link)
    other_link = link_of(program)
    other_partner = held_by_rule(other_link, rule="self_referral")

    def shown(**query) -> set[int]:
        body = page(member_client.get(url(program), query))
        return {c.pk for c in (self_referral, velocity, owner_held, other_partner) if f'id="held-{c.pk}"' in body}

    assert shown() == {self_referral.pk, velocity.pk, owner_held.pk, other_partner.pk}
    assert shown(rule="self_referral") == {self_referral.pk, other_partner.pk}
    assert shown(rule="sale_velocity") == {velocity.pk}
    assert shown(rule="owner") == {owner_held.pk}
    assert shown(partner=str(other_link.partner_id)) == {other_partner.pk}
    assert shown(rule="self_referral", partner=str(link.partner_id)) == {self_referral.pk}
    # An unknown value is no filter, never an error.
    assert shown(rule="nonsense", partner="x" * 5000) == shown()
    assert "No held commissions match these filters." in page(member_client.get(url(program), {"rule": "bot"}))


def test_it_pages_held_commissions(member_client, program, link):
    for _ in range(HELD_PER_PAGE + 1):
        held_by_rule(link)
    first = page(member_client.get(url(program)))
    assert first.count("data-rule=") == HELD_PER_PAGE and "held_page=2" in first
    second = page(member_client.get(url(program), {"held_page": "2", "kind": "bot"}))
    assert second.count("data-rule=") == 1
    assert "kind=bot" in second  # the clicks' filter survives the held list's pager


def test_members_see_the_list_without_decisions_and_managers_with(
    member_client, owner_client, admin_role_client, program, link
):
    held = held_by_rule(link)
    member_page = page(member_client.get(url(program)))
    assert f'id="held-{held.pk}"' in member_page
    assert f'data-release="{held.pk}"' not in member_page and f'data-void="{held.pk}"' not in member_page
    for client in (owner_client, admin_role_client):
        body = page(client.get(url(program)))
        assert f'data-release="{held.pk}"' in body and f'data-void="{held.pk}"' in body


def test_the_program_navigation_links_the_review_tab(member_client, program):
    body = page(member_client.get(url(program)))
    assert f'href="/programs/{program.pk}/review" aria-current="page"' in body
    commissions = page(member_client.get(f"/programs/{program.pk}/commissions"))
    assert f'href="/programs/{program.pk}/review"' in commissions


def test_strangers_and_signed_out_visitors_get_nothing(outsider_client, program, link):
    held_by_rule(link)
    assert outsider_client.get(url(program)).status_code == 403
    assert Client().get(url(program)).status_code == 302  # to sign in


# --- releasing and voiding --------------------------------------------------------------------------------------


def test_releasing_a_due_commission_credits_it_and_records_who(owner_client, owner, program, link):
    held = held_by_rule(link)

    response = release(owner_client, program, held, reason="customer verified by phone", back="?rule=self_referral")

    assert response.status_code == 302
    assert response["Location"] == f"/programs/{program.pk}/review?rule=self_referral"
    held.refresh_from_db()
    assert held.held_at is None and held.status == "approved" and held.credited
    credit = LedgerEntry.objects.get(commission=held, kind=LedgerEntry.Kind.CREDIT)
    assert credit.amount_cents == held.amount_cents == 2000
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 2000
    review = CommissionReview.objects.get(commission=held, action="released")
    assert review.actor == f"user:{owner.username}"
    assert review.reason == "customer verified by phone" and review.rule == "self_referral"

    body = page(owner_client.get(response["Location"]))
    assert f'id="held-{held.pk}"' not in body
    assert texts.COMMISSION_RELEASED_CREDITED.format(id=held.pk, partner=link.partner.name) in body
    decision = row(body, f"decision-{review.pk}")
    assert "Released" in decision and f"user:{owner.username}" in decision and "customer verified by phone" in decision


def test_releasing_a_commission_in_its_hold_period_leaves_it_pending(owner_client, program, link):
    held = held_by_rule(link, hold_until=timezone.now() + timedelta(days=10))
    response = release(owner_client, program, held)
    held.refresh_from_db()
    assert held.held_at is None and held.status == "pending" and not held.credited
    assert not LedgerEntry.objects.filter(commission=held, kind=LedgerEntry.Kind.CREDIT).exists()
    assert texts.COMMISSION_RELEASED_PENDING.format(
        id=held.pk, hold_until=held.hold_until.strftime("%Y-%m-%d %H:%M")
    ) in messages_of(response)


def test_voiding_a_held_commission_pays_nothing_and_writes_the_review(admin_role_client, admin, program, link):
    held = held_by_rule(link)
    before = partner_balance(partner_id=link.partner_id, currency="USD")

    response = void(admin_role_client, program, held, reason="  the partner bought it for themselves  ")

    assert response.status_code == 302
    held.refresh_from_db()
    assert held.status == "reversed" and held.held_at is None
    assert held.void_reason == "the partner bought it for themselves"
    assert partner_balance(partner_id=link.partner_id, currency="USD") == before == 0
    review = CommissionReview.objects.get(commission=held, action="voided")
    assert review.actor == f"user:{admin.username}" and review.rule == "self_referral"
    entry = LedgerEntry.objects.get(commission=held)
    assert entry.kind == LedgerEntry.Kind.REVIEW and entry.amount_cents == 0
    assert "the partner bought it for themselves" in entry.memo
    assert texts.COMMISSION_VOIDED.format(id=held.pk) in messages_of(response)


def test_a_member_cannot_release_or_void_and_nothing_changes(member_client, program, link):
    held = held_by_rule(link)
    assert release(member_client, program, held).status_code == 403
    assert void(member_client, program, held, reason="no").status_code == 403
    held.refresh_from_db()
    assert held.held_at is not None and held.status == "pending"
    assert not CommissionReview.objects.filter(commission=held).exists()
    assert not LedgerEntry.objects.filter(commission=held).exists()


def test_another_programs_commission_is_not_found(owner_client, program):
    elsewhere = held_by_rule(link_of(ProgramFactory()))
    assert release(owner_client, program, elsewhere).status_code == 404
    assert void(owner_client, program, elsewhere, reason="fraud").status_code == 404
    elsewhere.refresh_from_db()
    assert elsewhere.held_at is not None and elsewhere.status == "pending"


@pytest.mark.parametrize("commission_id", ["abc", "0", "-1", "99999999999999999999999", "1e3"])
def test_garbage_commission_ids_are_not_found(owner_client, program, commission_id):
    response = owner_client.post(f"/programs/{program.pk}/review/commissions/{commission_id}/release")
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        (None, texts.VOID_REASON_REQUIRED),
        ("", texts.VOID_REASON_REQUIRED),
        ("   ", texts.VOID_REASON_REQUIRED),
        ("x" * 501, texts.REASON_TOO_LONG.format(limit=500)),
        ("x" * 100_000, texts.REASON_TOO_LONG.format(limit=500)),
    ],
)
def test_a_void_without_a_fitting_reason_changes_nothing(owner_client, program, link, reason, message):
    held = held_by_rule(link)
    response = void(owner_client, program, held, **({} if reason is None else {"reason": reason}))
    assert response.status_code == 302
    assert messages_of(response) == [message]
    held.refresh_from_db()
    assert held.held_at is not None and held.status == "pending"
    assert not CommissionReview.objects.filter(commission=held).exists()


def test_a_release_with_a_reason_too_long_changes_nothing(owner_client, program, link):
    held = held_by_rule(link)
    response = release(owner_client, program, held, reason="y" * 501)
    assert messages_of(response) == [texts.REASON_TOO_LONG.format(limit=500)]
    held.refresh_from_db()
    assert held.held_at is not None and not CommissionReview.objects.filter(commission=held).exists()


def test_releasing_twice_shows_the_refusal_not_an_error(owner_client, program, link):
    held = held_by_rule(link)
    commission_release(commission_id=held.pk, actor="user:colleague")
    response = release(owner_client, program, held)
    assert response.status_code == 302
    assert messages_of(response) == [commission_messages.COMMISSION_NOT_HELD]
    assert CommissionReview.objects.filter(commission=held).count() == 1


def test_voiding_a_commission_no_longer_held_leaves_it_alone(owner_client, program, link):
    held = held_by_rule(link)
    commission_release(commission_id=held.pk, actor="user:colleague")
    response = void(owner_client, program, held, reason="too late")
    assert messages_of(response) == [texts.COMMISSION_NOT_HELD_ANY_MORE.format(id=held.pk)]
    held.refresh_from_db()
    assert held.status == "approved" and held.credited
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 2000


def test_actions_are_post_only_and_need_the_csrf_token(owner, program, link):
    held = held_by_rule(link)
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.get(f"/programs/{program.pk}/review/commissions/{held.pk}/release").status_code == 405
    assert release(client, program, held).status_code == 403
    held.refresh_from_db()
    assert held.held_at is not None


@pytest.mark.parametrize("back", ["https://evil.example.com/", "//evil.example.com", "?a=1\r\nSet-Cookie: x=1", ""])
def test_the_way_back_stays_on_the_review_page(owner_client, program, link, back):
    held = held_by_rule(link)
    response = release(owner_client, program, held, back=back)
    assert response["Location"].startswith(f"/programs/{program.pk}/review")
    assert "\n" not in response["Location"] and "evil" not in response["Location"].split("?")[0]


# --- the decisions and the flagged clicks ---------------------------------------------------------------------------


def test_recent_decisions_list_the_programs_own_newest_first(member_client, program, link):
    held = held_by_owner(link, reason="first look")
    commission_release(commission_id=held.pk, actor="agent key aff_…abcd", reason="fine")
    held_by_owner(link_of(ProgramFactory()), reason="elsewhere")
    body = page(member_client.get(url(program)))
    log = body[body.index('id="decision-log"') :]
    assert log.index("agent key aff_…abcd") < log.index("user:someone")
    assert "first look" in log and "fine" in log and "elsewhere" not in log


def test_it_lists_flagged_clicks_and_never_the_whole_visitor_hash(member_client, program, link):
    duplicate = click(link, traffic="duplicate", geo_country="DE", device_type="desktop", browser_name="Firefox")
    bot = click(link, traffic="bot")
    prefetch = click(link, traffic="prefetch")
    paid = click(link, flags=["paid_ads"])
    counted = click(link)
    elsewhere = click(link_of(ProgramFactory()), traffic="bot")

    body = page(member_client.get(url(program)))

    shown = [c for c in (duplicate, bot, prefetch, paid, counted, elsewhere) if f'id="click-{c.pk}"' in body]
    assert shown == [duplicate, bot, prefetch, paid]
    assert body.index(f'id="click-{paid.pk}"') < body.index(f'id="click-{duplicate.pk}"')  # newest first
    dup_row = row(body, f"click-{duplicate.pk}")
    assert link.short_link in dup_row and link.partner.name in dup_row and duplicate.click_id in dup_row
    assert "DE" in dup_row and "desktop / Firefox" in dup_row and ">duplicate<" in dup_row
    assert FULL_HASH[:8] in dup_row and FULL_HASH not in body and FULL_HASH[:9] not in body
    assert "<code>paid_ads</code>" in row(body, f"click-{paid.pk}")


def test_flagged_clicks_filter_by_kind_partner_and_link(member_client, program, link):
    other_link = link_of(program)
    clicks = {
        "duplicate": click(link, traffic="duplicate"),
        "bot": click(link, traffic="bot"),
        "prefetch": click(link, traffic="prefetch"),
        "paid_ads": click(link, flags=["paid_ads"]),
        "other": click(other_link, traffic="bot"),
    }

    def shown(**query) -> set[str]:
        body = page(member_client.get(url(program), query))
        return {name for name, c in clicks.items() if f'id="click-{c.pk}"' in body}

    assert shown(kind="duplicate") == {"duplicate"}
    assert shown(kind="bot") == {"bot", "other"}
    assert shown(kind="prefetch") == {"prefetch"}
    assert shown(kind="paid_ads") == {"paid_ads"}
    assert shown(click_partner=str(other_link.partner_id)) == {"other"}
    assert shown(link=link.short_link) == {"duplicate", "bot", "prefetch", "paid_ads"}
    assert shown(kind="bot", link=link.short_link) == {"bot"}
    assert shown(link="no-such-code") == set()
    assert shown(kind="<script>", link="z" * 300) == set(clicks)


def test_it_pages_flagged_clicks(member_client, program, link):
    for _ in range(CLICKS_PER_PAGE + 1):
        click(link, traffic="bot")
    first = page(member_client.get(url(program)))
    assert first.count("data-click=") == CLICKS_PER_PAGE and "clicks_page=2" in first
    assert page(member_client.get(url(program), {"clicks_page": "2"})).count("data-click=") == 1


# --- what the page costs ----------------------------------------------------------------------------------------


def test_the_review_page_costs_the_same_queries_however_many_rows(
    owner_client, program, link, django_assert_num_queries
):
    def fill() -> None:
        other = link_of(program)
        for target in (link, other):
            held_by_rule(target, flags=["self_referral"])
            held_by_owner(target)
            click(target, traffic="bot")
            click(target, flags=["paid_ads"])

    # 1 session, 2 user, 3 program, 4 membership (program_for_action), 5 membership (the role), 6-7 held count and
    # page, 8-9 flagged clicks count and page, 10 decisions, 11 partners (filters).
    fill()
    with django_assert_num_queries(11):
        response = owner_client.get(url(program), {"rule": "self_referral", "kind": "bot"})
    assert response.status_code == 200
    fill()
    fill()
    with django_assert_num_queries(11):
        response = owner_client.get(url(program))
    assert response.status_code == 200


def test_an_empty_review_page_costs_fewer_queries(member_client, program, django_assert_num_queries):
    # No held commissions or flagged clicks: the counts answer 0 and no page is read.
    with django_assert_num_queries(9):
        body = page(member_client.get(url(program)))
    assert "No held commissions." in body and "No flagged clicks." in body and "No decisions yet." in body
