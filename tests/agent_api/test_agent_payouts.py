"""GET /api/agent/v1/payouts/balances and /payouts/withdrawals: balances from the ledger (restricted to a limited
key's programs), withdrawals of the partners a key may see, filters, cursor pagination. POST
/payouts/withdrawals/:id/mark-paid: the payout entry, the refusals, idempotency and the audit entry."""

from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agent_api import messages
from agent_api.models import AgentAuditEntry
from commissions.approval import commission_approve
from commissions.models import Commission, CommissionStatus, LedgerEntry, Withdrawal
from commissions.services import (
    partner_balance,
    refund_apply,
    withdrawal_cancel,
    withdrawal_mark_paid,
    withdrawal_request,
)
from programs.models import Partner, Program
from tests.agent_api.conftest import agent_for
from tests.factories import (
    CommissionFactory,
    PartnerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    ReferralLinkFactory,
    WorkspaceFactory,
)
from tests.helpers import platform_error, run_together

pytestmark = pytest.mark.django_db

BALANCES = "/api/agent/v1/payouts/balances"
WITHDRAWALS = "/api/agent/v1/payouts/withdrawals"


def credited(program: Program, partner: Partner | None = None, amount: int = 2_000, **fields: Any) -> Commission:
    """A commission of this program approved through the service, so its credit is in the ledger."""
    link = ReferralLinkFactory.create(program=program, **({"partner": partner} if partner else {}))
    commission = CommissionFactory.create(
        sale__customer__link=link, amount_cents=amount, hold_until=timezone.now(), **fields
    )
    assert commission_approve(commission_id=commission.pk)
    return commission


def enrolled(program: Program) -> Partner:
    return PartnerProgramFactory.create(program=program, partner__workspace=program.workspace).partner


