"""Each program's state at a glance on the programs list (Stripe, the latest live click and sale), and the role
badge on every program page header, the Stripe page included."""

from datetime import UTC, datetime

import pytest

from programs.models import Program, Role
from tests.factories import CustomerFactory, MembershipFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db

CLICKED = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
SOLD = datetime(2026, 3, 1, 10, 15, tzinfo=UTC)


def states_of(body: str, program: Program) -> dict[str, str]:
    """The text of each `data-state-of` item of the program's card."""
    card = body[body.index(f'href="/programs/{program.pk}/"') :]
    card = card[: card.index('class="card program-card"')] if 'class="card program-card"' in card else card
    states = {}
    for item in card.split("data-state-of=")[1:]:
        name, rest = item[1:].split('"', 1)
        text = rest.split(">", 1)[1].split("</li>", 1)[0]
        while "<" in text:  # drop the <time> tags
            before, _, after = text.partition("<")
            text = before + after.partition(">")[2]
        states[name] = text
    return states


def test_the_list_shows_stripe_and_the_latest_live_click_and_sale(client, owner, program):
    link = ReferralLinkFactory(program=program)
    ClickEvent.objects.create(program=program, partner=link.partner, link=link, click_id="c1", click_timestamp=CLICKED)
    # A later test click and a bot click say nothing about live tracking.
    ClickEvent.objects.create(program=program, click_id="t1", is_test=True, click_timestamp=SOLD)
    ClickEvent.objects.create(program=program, link=link, click_id="b1", traffic="bot", click_timestamp=SOLD)
    SaleFactory(customer=CustomerFactory(link=link), sale_date=SOLD)
    Program.objects.filter(pk=program.pk).update(stripe_account_id="acct_Live1")
    idle = ProgramFactory(name="Beta Idle")
    MembershipFactory(workspace=idle.workspace, user=owner, role=Role.MEMBER)
    client.force_login(owner)

    body = client.get("/").content.decode()

    assert states_of(body, program) == {
        "stripe": "Stripe connected",
        "clicks": "Last live click 2026-03-01 09:30 UTC",
        "sales": "Last live sale 2026-03-01 10:15 UTC",
    }
    assert states_of(body, idle) == {
        "stripe": "Stripe not connected",
        "clicks": "No live click yet",
        "sales": "No live sale yet",
    }


def test_the_list_reads_the_states_in_one_query(client, owner, program, django_assert_max_num_queries):
    for n in range(3):
        other = ProgramFactory(name=f"Other {n}")
        MembershipFactory(workspace=other.workspace, user=owner, role=Role.OWNER)
    client.force_login(owner)
    with django_assert_max_num_queries(5):  # session, user, memberships, programs with their states, ...
        assert client.get("/").status_code == 200


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_the_stripe_page_shows_the_role_badge(client, program, role):
    user = MembershipFactory(workspace=program.workspace, role=role).user
    client.force_login(user)
    body = client.get(f"/programs/{program.pk}/stripe").content.decode()
    assert f'<span class="badge role-{role.value}" title="Your role">{role.value}</span>' in body
