"""Every row that ties objects together ties objects of one workspace: the model's clean() (programs.models.
same_workspace) refuses a mix, the services that write the rows refuse it, and the agent API, which reaches those
services, never lets another workspace's object in (a 404, as for an unknown id)."""

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from agent_api.models import AgentAuditEntry
from commissions.models import Commission, CommissionReview, LedgerEntry, Notification
from commissions.services import SALE_OF_ANOTHER_PROGRAM, commission_settle
from programs.models import (
    CROSS_WORKSPACE,
    WORKSPACE_MOVE_REFUSED,
    AgentKey,
    CrossWorkspace,
    PartnerProgram,
    ReferralLink,
    same_workspace,
)
from programs.services import PartnerNotEnrolled, agent_key_create, partner_enroll, referral_link_create
from tests.agent_api.conftest import agent_for
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    PartnerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    SaleFactory,
    WorkspaceFactory,
)
from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory()


@pytest.fixture
def stranger():
    """A partner of another workspace than `program`'s."""
    return PartnerFactory()


def partner_refusal(partner, anchor: str, anchor_pk: int, workspace_id: int) -> str:
    return CROSS_WORKSPACE.format(
        name="Partner",
        pk=partner.pk,
        workspace=partner.workspace_id,
        expected=workspace_id,
        anchor=anchor,
        anchor_pk=anchor_pk,
    )


def refused_by_full_clean(row) -> list[str]:
    with pytest.raises(ValidationError) as refused:
        row.full_clean()
    return refused.value.message_dict.get("__all__", [])


class TestModels:
    def test_an_enrolment_refuses_another_workspaces_partner(self, program, stranger):
        row = PartnerProgram(partner=stranger, program=program)
        expected = partner_refusal(stranger, "program", program.pk, program.workspace_id)
        assert refused_by_full_clean(row) == [expected]
        with pytest.raises(CrossWorkspace, match=expected):
            row.clean()

    def test_a_link_refuses_another_workspaces_partner(self, program, stranger):
        row = ReferralLink(short_link="mixed", partner=stranger, program=program)
        assert refused_by_full_clean(row) == [partner_refusal(stranger, "program", program.pk, program.workspace_id)]

    def test_a_link_or_enrolment_within_one_workspace_is_clean(self, program):
        partner = PartnerFactory(workspace=program.workspace)
        PartnerProgram(partner=partner, program=program).full_clean()
        ReferralLink(short_link="fine", partner=partner, program=program).full_clean()
        ReferralLink(short_link="half", partner=None, program=program).full_clean()  # half-configured is allowed

    def test_tracking_rows_refuse_another_workspaces_partner(self, stranger):
        customer = CustomerFactory()
        program = customer.program
        expected = partner_refusal(stranger, "program", program.pk, program.workspace_id)
        rows = [
            Customer(program=program, click_id="mixed", first_partner=stranger),
            ClickEvent(program=program, click_id="c", partner=stranger, customer=customer),
            LeadEvent(program=program, click_id="c", customer=customer, partner=stranger),
            SaleEvent(program=program, customer=customer, partner=stranger, amount_cents=100),
        ]
        for row in rows:
            assert expected in refused_by_full_clean(row), row

    def test_a_click_refuses_another_workspaces_customer(self):
        customer, elsewhere = CustomerFactory(), CustomerFactory()
        row = ClickEvent(program=customer.program, click_id="c", customer=elsewhere)
        [message] = refused_by_full_clean(row)
        assert message.startswith(f"Customer #{elsewhere.pk} belongs to workspace {elsewhere.program.workspace_id}")

    def test_money_rows_refuse_another_workspaces_partner(self, stranger):
        commission = CommissionFactory()
        program = commission.program
        rows = [
            (
                Commission(
                    program=program,
                    partner=stranger,
                    sale=commission.sale,
                    amount_cents=1,
                    hold_until=timezone.now(),
                ),
                partner_refusal(stranger, "program", program.pk, program.workspace_id),
            ),
            (
                LedgerEntry(partner=stranger, program=program, kind="adjustment", amount_cents=1),
                CROSS_WORKSPACE.format(
                    name="Program",
                    pk=program.pk,
                    workspace=program.workspace_id,
                    expected=stranger.workspace_id,
                    anchor="partner",
                    anchor_pk=stranger.pk,
                ),
            ),
            (
                Notification(
                    audience="partner",
                    kind="commission_refunded",
                    partner=stranger,
                    commission=commission,
                    dedupe_key="k",
                ),
                partner_refusal(stranger, "commission", commission.pk, program.workspace_id),
            ),
        ]
        for row, expected in rows:
            assert expected in refused_by_full_clean(row), row

    def test_a_review_refuses_another_workspaces_program(self):
        commission, elsewhere = CommissionFactory(), ProgramFactory()
        row = CommissionReview(commission=commission, program=elsewhere, action="held", actor="rule")
        [message] = refused_by_full_clean(row)
        assert message.startswith(f"Commission #{commission.pk} belongs to workspace {commission.program.workspace_id}")

    def test_an_audit_entry_refuses_another_workspaces_key(self, program):
        key, _ = agent_key_create(workspace=WorkspaceFactory(), name="bot", scopes=["programs:read"])
        row = AgentAuditEntry(workspace=program.workspace, key=key, key_masked=key.masked, action="a", object_type="o")
        [message] = refused_by_full_clean(row)
        assert message.startswith(f"Agent key #{key.pk} belongs to workspace {key.workspace_id}")

    def test_an_agent_keys_programs_are_of_its_workspace_however_they_are_added(self, program):
        key, _ = agent_key_create(workspace=WorkspaceFactory(), name="bot", scopes=["programs:read"])
        home = ProgramFactory(workspace=key.workspace)
        refusal = f"Program #{program.pk} belongs to workspace {program.workspace_id}, not to workspace "
        # add() writes in the caller's transaction: each refusal gets a savepoint of its own, as a caller would.
        with pytest.raises(ValidationError, match=refusal), transaction.atomic():
            key.programs.add(home, program)
        with pytest.raises(ValidationError, match=refusal), transaction.atomic():
            key.programs.set([program])
        with (
            pytest.raises(ValidationError, match=f"Agent key #{key.pk} belongs to workspace {key.workspace_id}"),
            transaction.atomic(),
        ):
            program.agent_keys.add(key)
        assert list(key.programs.all()) == []
        key.programs.add(home)
        home.agent_keys.add(key)
        assert list(key.programs.all()) == [home]

    def test_a_key_bound_to_no_workspace_takes_no_programs(self, program):
        key, _ = agent_key_create(workspace=program.workspace, name="old", scopes=["programs:read"])
        AgentKey.objects.filter(pk=key.pk).update(workspace=None)
        key.refresh_from_db()
        with pytest.raises(ValidationError, match=f"Agent key #{key.pk} belongs to no workspace"), transaction.atomic():
            key.programs.add(program)
        assert not key.programs.exists()

    def test_a_program_or_partner_with_relations_stays_in_its_workspace(self, program):
        enrolment = PartnerProgramFactory(program=program, partner__workspace=program.workspace)
        elsewhere, home = WorkspaceFactory(), program.workspace_id
        for row, related in ((enrolment.program, "partner programs"), (enrolment.partner, "partner programs")):
            row.workspace = elsewhere
            assert refused_by_full_clean(row) == [
                WORKSPACE_MOVE_REFUSED.format(
                    name=row._meta.verbose_name.capitalize(), pk=row.pk, related=related, workspace=home
                )
            ]

    def test_a_program_or_partner_without_relations_may_move(self, program):
        partner, elsewhere = PartnerFactory(workspace=program.workspace), WorkspaceFactory()
        for row in (program, partner):
            row.workspace = elsewhere
            row.full_clean()

    def test_same_workspace_skips_what_is_not_set(self, program):
        same_workspace(program=program, partner=None)
        same_workspace()