def data(response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def by_partner(response) -> dict[int, dict[str, Any]]:
    return {item["partner_id"]: item for item in data(response)}


class TestScopes:
    @pytest.mark.parametrize("path", [BALANCES, WITHDRAWALS])
    def test_a_key_without_payouts_read_gets_403_naming_the_scope(self, workspace, program, path):
        response = agent_for(workspace, scopes=("commissions:write",)).get(path)
        assert response.json() == platform_error(
            403,
            "ForbiddenError",
            messages.SCOPE_MISSING.format(scope="payouts:read"),
            "missing_scope",
            {"scope": "payouts:read"},
        )

    @pytest.mark.parametrize("path", [BALANCES, WITHDRAWALS])
    def test_write_includes_read(self, workspace, program, path):
        assert agent_for(workspace, scopes=("payouts:write",)).get(path).status_code == 200


class TestBalances:
    def test_a_whole_workspace_key_reads_the_partners_whole_ledger(self, agent, program):
        commission = credited(program, amount=2_000)
        partner = commission.partner
        credited(program, partner=partner, amount=1_000, sale__currency="EUR")
        withdrawal = withdrawal_request(partner=partner, amount_cents=500, currency="USD")
        assert withdrawal_mark_paid(withdrawal=withdrawal)
        withdrawal_request(partner=partner, amount_cents=300, currency="USD")
        refund_apply(sale=commission.sale, amount=5_000, refund_id="re_1", reason="")  # claws back 1,000
        idle = enrolled(program)
        assert by_partner(agent.get(BALANCES)) == {
            partner.pk: {
                "partner_id": partner.pk,
                "partner_name": partner.name,
                "ledger_scope": "partner",
                "balances": [
                    {"currency": "EUR", "balance_cents": 1_000, "open_withdrawals_cents": 0},
                    # 2,000 credited - 500 paid out - 1,000 clawed back; the open 300 still fits.
                    {"currency": "USD", "balance_cents": 500, "open_withdrawals_cents": 300},
                ],
            },
            idle.pk: {"partner_id": idle.pk, "partner_name": idle.name, "ledger_scope": "partner", "balances": []},
        }

    def test_the_balance_is_the_sum_of_the_ledger(self, agent, program):
        partner = credited(program, amount=2_000).partner
        LedgerEntry.objects.create(partner=partner, kind="adjustment", amount_cents=-150, currency="USD")
        [item] = data(agent.get(BALANCES))
        total = sum(LedgerEntry.objects.filter(partner=partner).values_list("amount_cents", flat=True))
        assert item["balances"][0]["balance_cents"] == total == 1_850

    def test_a_limited_key_reads_only_the_ledger_of_its_programs(self, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        partner = credited(program, amount=2_000).partner
        credited(other, partner=partner, amount=700)
        withdrawal = withdrawal_request(partner=partner, amount_cents=400, currency="USD")
        assert withdrawal_mark_paid(withdrawal=withdrawal)
        only_other = credited(other, amount=900).partner
        limited = by_partner(agent_for(workspace, programs=(program,)).get(BALANCES))
        # The payout has no program: it is left out, and so is the other program's credit.
        assert limited == {
            partner.pk: {
                "partner_id": partner.pk,
                "partner_name": partner.name,
                "ledger_scope": "programs",
                "balances": [{"currency": "USD", "balance_cents": 2_000, "open_withdrawals_cents": 0}],
            }
        }
        whole = by_partner(agent_for(workspace).get(BALANCES))
        assert whole[partner.pk]["balances"][0]["balance_cents"] == 2_300
        assert whole[only_other.pk]["balances"][0]["balance_cents"] == 900

    def test_program_id_reads_that_programs_partners_and_ledger(self, agent, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        partner = credited(program, amount=2_000).partner
        credited(other, partner=partner, amount=700)
        credited(other, amount=900)
        [item] = data(agent.get(BALANCES, {"program_id": other.pk, "partner_id": partner.pk}))
        assert (item["ledger_scope"], item["balances"][0]["balance_cents"]) == ("programs", 700)
        assert len(data(agent.get(BALANCES, {"program_id": other.pk}))) == 2
        assert [i["partner_id"] for i in data(agent.get(BALANCES, {"partner_id": partner.pk}))] == [partner.pk]

    def test_the_partners_the_key_may_see(self, workspace, program):
        mine = enrolled(program)
        unenrolled = PartnerFactory.create(workspace=workspace)
        elsewhere = enrolled(ProgramFactory.create(workspace=workspace))
        credited(ProgramFactory.create(workspace=WorkspaceFactory.create()))
        whole = by_partner(agent_for(workspace).get(BALANCES))
        assert list(whole) == [elsewhere.pk, unenrolled.pk, mine.pk]
        assert whole[unenrolled.pk]["balances"] == []
        assert list(by_partner(agent_for(workspace, programs=(program,)).get(BALANCES))) == [mine.pk]

    def test_a_program_the_key_may_not_see_is_404(self, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        response = agent_for(workspace, programs=(program,)).get(BALANCES, {"program_id": other.pk})
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"partner_id": "x"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"program_id": "-3"}, messages.PROGRAM_ID_FILTER_INVALID),
            ({"limit": "0"}, messages.LIMIT_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, params, message):
        response = agent.get(BALANCES, params)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")

    def test_pages_cover_every_partner_once(self, workspace, program):
        partners = [enrolled(program).pk for _ in range(5)]
        agent = agent_for(workspace)
        seen: list[int] = []
        cursor = None
        while True:
            response = agent.get(BALANCES, {"limit": 2, **({"cursor": cursor} if cursor else {})})
            seen += [item["partner_id"] for item in data(response)]
            cursor = response.json()["next_cursor"]
            if cursor is None:
                break
        assert seen == sorted(partners, reverse=True)

    @pytest.mark.parametrize("limited", [False, True])
    def test_a_page_costs_the_same_queries_whatever_its_size(
        self, workspace, program, limited, django_assert_num_queries
    ):
        for _ in range(6):
            partner = credited(program).partner
            withdrawal_request(partner=partner, amount_cents=100, currency="USD")
        agent = agent_for(workspace, programs=(program,) if limited else ())
        agent.get(BALANCES)  # the first call also records the key's last use
        # the key, the programs it is limited to, the page, the balances, the open withdrawals
        for limit in (1, 5):
            with django_assert_num_queries(5):
                assert len(data(agent.get(BALANCES, {"limit": limit}))) == limit


class TestWithdrawals:
    def test_an_item_says_what_it_pays_and_when_it_was_paid(self, agent, program):
        partner = credited(program, amount=2_000).partner
        paid = withdrawal_request(partner=partner, amount_cents=500, currency="USD")
        assert withdrawal_mark_paid(withdrawal=paid)
        paid.refresh_from_db()
        cancelled = withdrawal_request(partner=partner, amount_cents=200, currency="USD")
        assert withdrawal_cancel(withdrawal=cancelled)
        open_ = withdrawal_request(partner=partner, amount_cents=300, currency="USD")
        items = data(agent.get(WITHDRAWALS))
        assert [(i["id"], i["status"]) for i in items] == [
            (open_.pk, "open"),
            (cancelled.pk, "cancelled"),
            (paid.pk, "paid"),
        ]
        assert items[2] == {
            "id": paid.pk,
            "partner_id": partner.pk,
            "partner_name": partner.name,
            "amount_cents": 500,
            "requested_cents": 500,
            "currency": "USD",
            "status": "paid",
            "created_at": paid.created_at.isoformat(),
            "updated_at": paid.updated_at.isoformat(),
            "paid_at": paid.updated_at.isoformat(),
        }
        assert items[0]["paid_at"] is None and items[1]["paid_at"] is None

    def test_filters_by_partner_and_status(self, agent, program):
        first = credited(program).partner
        second = credited(program).partner
        a = withdrawal_request(partner=first, amount_cents=100, currency="USD")
        b = withdrawal_request(partner=second, amount_cents=100, currency="USD")
        assert withdrawal_cancel(withdrawal=b)
        ids = lambda response: [item["id"] for item in data(response)]  # noqa: E731
        assert ids(agent.get(WITHDRAWALS, {"partner_id": first.pk})) == [a.pk]
        assert ids(agent.get(WITHDRAWALS, {"status": "cancelled"})) == [b.pk]
        assert ids(agent.get(WITHDRAWALS, {"status": "paid"})) == []

    def test_only_partners_of_the_programs_the_key_may_see(self, workspace, program):
        mine = withdrawal_request(partner=credited(program).partner, amount_cents=100, currency="USD")
        other_partner = credited(ProgramFactory.create(workspace=workspace)).partner
        other = withdrawal_request(partner=other_partner, amount_cents=100, currency="USD")
        foreign_partner = credited(ProgramFactory.create(workspace=WorkspaceFactory.create())).partner
        withdrawal_request(partner=foreign_partner, amount_cents=100, currency="USD")
        assert [i["id"] for i in data(agent_for(workspace).get(WITHDRAWALS))] == [other.pk, mine.pk]
        assert [i["id"] for i in data(agent_for(workspace, programs=(program,)).get(WITHDRAWALS))] == [mine.pk]

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"status": "pending"}, messages.WITHDRAWAL_STATUS_INVALID),
            ({"partner_id": "1e3"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"cursor": "nope"}, messages.CURSOR_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, params, message):
        response = agent.get(WITHDRAWALS, params)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")

    def test_the_status_message_names_every_state(self):
        assert messages.WITHDRAWAL_STATUS_INVALID.endswith(", ".join(Withdrawal.Status.values))

    def test_pages_cover_every_withdrawal_once_at_a_constant_cost(self, workspace, program, django_assert_num_queries):
        made = []
        for _ in range(5):
            made.append(withdrawal_request(partner=credited(program).partner, amount_cents=100, currency="USD").pk)
        agent = agent_for(workspace)
        agent.get(WITHDRAWALS)  # the first call also records the key's last use
        seen: list[int] = []
        cursor = None
        while True:
            # the key, the programs it is limited to, the page (partner joined in)
            with django_assert_num_queries(3):
                response = agent.get(WITHDRAWALS, {"limit": 2, **({"cursor": cursor} if cursor else {})})
            seen += [item["id"] for item in data(response)]
            cursor = response.json()["next_cursor"]
            if cursor is None:
                break
        assert seen == sorted(made, reverse=True)


