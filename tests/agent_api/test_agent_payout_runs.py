"""Payout runs through the agent API: POST /payouts/runs previews a run (payouts:write), /confirm pays it once with a
ledger debit per partner, GET /payouts/runs[/:id] and /payouts/payouts[/:id] read them (payouts:read), and
/payouts/payouts/:id/mark-paid and /mark-failed settle a PayPal or Wise payout by hand. A key sees the runs and
payouts of the programs it may see; writes are audited and replayed by their Idempotency-Key."""

from typing import Any

import pytest

from agent_api import messages
from agent_api.api.payouts import messages as payout_messages
from agent_api.models import AgentAuditEntry
from commissions.models import Commission, CommissionStatus, LedgerEntry
from payouts.models import Payout, PayoutMinimum, PayoutRun, PayoutStatus, Rail
from payouts.services import run_confirm, run_preview
from programs.models import AgentKey, Partner, Program
from tests.agent_api.conftest import Agent, agent_for
from tests.factories import PartnerFactory, ProgramFactory, WorkspaceFactory
from tests.helpers import platform_error
from tests.payouts.money import balance, credited, ledger_exact, payable_partner

pytestmark = pytest.mark.django_db

RUNS = "/api/agent/v1/payouts/runs"
PAYOUTS = "/api/agent/v1/payouts/payouts"
OURS = object()  # stands for the test's program id in a parametrized body
CURRENCY_REQUIRED = payout_messages.RUN_CURRENCY_INVALID.format(known="USD, EUR, VND")


def post(agent: Agent, path: str, body: Any = None, **headers: Any):
    return agent.client.post(path, {} if body is None else body, format="json", **headers)


def preview(agent: Agent, program: Program, currency: str = "USD", *, key: str = "", **fields: Any):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return post(agent, RUNS, {"program_id": program.pk, "currency": currency, **fields}, **headers)


def owed(program: Program, name: str, amount: int, *, rail: str = Rail.PAYPAL, currency: str = "USD") -> Partner:
    """A partner paid by `rail` with one credited commission of a fifth of `amount`."""
    partner = payable_partner(program, name=name, rail=rail)
    credited(partner, program, amount=amount, currency=currency)
    return partner


def actor_of(agent: Agent) -> str:
    [key] = [key for key in AgentKey.objects.all() if agent.raw_key.endswith(key.last4)]
    return f"agent key {key.masked}"


def not_found(message: str) -> dict[str, Any]:
    return platform_error(404, "NotFoundError", message, "not_found")


def bad_request(message: str) -> dict[str, Any]:
    return platform_error(400, "BadRequestError", message, messages.CODE_BAD_REQUEST)


def payout_debits(partner: Partner) -> list[int]:
    return list(
        LedgerEntry.objects.filter(partner=partner, kind=LedgerEntry.Kind.PAYOUT)
        .order_by("pk")
        .values_list("amount_cents", flat=True)
    )


def confirmed_payout(program: Program, name: str = "Ann", *, rail: str = Rail.PAYPAL) -> Payout:
    partner = owed(program, name, 10_000, rail=rail)
    run = run_preview(program=program, currency="USD", actor="command")
    [payout] = run_confirm(run_id=run.pk, actor="command")
    assert payout.partner_id == partner.pk
    return payout