class TestServices:
    def test_enrolling_another_workspaces_partner_is_refused_and_emits_nothing(self, program, stranger):
        with pytest.raises(CrossWorkspace) as refused:
            partner_enroll(partner=stranger, program=program)
        assert refused.value.message == partner_refusal(stranger, "program", program.pk, program.workspace_id)
        assert not PartnerProgram.objects.exists() and not WebhookEvent.objects.exists()

    def test_a_link_for_another_workspaces_partner_is_refused_with_the_reason(self, program, stranger):
        with pytest.raises(PartnerNotEnrolled) as refused:
            referral_link_create(program=program, partner=stranger, short_link="mixed")
        assert str(refused.value) == partner_refusal(stranger, "program", program.pk, program.workspace_id)
        assert not ReferralLink.objects.exists()

    def test_a_commission_is_never_settled_into_another_program(self):
        sale = SaleFactory()
        elsewhere = ProgramFactory()
        with pytest.raises(CrossWorkspace) as refused:
            commission_settle(
                sale=sale,
                customer=sale.customer,
                first_sale_at=sale.sale_date,
                program=elsewhere,
                now=timezone.now(),
            )
        assert refused.value.message == SALE_OF_ANOTHER_PROGRAM.format(
            sale=sale.pk, customer=sale.customer_id, program=elsewhere.pk
        )
        assert not Commission.objects.exists()


class TestAgentApi:
    """The agent API reaches partner_enroll and referral_link_create only with objects of the key's workspace:
    another workspace's partner or program is a 404, as an unknown id is, and nothing is written."""

    def test_enrolling_another_workspaces_partner_is_not_found(self, program, stranger):
        agent = agent_for(program.workspace)
        response = agent.client.post(
            f"/api/agent/v1/partners/{stranger.pk}/enrollments", {"program_id": program.pk}, format="json"
        )
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
        assert response.json()["error"]["message"] == "Partner not found"
        assert not PartnerProgram.objects.exists()

    def test_enrolling_into_another_workspaces_program_is_not_found(self, program):
        partner = PartnerFactory(workspace=program.workspace)
        elsewhere = ProgramFactory()
        agent = agent_for(program.workspace)
        response = agent.client.post(
            f"/api/agent/v1/partners/{partner.pk}/enrollments", {"program_id": elsewhere.pk}, format="json"
        )
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "Program not found"
        assert not PartnerProgram.objects.exists()

    def test_a_partner_created_into_another_workspaces_program_is_not_found(self, program):
        elsewhere = ProgramFactory()
        agent = agent_for(program.workspace)
        response = agent.client.post(
            "/api/agent/v1/partners", {"name": "Ada", "program_id": elsewhere.pk}, format="json"
        )
        assert response.status_code == 404
        assert not PartnerProgram.objects.exists()

    def test_a_link_for_another_workspaces_partner_is_not_found(self, program, stranger):
        PartnerProgramFactory(partner=stranger, program=ProgramFactory(workspace=stranger.workspace))
        agent = agent_for(program.workspace)
        response = agent.client.post(
            "/api/agent/v1/links", {"program_id": program.pk, "partner_id": stranger.pk}, format="json"
        )
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "Partner not found"
        assert not ReferralLink.objects.exists()