def mark_paid(agent, withdrawal: Withdrawal | str, **headers):
    withdrawal_id = withdrawal.pk if isinstance(withdrawal, Withdrawal) else withdrawal
    return agent.client.post(f"{WITHDRAWALS}/{withdrawal_id}/mark-paid", {}, format="json", **headers)


class TestMarkPaid:
    def test_it_pays_the_withdrawal_into_the_ledger_and_audits_it(self, agent, program):
        commission = credited(program, amount=2_000)
        partner = commission.partner
        withdrawal = withdrawal_request(partner=partner, amount_cents=2_000, currency="USD")
        response = mark_paid(agent, withdrawal)
        assert response.status_code == 200
        data = response.json()["data"]
        withdrawal.refresh_from_db()
        assert withdrawal.status == Withdrawal.Status.PAID
        assert (data["id"], data["status"], data["amount_cents"], data["paid_at"]) == (
            withdrawal.pk,
            "paid",
            2_000,
            withdrawal.updated_at.isoformat(),
        )
        payout = LedgerEntry.objects.get(kind=LedgerEntry.Kind.PAYOUT)
        assert (payout.partner_id, payout.amount_cents, payout.program_id) == (partner.pk, -2_000, None)
        assert partner_balance(partner_id=partner.pk, currency="USD") == 0
        commission.refresh_from_db()
        assert commission.status == CommissionStatus.PAID
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == (
            "withdrawal.mark_paid",
            "withdrawal",
            str(withdrawal.pk),
        )
        assert (entry.before["status"], entry.before["paid_at"], entry.after) == ("open", None, data)

    def test_a_key_with_payouts_read_only_gets_403_naming_payouts_write(self, workspace, program):
        withdrawal = withdrawal_request(partner=credited(program).partner, amount_cents=100, currency="USD")
        response = mark_paid(agent_for(workspace, scopes=("payouts:read", "commissions:write")), withdrawal)
        assert response.json() == platform_error(
            403,
            "ForbiddenError",
            messages.SCOPE_MISSING.format(scope="payouts:write"),
            "missing_scope",
            {"scope": "payouts:write"},
        )
        withdrawal.refresh_from_db()
        assert withdrawal.status == Withdrawal.Status.OPEN
        assert not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).exists()

    def test_a_withdrawal_outside_the_key_is_404(self, workspace, program):
        other_partner = credited(ProgramFactory.create(workspace=workspace)).partner
        outside = withdrawal_request(partner=other_partner, amount_cents=100, currency="USD")
        foreign_partner = credited(ProgramFactory.create(workspace=WorkspaceFactory.create())).partner
        foreign = withdrawal_request(partner=foreign_partner, amount_cents=100, currency="USD")
        limited = agent_for(workspace, programs=(program,))
        everything = agent_for(workspace)
        not_found = platform_error(404, "NotFoundError", messages.WITHDRAWAL_NOT_FOUND, "not_found")
        for agent, withdrawal in ((limited, outside), (everything, foreign)):
            assert mark_paid(agent, withdrawal).json() == not_found
        for malformed in ("abc", "0", str(10**30)):
            assert mark_paid(everything, malformed).json() == not_found
        assert set(Withdrawal.objects.values_list("status", flat=True)) == {Withdrawal.Status.OPEN}
        assert not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).exists()
        assert not AgentAuditEntry.objects.exists()

    @pytest.mark.parametrize("status", ["paid", "cancelled"])
    def test_a_withdrawal_that_is_not_open_is_409(self, agent, program, status):
        partner = credited(program).partner
        withdrawal = withdrawal_request(partner=partner, amount_cents=100, currency="USD")
        if status == "paid":
            assert withdrawal_mark_paid(withdrawal=withdrawal)
        else:
            assert withdrawal_cancel(withdrawal=withdrawal)
        payouts = LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).count()
        response = mark_paid(agent, withdrawal)
        assert response.json() == platform_error(
            409,
            "ConflictError",
            messages.WITHDRAWAL_NOT_OPEN.format(status=status),
            messages.CODE_WITHDRAWAL_STATE,
        )
        assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).count() == payouts
        assert not AgentAuditEntry.objects.exists()

    def test_a_retry_with_the_same_idempotency_key_pays_once(self, agent, program):
        partner = credited(program, amount=2_000).partner
        withdrawal = withdrawal_request(partner=partner, amount_cents=1_500, currency="USD")
        first = mark_paid(agent, withdrawal, HTTP_IDEMPOTENCY_KEY="pay-1")
        again = mark_paid(agent, withdrawal, HTTP_IDEMPOTENCY_KEY="pay-1")
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).count() == 1
        assert partner_balance(partner_id=partner.pk, currency="USD") == 500
        assert AgentAuditEntry.objects.count() == 1
        other = withdrawal_request(partner=partner, amount_cents=500, currency="USD")
        conflict = mark_paid(agent, other, HTTP_IDEMPOTENCY_KEY="pay-1")
        assert conflict.json() == platform_error(
            409, "ConflictError", messages.IDEMPOTENCY_CONFLICT, messages.CODE_IDEMPOTENCY_CONFLICT
        )
        other.refresh_from_db()
        assert other.status == Withdrawal.Status.OPEN


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_mark_paid_calls_write_one_payout(workspace, program):
    partner = credited(program, amount=2_000).partner
    withdrawal = withdrawal_request(partner=partner, amount_cents=2_000, currency="USD")
    agent = agent_for(workspace)

    def send(_: int) -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent.raw_key}")
        return client.post(f"{WITHDRAWALS}/{withdrawal.pk}/mark-paid", {}, format="json").status_code

    assert sorted(run_together(3, send)) == [200, 409, 409]
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).count() == 1
    assert partner_balance(partner_id=partner.pk, currency="USD") == 0
    assert AgentAuditEntry.objects.count() == 1
