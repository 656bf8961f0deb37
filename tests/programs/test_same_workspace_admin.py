"""The admin never ties one workspace's partner to another workspace's program. Partner programs → Add listed
every workspace's partners and saved a partner of workspace 1 into a program of workspace 2 (302); links, ledger
entries, customers and notifications the same. An add form now answers 200 with the reason and writes nothing;
a change form offers (and accepts) only the row's own workspace's objects, raw-id fields and the agent key's
programs included."""

from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Model

from commissions.models import LedgerEntry, Notification
from programs.models import CROSS_WORKSPACE, PartnerProgram, ReferralLink, Workspace
from programs.services import agent_key_create
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    PartnerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    ReferralLinkFactory,
)
from tracking.models import ClickEvent, Customer

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    client.force_login(get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123"))
    return client


@pytest.fixture
def program():
    return ProgramFactory()


@pytest.fixture
def foreign_partner():
    """A partner of another workspace than `program`'s."""
    return PartnerFactory()


def cross(name: str, pk: int, workspace: Workspace, anchor: str, anchor_pk: int, expected: Workspace) -> str:
    return CROSS_WORKSPACE.format(
        name=name, pk=pk, workspace=workspace.pk, expected=expected.pk, anchor=anchor, anchor_pk=anchor_pk
    )


def form_errors(response) -> list[str]:
    form = response.context["adminform"].form
    return [message for messages in form.errors.values() for message in messages]


# Each relation: its admin add URL, its model, and the add form's fields for a program and a partner.
def partner_program_data(program, partner) -> dict[str, Any]:
    return {"partner": partner.pk, "program": program.pk}


def link_data(program, partner) -> dict[str, Any]:
    return {"short_link": "grace-1", "partner": partner.pk, "program": program.pk, "is_active": "on"}


def ledger_data(program, partner) -> dict[str, Any]:
    return {
        "partner": partner.pk,
        "program": program.pk,
        "kind": "adjustment",
        "amount_cents": "500",
        "currency": "USD",
        "memo": "goodwill",
    }


def customer_data(program, partner) -> dict[str, Any]:
    now = datetime(2026, 11, 1, 12, 0)
    return {
        "program": program.pk,
        "click_id": "cust_admin_1",
        "customer_status": "click",
        "first_partner": partner.pk,
        "first_clicked_at_0": now.date().isoformat(),
        "first_clicked_at_1": "12:00:00",
        "last_clicked_at_0": now.date().isoformat(),
        "last_clicked_at_1": "12:00:00",
        "click_flags": "[]",
    }


def notification_data(program, partner) -> dict[str, Any]:
    commission = CommissionFactory.create(sale__customer__link__program=program)
    return {
        "audience": "partner",
        "kind": "commission_refunded",
        "partner": partner.pk,
        "commission": commission.pk,
        "dedupe_key": "admin-1",
        "message": "Your commission was partly refunded",
    }


RELATIONS = [
    ("/admin/programs/partnerprogram/add/", PartnerProgram, partner_program_data, "program"),
    ("/admin/programs/referrallink/add/", ReferralLink, link_data, "program"),
    ("/admin/commissions/ledgerentry/add/", LedgerEntry, ledger_data, "partner"),
    ("/admin/tracking/customer/add/", Customer, customer_data, "program"),
    ("/admin/commissions/notification/add/", Notification, notification_data, "commission"),
]
RELATION_IDS = ["enrolment", "link", "ledger entry", "customer", "notification"]


@pytest.mark.parametrize(("url", "model", "data", "anchor"), RELATIONS, ids=RELATION_IDS)
def test_an_add_form_saves_a_relation_within_one_workspace(operator, program, url, model, data, anchor):
    partner = PartnerFactory(workspace=program.workspace)
    response = operator.post(url, data(program, partner))
    assert response.status_code == 302, form_errors(response)
    assert model.objects.filter(partner=partner).exists() if model is not Customer else Customer.objects.exists()


@pytest.mark.parametrize(("url", "model", "data", "anchor"), RELATIONS, ids=RELATION_IDS)
def test_an_add_form_refuses_another_workspaces_partner(operator, program, foreign_partner, url, model, data, anchor):
    before = model.objects.count()
    response = operator.post(url, data(program, foreign_partner))
    assert response.status_code == 200
    if anchor == "partner":  # the ledger entry names its partner first: the program is the stranger
        expected = cross(
            "Program", program.pk, program.workspace, "partner", foreign_partner.pk, foreign_partner.workspace
        )
    elif anchor == "commission":
        commission = Notification._meta.get_field("commission").related_model.objects.get()
        expected = cross(
            "Partner", foreign_partner.pk, foreign_partner.workspace, "commission", commission.pk, program.workspace
        )
    else:
        expected = cross(
            "Partner", foreign_partner.pk, foreign_partner.workspace, "program", program.pk, program.workspace
        )
    assert form_errors(response) == [expected]
    assert model.objects.count() == before


def choices(response, field: str) -> set[int]:
    return set(response.context["adminform"].form.fields[field].queryset.values_list("pk", flat=True))


class TestChangeForms:
    def test_an_enrolment_offers_only_its_workspaces_partners_and_programs(self, operator, program, foreign_partner):
        enrolment = PartnerProgramFactory(program=program, partner__workspace=program.workspace)
        sibling = PartnerFactory(workspace=program.workspace)
        response = operator.get(f"/admin/programs/partnerprogram/{enrolment.pk}/change/")
        assert choices(response, "partner") == {enrolment.partner_id, sibling.pk}
        assert choices(response, "program") == {program.pk}

    def test_an_enrolment_cannot_be_moved_to_another_workspaces_partner(self, operator, program, foreign_partner):
        enrolment = PartnerProgramFactory(program=program, partner__workspace=program.workspace)
        response = operator.post(
            f"/admin/programs/partnerprogram/{enrolment.pk}/change/", partner_program_data(program, foreign_partner)
        )
        assert response.status_code == 200 and form_errors(response)
        enrolment.refresh_from_db()
        assert enrolment.partner.workspace == program.workspace

    def test_a_link_offers_only_its_workspaces_partners_and_programs(self, operator, program, foreign_partner):
        link = ReferralLinkFactory(program=program)
        ProgramFactory()  # another workspace's program
        response = operator.get(f"/admin/programs/referrallink/{link.pk}/change/")
        assert choices(response, "partner") == {link.partner_id}
        assert choices(response, "program") == {program.pk}

    def test_an_agent_key_offers_only_its_workspaces_programs(self, operator, program):
        ProgramFactory()  # another workspace's program
        sibling = ProgramFactory(workspace=program.workspace)
        key, _ = agent_key_create(workspace=program.workspace, name="bot", scopes=["programs:read"])
        response = operator.get(f"/admin/programs/agentkey/{key.pk}/change/")
        assert choices(response, "programs") == {program.pk, sibling.pk}
        # The form class is shared: the next add form still lists every workspace's programs.
        assert len(choices(operator.get("/admin/programs/agentkey/add/"), "programs")) == 3

    def test_a_customers_raw_id_fields_accept_only_its_workspace(self, operator, foreign_partner):
        customer = CustomerFactory()
        response = operator.get(f"/admin/tracking/customer/{customer.pk}/change/")
        assert foreign_partner.pk not in choices(response, "first_partner")
        assert customer.first_partner_id in choices(response, "first_partner")
        assert choices(response, "program") == {customer.program_id}

    def test_a_clicks_raw_id_fields_accept_only_its_workspace(self, operator, foreign_partner):
        customer = CustomerFactory()
        click = ClickEvent.objects.create(
            program=customer.program, partner=customer.first_partner, link=customer.first_link, customer=customer
        )
        other: Model = CustomerFactory()
        response = operator.get(f"/admin/tracking/clickevent/{click.pk}/change/")
        assert foreign_partner.pk not in choices(response, "partner")
        assert other.pk not in choices(response, "customer") and customer.pk in choices(response, "customer")


def test_a_partner_with_an_enrolment_is_not_moved_to_another_workspace(operator, program):
    enrolment = PartnerProgramFactory(program=program, partner__workspace=program.workspace)
    partner, elsewhere = enrolment.partner, Workspace.objects.create(name="Elsewhere")
    response = operator.post(
        f"/admin/programs/partner/{partner.pk}/change/",
        {"workspace": elsewhere.pk, "name": partner.name, "email": partner.email},
    )
    assert response.status_code == 200
    assert form_errors(response) == [
        f"Partner #{partner.pk} has partner programs in workspace {program.workspace_id}, so it stays in that workspace"
    ]
    partner.refresh_from_db()
    assert partner.workspace_id == program.workspace_id