class TestPreviewAndConfirm:
    def test_a_preview_lists_who_is_owed_and_a_confirm_debits_each_partner_once(self, agent, program):
        ann, bob = owed(program, "Ann", 10_000), owed(program, "Bob", 5_000)
        stranger = PartnerFactory.create(workspace=program.workspace, name="Cy")  # no portal account
        credited(stranger, program, amount=2_500)

        response = preview(agent, program)

        assert response.status_code == 201, response.json()
        run = response.json()["data"]
        assert (run["program_id"], run["currency"], run["status"], run["minimum_cents"]) == (
            program.pk,
            "USD",
            "preview",
            0,
        )
        assert [(line["partner_id"], line["amount_cents"], line["rail"], line["ready"]) for line in run["lines"]] == [
            (ann.pk, 2_000, "paypal", True),
            (bob.pk, 1_000, "paypal", True),
            (stranger.pk, 500, "", False),
        ]
        assert run["lines"][2]["reason"].startswith("no portal account")
        assert (run["total_cents"], run["payouts"], run["confirmed_at"]) == (3_000, [], None)
        assert [(entry["action"], entry["actor"]) for entry in run["audit"]] == [("previewed", actor_of(agent))]
        assert not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).exists()

        confirmed = post(agent, f"{RUNS}/{run['id']}/confirm")

        assert confirmed.status_code == 200, confirmed.json()
        data = confirmed.json()["data"]
        assert data["status"] == "confirmed" and data["confirmed_at"] is not None
        assert [(p["partner_id"], p["amount_cents"], p["status"], p["rail"]) for p in data["payouts"]] == [
            (ann.pk, 2_000, "pending", "paypal"),
            (bob.pk, 1_000, "pending", "paypal"),
        ]
        assert data["payouts"][0]["destination"] == ann.account.email
        assert data["payouts"][0]["commission_ids"] == list(
            Commission.objects.filter(partner=ann).values_list("pk", flat=True)
        )
        assert [entry["action"] for entry in data["audit"]] == ["previewed", "confirmed"]
        assert data["audit"][1]["actor"] == actor_of(agent)
        # One payout debit per partner, in the confirm's transaction; the partner without an account keeps hers.
        assert (payout_debits(ann), payout_debits(bob), payout_debits(stranger)) == ([-2_000], [-1_000], [])
        assert (balance(ann), balance(bob), balance(stranger)) == (0, 0, 500)
        for partner in (ann, bob, stranger):
            ledger_exact(partner)
        audit = AgentAuditEntry.objects.order_by("pk")
        assert [(e.action, e.object_type, e.object_id) for e in audit] == [
            ("payout_run.preview", "payout_run", str(run["id"])),
            ("payout_run.confirm", "payout_run", str(run["id"])),
        ]
        assert audit[1].before["status"] == "preview" and audit[1].after == data

    def test_a_run_is_confirmed_once(self, agent, program):
        ann = owed(program, "Ann", 10_000)
        run_id = preview(agent, program).json()["data"]["id"]
        assert post(agent, f"{RUNS}/{run_id}/confirm").status_code == 200

        again = post(agent, f"{RUNS}/{run_id}/confirm")

        assert again.json() == platform_error(
            409,
            "ConflictError",
            payout_messages.RUN_CONFIRMED.format(run_id=run_id),
            payout_messages.CODE_RUN_CONFIRMED,
        )
        assert payout_debits(ann) == [-2_000] and Payout.objects.count() == 1
        assert AgentAuditEntry.objects.filter(action="payout_run.confirm").count() == 1
        ledger_exact(ann)

    def test_the_minimum_is_the_programs_unless_given(self, agent, program):
        owed(program, "Ann", 10_000), owed(program, "Bob", 5_000)
        PayoutMinimum.objects.create(program=program, currency="USD", minimum_cents=1_500)
        defaulted = preview(agent, program).json()["data"]
        assert defaulted["minimum_cents"] == 1_500 and [line["partner"] for line in defaulted["lines"]] == ["Ann"]
        given = preview(agent, program, minimum_cents=0).json()["data"]
        assert [line["partner"] for line in given["lines"]] == ["Ann", "Bob"]

    def test_each_currency_pays_separately(self, agent, program):
        ann = owed(program, "Ann", 10_000)
        credited(ann, program, amount=50_000, currency="VND")
        run = preview(agent, program, "VND").json()["data"]
        assert [(line["amount_cents"], line["ready"]) for line in run["lines"]] == [(10_000, True)]
        assert post(agent, f"{RUNS}/{run['id']}/confirm").status_code == 200
        assert (balance(ann, "VND"), balance(ann, "USD")) == (0, 2_000)
        ledger_exact(ann)

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"currency": "USD"}, payout_messages.RUN_PROGRAM_ID_INVALID),
            ({"program_id": "abc", "currency": "USD"}, payout_messages.RUN_PROGRAM_ID_INVALID),
            ({"program_id": 0, "currency": "USD"}, payout_messages.RUN_PROGRAM_ID_INVALID),
            ({"program_id": True, "currency": "USD"}, payout_messages.RUN_PROGRAM_ID_INVALID),
            ({"program_id": OURS, "currency": "GBP"}, CURRENCY_REQUIRED),
            ({"program_id": OURS}, CURRENCY_REQUIRED),
            ({"program_id": OURS, "currency": "USD", "minimum_cents": -1}, payout_messages.RUN_MINIMUM_INVALID),
            ({"program_id": OURS, "currency": "USD", "minimum_cents": "lots"}, payout_messages.RUN_MINIMUM_INVALID),
            # int() reads other scripts' digits ("١" is 1): only ASCII digits are a number.
            ({"program_id": OURS, "currency": "USD", "minimum_cents": "١"}, payout_messages.RUN_MINIMUM_INVALID),
            ({"program_id": OURS, "currency": "USD", "minimum_cents": "５０"}, payout_messages.RUN_MINIMUM_INVALID),
            ({"program_id": "١", "currency": "USD"}, payout_messages.RUN_PROGRAM_ID_INVALID),
        ],
    )
    def test_bad_input_is_400_naming_it(self, agent, program, body, message):
        owed(program, "Ann", 10_000)
        sent = {name: program.pk if value is OURS else value for name, value in body.items()}
        assert post(agent, RUNS, sent).json() == bad_request(message)
        assert not PayoutRun.objects.exists() and not AgentAuditEntry.objects.exists()

    def test_numbers_written_in_ascii_digits_are_taken(self, agent, program):
        owed(program, "Ann", 10_000)
        response = post(agent, RUNS, {"program_id": str(program.pk), "currency": "USD", "minimum_cents": "2000"})
        assert response.status_code == 201, response.json()
        assert response.json()["data"]["minimum_cents"] == 2_000

    def test_a_body_that_is_not_an_object_names_the_first_field(self, agent):
        assert post(agent, RUNS, ["x"]).json() == bad_request(payout_messages.RUN_PROGRAM_ID_INVALID)

    def test_a_retry_with_the_same_idempotency_key_replays_the_first_answer(self, agent, program):
        ann = owed(program, "Ann", 10_000)
        first = preview(agent, program, key="run-1")
        again = preview(agent, program, key="run-1")
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        assert PayoutRun.objects.count() == 1
        run_id = first.json()["data"]["id"]

        confirmed = post(agent, f"{RUNS}/{run_id}/confirm", HTTP_IDEMPOTENCY_KEY="confirm-1")
        replayed = post(agent, f"{RUNS}/{run_id}/confirm", HTTP_IDEMPOTENCY_KEY="confirm-1")
        assert (confirmed.status_code, replayed.status_code) == (200, 200)
        assert replayed.json() == confirmed.json() and replayed["Idempotent-Replayed"] == "true"
        assert payout_debits(ann) == [-2_000]
        assert AgentAuditEntry.objects.count() == 2

        conflict = preview(agent, program, "EUR", key="run-1")
        assert conflict.json() == platform_error(
            409, "ConflictError", messages.IDEMPOTENCY_CONFLICT, messages.CODE_IDEMPOTENCY_CONFLICT
        )
        assert PayoutRun.objects.count() == 1


