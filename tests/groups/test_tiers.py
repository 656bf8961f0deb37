"""Tier rules: a promote rule moves a partner whose figure in the current period reaches its threshold, a demote
rule one whose figure in the last complete period stayed below it, each once per partner and period, with the
partner's email and the partner.group_changed webhook."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail

from groups.models import GroupChange
from groups.periods import period_current
from groups.selectors import default_group
from groups.services import Move, partner_move
from programs.models import PartnerAccount
from tests.helpers import run_together
from tiers.moves import tier_rule_move, tier_rules_apply
from webhooks.models import EventType, WebhookEvent

from .world import another_link, enrolment, group, program_link, rule, sale

pytestmark = pytest.mark.django_db

OCTOBER = datetime(2026, 10, 15, 12, tzinfo=UTC)
NOVEMBER = datetime(2026, 11, 10, 12, tzinfo=UTC)
DECEMBER = datetime(2026, 12, 5, 12, tzinfo=UTC)


def sales(link, count: int, when: datetime) -> None:
    for n in range(count):
        sale(link, when=when + timedelta(minutes=n))


def group_of(link) -> str:
    found = enrolment(link)
    return found.group.name if found.group else "Default"


def test_a_promote_rule_moves_a_partner_at_its_threshold_once_per_period(time_machine):
    time_machine.move_to(DECEMBER, tick=False)
    program, link = program_link()
    gold = group(program, "Gold")
    promote = rule(default_group(program), gold, threshold=3)
    sales(link, 2, DECEMBER)
    assert tier_rules_apply().moved == 0
    sale(link, when=DECEMBER)
    assert tier_rules_apply().moved == 1
    assert group_of(link) == "Gold"
    change = GroupChange.objects.get(rule=promote)
    assert (change.reason, change.period_key, change.figure, change.to_group) == ("tier", "2026-12", 3, gold)
    assert tier_rules_apply().moved == 0

    # Put back by an owner: the rule has moved them this month already.
    partner_move(enrolment=enrolment(link), group=default_group(program), move=Move(reason="owner"))
    assert tier_rules_apply().moved == 0
    assert group_of(link) == "Default"
    # Next month is another period.
    time_machine.move_to(datetime(2027, 1, 20, tzinfo=UTC), tick=False)
    sales(link, 3, datetime(2027, 1, 2, tzinfo=UTC))
    assert tier_rules_apply().moved == 1
    assert sorted(GroupChange.objects.filter(rule=promote).values_list("period_key", flat=True)) == [
        "2026-12",
        "2027-01",
    ]


def test_the_threshold_is_net_of_refunds_and_of_this_period_only(time_machine):
    from .world import refund

    time_machine.move_to(DECEMBER, tick=False)
    program, link = program_link()
    gold = group(program, "Gold")
    rule(default_group(program), gold, metric="revenue", threshold=20000)
    sales(link, 3, NOVEMBER)
    sale(link, when=DECEMBER, amount=15000)
    refunded = sale(link, when=DECEMBER, amount=5000)
    refund(refunded)
    assert tier_rules_apply().moved == 0
    sale(link, when=DECEMBER, amount=5000)
    assert tier_rules_apply().moved == 1
    assert GroupChange.objects.get(reason="tier").figure == 20000


def test_inactive_rules_and_partners_move_nobody(time_machine):
    time_machine.move_to(DECEMBER, tick=False)
    program, link = program_link()
    other = another_link(program)
    gold = group(program, "Gold")
    rule(default_group(program), gold, threshold=1, is_active=False)
    rule(default_group(program), gold, threshold=1, period="quarter")
    other.partner.is_active = False
    other.partner.save()
    sales(link, 1, DECEMBER)
    sales(other, 1, DECEMBER)
    assert tier_rules_apply().moved == 1
    assert (group_of(link), group_of(other)) == ("Gold", "Default")


def test_a_partner_moved_elsewhere_meanwhile_is_left_where_they_are(time_machine):
    time_machine.move_to(DECEMBER, tick=False)
    program, link = program_link()
    gold, silver = group(program, "Gold"), group(program, "Silver")
    promote = rule(default_group(program), gold, threshold=1)
    partner_move(enrolment=enrolment(link), group=silver, move=Move(reason="owner"))
    bounds = period_current("month", DECEMBER)
    assert tier_rule_move(rule=promote, partner_id=link.partner_id, bounds=bounds, figure=5) is None
    assert group_of(link) == "Silver"


def test_a_demote_rule_judges_the_last_complete_period_of_partners_in_the_group_all_of_it(time_machine):
    time_machine.move_to(OCTOBER, tick=False)
    program, low = program_link()
    high, joined_late, new = another_link(program), another_link(program), None
    gold = group(program, "Gold")
    demote = rule(gold, default_group(program), direction="demote", threshold=3)
    for link in (low, high):
        partner_move(enrolment=enrolment(link), group=gold, move=Move(reason="owner"))
    sales(low, 2, NOVEMBER)
    sales(high, 3, NOVEMBER)
    time_machine.move_to(NOVEMBER, tick=False)
    partner_move(enrolment=enrolment(joined_late), group=gold, move=Move(reason="owner"))  # mid-November
    new = another_link(program)  # enrolled in December, in Gold at once
    time_machine.move_to(DECEMBER, tick=False)
    partner_move(enrolment=enrolment(new), group=gold, move=Move(reason="owner"))

    assert tier_rules_apply().moved == 1
    assert [group_of(link) for link in (low, high, joined_late, new)] == ["Default", "Gold", "Gold", "Gold"]
    change = GroupChange.objects.get(rule=demote)
    assert (change.period_key, change.figure, change.from_group, change.partner_id) == (
        "2026-11",
        2,
        gold,
        low.partner_id,
    )
    assert tier_rules_apply().moved == 0
    # In January, December is judged: the partners who were in Gold for all of it and sold less are moved.
    time_machine.move_to(datetime(2027, 1, 3, tzinfo=UTC), tick=False)
    assert tier_rules_apply().moved == 2  # high and joined_late: no December sales; new joined in December
    assert [group_of(link) for link in (low, high, joined_late, new)] == ["Default", "Default", "Default", "Gold"]


def test_the_partner_is_emailed_and_the_webhook_sent(time_machine, django_capture_on_commit_callbacks):
    time_machine.move_to(DECEMBER, tick=False)
    program, link = program_link()
    program.name = "Acme Pro"
    program.save()
    account = PartnerAccount.objects.create(email="pat@example.com")
    link.partner.account = account
    link.partner.save()
    unread = another_link(program)  # no portal account: nobody to write to
    gold = group(program, "Gold")
    rule(default_group(program), gold, threshold=2)
    sales(link, 2, DECEMBER)
    sales(unread, 2, DECEMBER)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert tier_rules_apply().moved == 2

    [message] = mail.outbox
    assert message.to == ["pat@example.com"]
    assert message.subject == "Acme Pro: you are now in Gold"
    assert "Acme Pro moved you from Default to Gold: your 2 sales reached 2 sales in 2026-12." in message.body
    assert "https://track.example.test/portal/" in message.body
    events = WebhookEvent.objects.filter(type=EventType.PARTNER_GROUP_CHANGED, program=program)
    assert events.count() == 2
    data = events.get(data__partner_id=link.partner_id).data
    assert (data["reason"], data["period"], data["figure"], data["to_group"], data["from_group"]) == (
        "tier",
        "2026-12",
        2,
        "Gold",
        "Default",
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_promote_a_partner_once():
    program, link = program_link()
    other = another_link(program)
    gold, platinum = group(program, "Gold"), group(program, "Platinum")
    rule(default_group(program), gold, threshold=2)
    rule(gold, platinum, threshold=3)
    now = period_current("month", datetime.now(UTC)).start + timedelta(hours=1)
    sales(link, 3, now)
    sales(other, 2, now)
    moved = sum(run_together(4, lambda n: tier_rules_apply().moved))
    # link: Default -> Gold -> Platinum (two rules, once each); other: Default -> Gold.
    assert moved == 3
    assert (group_of(link), group_of(other)) == ("Platinum", "Gold")
    assert GroupChange.objects.filter(reason="tier").count() == 3
    assert WebhookEvent.objects.filter(type=EventType.PARTNER_GROUP_CHANGED).count() == 3