class TestReadingRuns:
    def test_runs_newest_first_with_filters(self, agent, workspace, program):
        owed(program, "Ann", 10_000)
        second_program = ProgramFactory.create(workspace=workspace)
        usd = run_preview(program=program, currency="USD", actor="command")
        eur = run_preview(program=program, currency="EUR", actor="command")
        other = run_preview(program=second_program, currency="USD", actor="command")
        run_confirm(run_id=usd.pk, actor="command")

        def ids(params: dict[str, Any] | None = None) -> list[int]:
            response = agent.get(RUNS, params)
            assert response.status_code == 200, response.json()
            return [run["id"] for run in response.json()["data"]]

        assert ids() == [other.pk, eur.pk, usd.pk]
        assert ids({"program_id": program.pk}) == [eur.pk, usd.pk]
        assert ids({"currency": "USD"}) == [other.pk, usd.pk]
        assert ids({"status": "confirmed"}) == [usd.pk]
        assert ids({"program_id": program.pk, "status": "preview", "currency": "EUR"}) == [eur.pk]
        page = agent.get(RUNS, {"limit": 2}).json()
        assert [run["id"] for run in page["data"]] == [other.pk, eur.pk]
        assert [run["id"] for run in agent.get(RUNS, {"cursor": page["next_cursor"]}).json()["data"]] == [usd.pk]

    def test_one_run_reads_as_it_is_listed(self, agent, program):
        owed(program, "Ann", 10_000)
        run = run_preview(program=program, currency="USD", actor="command")
        run_confirm(run_id=run.pk, actor="command")
        response = agent.get(f"{RUNS}/{run.pk}")
        assert response.status_code == 200
        assert response.json()["data"] == agent.get(RUNS).json()["data"][0]
        assert [entry["actor"] for entry in response.json()["data"]["audit"]] == ["command", "command"]

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"program_id": "abc"}, messages.PROGRAM_ID_FILTER_INVALID),
            ({"currency": "GBP"}, payout_messages.RUN_CURRENCY_FILTER_INVALID.format(known="USD, EUR, VND")),
            ({"status": "lost"}, payout_messages.RUN_STATUS_INVALID),
            ({"limit": "0"}, messages.LIMIT_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, params, message):
        assert agent.get(RUNS, params).json() == bad_request(message)

    def test_a_page_of_runs_reads_in_a_few_queries(self, agent, program, django_assert_max_num_queries):
        for name in ("Ann", "Bob", "Cy"):
            owed(program, name, 10_000)
        for currency in ("USD", "EUR"):
            run = run_preview(program=program, currency=currency, actor="command")
            run_confirm(run_id=run.pk, actor="command")
        with django_assert_max_num_queries(12):
            assert len(agent.get(RUNS).json()["data"]) == 2


class TestWhatAKeyMaySee:
    def test_other_workspaces_and_programs_are_404(self, workspace, program):
        sibling = ProgramFactory.create(workspace=workspace)
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        hidden_runs = [run_preview(program=p, currency="USD", actor="command") for p in (sibling, foreign)]
        hidden_payouts = [confirmed_payout(p) for p in (sibling, foreign)]
        limited = agent_for(workspace, programs=(program,))
        everything = agent_for(workspace)
        for agent, run, payout in (
            (limited, hidden_runs[0], hidden_payouts[0]),
            (everything, hidden_runs[1], hidden_payouts[1]),
        ):
            assert agent.get(f"{RUNS}/{run.pk}").json() == not_found(payout_messages.RUN_NOT_FOUND)
            assert post(agent, f"{RUNS}/{run.pk}/confirm").json() == not_found(payout_messages.RUN_NOT_FOUND)
            assert agent.get(f"{PAYOUTS}/{payout.pk}").json() == not_found(payout_messages.PAYOUT_NOT_FOUND)
            for action in ("mark-paid", "mark-failed"):
                response = post(agent, f"{PAYOUTS}/{payout.pk}/{action}", {"message": "x"})
                assert response.json() == not_found(payout_messages.PAYOUT_NOT_FOUND)
            assert preview(agent, run.program).json() == not_found(messages.PROGRAM_NOT_FOUND)
            assert agent.get(RUNS, {"program_id": run.program_id}).json() == not_found(messages.PROGRAM_NOT_FOUND)
            assert agent.get(PAYOUTS, {"program_id": run.program_id}).json() == not_found(messages.PROGRAM_NOT_FOUND)
            assert run.pk not in [r["id"] for r in agent.get(RUNS).json()["data"]]
            assert payout.pk not in [p["id"] for p in agent.get(PAYOUTS).json()["data"]]
        for malformed in ("abc", "0", str(10**30)):
            assert everything.get(f"{RUNS}/{malformed}").json() == not_found(payout_messages.RUN_NOT_FOUND)
            assert everything.get(f"{PAYOUTS}/{malformed}").json() == not_found(payout_messages.PAYOUT_NOT_FOUND)
        assert set(PayoutRun.objects.values_list("status", flat=True)) == {"preview", "confirmed"}
        assert set(Payout.objects.values_list("status", flat=True)) == {"pending"}
        assert not AgentAuditEntry.objects.exists()

    def test_a_run_id_filter_naming_a_run_the_key_may_not_see_is_404(self, workspace, program):
        sibling = ProgramFactory.create(workspace=workspace)
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        sibling_payout, foreign_payout = confirmed_payout(sibling), confirmed_payout(foreign)
        limited = agent_for(workspace, programs=(program,))
        everything = agent_for(workspace)
        for agent, hidden in ((limited, sibling_payout), (limited, foreign_payout), (everything, foreign_payout)):
            assert agent.get(PAYOUTS, {"run_id": hidden.run_id}).json() == not_found(payout_messages.RUN_NOT_FOUND)
        assert everything.get(PAYOUTS, {"run_id": 10**12}).json() == not_found(payout_messages.RUN_NOT_FOUND)
        own = confirmed_payout(program, "Bo")
        for agent in (limited, everything):
            assert [payout["id"] for payout in agent.get(PAYOUTS, {"run_id": own.run_id}).json()["data"]] == [own.pk]
        assert [
            payout["id"] for payout in everything.get(PAYOUTS, {"run_id": sibling_payout.run_id}).json()["data"]
        ] == [sibling_payout.pk]

    def test_no_key_is_401_on_every_route(self, program):
        payout = confirmed_payout(program)
        anonymous = Agent("agt_" + "x" * 43)
        anonymous.client.credentials()
        paths = [f"{RUNS}/{payout.run_id}", PAYOUTS, f"{PAYOUTS}/{payout.pk}", RUNS]
        for path in paths:
            assert anonymous.get(path).status_code == 401
        for path in [RUNS, f"{RUNS}/{payout.run_id}/confirm", f"{PAYOUTS}/{payout.pk}/mark-paid"]:
            assert post(anonymous, path).json()["error"]["code"] == "missing_api_key"
        unknown = Agent("agt_" + "x" * 43)
        assert unknown.get(RUNS).json()["error"]["code"] == "invalid_api_key"
        assert post(unknown, f"{PAYOUTS}/{payout.pk}/mark-failed", {"message": "x"}).status_code == 401

    def test_reads_need_payouts_read_and_writes_payouts_write(self, workspace, program):
        payout = confirmed_payout(program)
        unscoped = agent_for(workspace, scopes=("commissions:write",))
        reader = agent_for(workspace, scopes=("payouts:read",))
        writer = agent_for(workspace, scopes=("payouts:write",))

        def missing(scope: str) -> dict[str, Any]:
            return platform_error(
                403, "ForbiddenError", messages.SCOPE_MISSING.format(scope=scope), "missing_scope", {"scope": scope}
            )

        reads = [RUNS, f"{RUNS}/{payout.run_id}", PAYOUTS, f"{PAYOUTS}/{payout.pk}"]
        writes = [
            (RUNS, {"program_id": program.pk, "currency": "USD"}),
            (f"{RUNS}/{payout.run_id}/confirm", {}),
            (f"{PAYOUTS}/{payout.pk}/mark-paid", {}),
            (f"{PAYOUTS}/{payout.pk}/mark-failed", {"message": "bounced"}),
        ]
        for path in reads:
            assert unscoped.get(path).json() == missing("payouts:read")
            assert reader.get(path).status_code == 200
            assert writer.get(path).status_code == 200  # write includes read
        for path, body in writes:
            assert post(reader, path, body).json() == missing("payouts:write")
        assert PayoutRun.objects.count() == 1 and Payout.objects.get().status == PayoutStatus.PENDING
        assert not AgentAuditEntry.objects.exists()


class TestPayouts:
    def test_payouts_newest_first_with_filters(self, agent, workspace, program):
        ann, bob = owed(program, "Ann", 10_000), owed(program, "Bob", 5_000)
        first = run_preview(program=program, currency="USD", actor="command")
        ann_payout, bob_payout = run_confirm(run_id=first.pk, actor="command")
        credited(ann, program, amount=50_000, currency="EUR")
        eur = run_preview(program=program, currency="EUR", actor="command")
        [euro_payout] = run_confirm(run_id=eur.pk, actor="command")
        assert (ann_payout.partner_id, bob_payout.partner_id) == (ann.pk, bob.pk)

        def ids(params: dict[str, Any] | None = None) -> list[int]:
            response = agent.get(PAYOUTS, params)
            assert response.status_code == 200, response.json()
            return [payout["id"] for payout in response.json()["data"]]

        assert ids() == [euro_payout.pk, bob_payout.pk, ann_payout.pk]
        assert ids({"run_id": first.pk}) == [bob_payout.pk, ann_payout.pk]
        assert ids({"partner_id": ann.pk}) == [euro_payout.pk, ann_payout.pk]
        assert ids({"program_id": program.pk, "status": "pending"}) == [euro_payout.pk, bob_payout.pk, ann_payout.pk]
        assert ids({"status": "paid"}) == []
        one = agent.get(f"{PAYOUTS}/{euro_payout.pk}").json()["data"]
        assert one == agent.get(PAYOUTS).json()["data"][0]
        assert (one["amount_cents"], one["currency"], one["run_id"], one["partner_name"]) == (
            10_000,
            "EUR",
            eur.pk,
            "Ann",
        )

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"run_id": "x"}, payout_messages.RUN_ID_FILTER_INVALID),
            ({"partner_id": "-1"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"program_id": "1.5"}, messages.PROGRAM_ID_FILTER_INVALID),
            ({"status": "lost"}, payout_messages.PAYOUT_STATUS_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, params, message):
        assert agent.get(PAYOUTS, params).json() == bad_request(message)

    def test_marking_a_manual_payout_paid_pays_its_commissions_once(self, agent, program):
        payout = confirmed_payout(program)
        response = post(agent, f"{PAYOUTS}/{payout.pk}/mark-paid", {"reference": "PAYPAL-123"})
        assert response.status_code == 200, response.json()
        data = response.json()["data"]
        assert (data["status"], data["rail_reference"], data["paid_at"] is not None) == ("paid", "PAYPAL-123", True)
        assert set(Commission.objects.filter(pk__in=data["commission_ids"]).values_list("status", flat=True)) == {
            CommissionStatus.PAID
        }
        assert [entry["action"] for entry in agent.get(f"{RUNS}/{payout.run_id}").json()["data"]["audit"]] == [
            "previewed",
            "confirmed",
            "marked_paid",
        ]
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_id, entry.before["status"], entry.after) == (
            "payout.mark_paid",
            str(payout.pk),
            "pending",
            data,
        )

        for action, body in (("mark-paid", {}), ("mark-failed", {"message": "bounced"})):
            again = post(agent, f"{PAYOUTS}/{payout.pk}/{action}", body)
            assert again.json() == platform_error(
                409,
                "ConflictError",
                payout_messages.PAYOUT_NOT_OPEN.format(status="paid"),
                payout_messages.CODE_PAYOUT_STATE,
            )
        assert payout_debits(payout.partner) == [-2_000] and balance(payout.partner) == 0
        ledger_exact(payout.partner)

    def test_marking_a_manual_payout_failed_puts_the_money_back(self, agent, program):
        payout = confirmed_payout(program)
        response = post(agent, f"{PAYOUTS}/{payout.pk}/mark-failed", {"message": "PayPal account closed"})
        assert response.status_code == 200, response.json()
        data = response.json()["data"]
        assert (data["status"], data["failure_code"], data["failure_message"]) == (
            "failed",
            "manual",
            "PayPal account closed",
        )
        assert data["commission_ids"] == []  # free to be paid by the next run
        assert payout_debits(payout.partner) == [-2_000, 2_000] and balance(payout.partner) == 2_000
        ledger_exact(payout.partner)
        assert AgentAuditEntry.objects.get().action == "payout.mark_failed"

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, payout_messages.FAILURE_MESSAGE_INVALID),
            ({"message": ""}, payout_messages.FAILURE_MESSAGE_INVALID),
            ({"message": "x" * 501}, payout_messages.FAILURE_MESSAGE_INVALID),
            ({"message": "bounced", "code": ""}, payout_messages.FAILURE_CODE_INVALID),
        ],
    )
    def test_mark_failed_needs_a_message(self, agent, program, body, message):
        payout = confirmed_payout(program)
        assert post(agent, f"{PAYOUTS}/{payout.pk}/mark-failed", body).json() == bad_request(message)
        bad_reference = post(agent, f"{PAYOUTS}/{payout.pk}/mark-paid", {"reference": "r" * 256})
        assert bad_reference.json() == bad_request(payout_messages.REFERENCE_INVALID)
        payout.refresh_from_db()
        assert payout.status == PayoutStatus.PENDING and not AgentAuditEntry.objects.exists()

    def test_a_stripe_payout_is_never_marked_by_hand(self, agent, program):
        payout = confirmed_payout(program, rail=Rail.STRIPE)
        for action, body in (("mark-paid", {"reference": "by hand"}), ("mark-failed", {"message": "no"})):
            response = post(agent, f"{PAYOUTS}/{payout.pk}/{action}", body)
            assert response.json() == platform_error(
                409, "ConflictError", payout_messages.PAYOUT_STRIPE_BY_HAND, payout_messages.CODE_PAYOUT_RAIL
            )
        payout.refresh_from_db()
        assert payout.status == PayoutStatus.PENDING and payout_debits(payout.partner) == [-2_000]
        assert not AgentAuditEntry.objects.exists()

    def test_a_retried_mark_paid_replays_the_first_answer(self, agent, program):
        payout = confirmed_payout(program)
        path = f"{PAYOUTS}/{payout.pk}/mark-paid"
        first = post(agent, path, {"reference": "A1"}, HTTP_IDEMPOTENCY_KEY="paid-1")
        again = post(agent, path, {"reference": "A1"}, HTTP_IDEMPOTENCY_KEY="paid-1")
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        conflict = post(agent, path, {"reference": "B2"}, HTTP_IDEMPOTENCY_KEY="paid-1")
        assert conflict.json()["error"]["code"] == messages.CODE_IDEMPOTENCY_CONFLICT
        assert AgentAuditEntry.objects.count() == 1
        ledger_exact(payout.partner)
