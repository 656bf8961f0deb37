"""`manage.py payouts`: preview, confirm, list, show, reconcile and export runs through payouts.services, audited
as "command", with a clear error for an unknown program, run or currency."""

import csv
import io
from datetime import timedelta
from io import StringIO
from pathlib import Path
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from payouts.models import Payout, PayoutMinimum, PayoutRun, PayoutRunAudit, PayoutStatus, Rail
from payouts.services import run_confirm, run_preview
from programs.models import Partner, Program
from tests.factories import PartnerFactory, ProgramFactory
from tests.payouts.money import balance, credited, ledger_exact, payable_partner

pytestmark = pytest.mark.django_db


def payouts(*args: str) -> str:
    out = StringIO()
    call_command("payouts", *args, stdout=out)
    return out.getvalue()


def owed(program: Program, name: str, amount: int, *, rail: str = Rail.PAYPAL, **account: str) -> Partner:
    partner = payable_partner(program, name=name, rail=rail, **account)
    credited(partner, program, amount=amount)
    return partner


@pytest.fixture
def program() -> Program:
    return ProgramFactory.create(name="Acme Pro")


def test_preview_then_confirm_pays_each_ready_partner_once(program):
    ann, bob = owed(program, "Ann", 10_000), owed(program, "Bob", 5_000)
    stranger = PartnerFactory.create(workspace=program.workspace, name="Cy")
    credited(stranger, program, amount=2_500)

    shown = payouts("preview", "--program", str(program.pk), "--currency", "usd")

    run = PayoutRun.objects.get()
    assert (run.currency, run.status, run.minimum_cents) == ("USD", "preview", 0)
    assert f"Payout run #{run.pk} (preview)" in shown and "2 payable, 30.00 USD" in shown
    assert f"partner #{ann.pk} Ann: 20.00 USD by paypal (ready)" in shown
    assert f"partner #{stranger.pk} Cy: 5.00 USD by no payout account (not paid: no portal account" in shown
    assert f"manage.py payouts confirm {run.pk}" in shown
    assert balance(ann) == 2_000  # a preview debits nothing

    confirmed = payouts("confirm", str(run.pk))

    assert f"Run #{run.pk} confirmed: 2 payout(s), 30.00 USD." in confirmed
    assert f"manage.py payouts export {run.pk} --rail paypal" in confirmed
    assert sorted(Payout.objects.values_list("partner_id", "amount_cents")) == sorted(
        [(ann.pk, 2_000), (bob.pk, 1_000)]
    )
    assert (balance(ann), balance(bob), balance(stranger)) == (0, 0, 500)
    for partner in (ann, bob, stranger):
        ledger_exact(partner)
    audit = list(PayoutRunAudit.objects.filter(run=run).order_by("pk").values_list("action", "actor"))
    assert audit == [("previewed", "command"), ("confirmed", "command")]

    with pytest.raises(CommandError, match=f"Payout run #{run.pk} is already confirmed"):
        payouts("confirm", str(run.pk))
    assert Payout.objects.count() == 2


def test_the_minimum_is_the_programs_unless_given(program):
    owed(program, "Ann", 10_000), owed(program, "Bob", 5_000)
    PayoutMinimum.objects.create(program=program, currency="USD", minimum_cents=1_500)
    payouts("preview", "--program", str(program.pk), "--currency", "USD")
    payouts("preview", "--program", str(program.pk), "--currency", "USD", "--minimum", "0")
    first, second = PayoutRun.objects.order_by("pk")
    assert [line["partner"] for line in first.lines] == ["Ann"] and first.minimum_cents == 1_500
    assert [line["partner"] for line in second.lines] == ["Ann", "Bob"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("preview", "--program", "987654", "--currency", "USD"), "Program 987654 does not exist"),
        (
            ("preview", "--program", "{program}", "--currency", "GBP"),
            "Unknown currency 'GBP': use one of USD",
        ),
        (("preview", "--program", "{program}", "--currency", "USD", "--minimum", "-5"), "minimum_cents must be 0"),
        # int() reads other scripts' digits ("١" is 1): only ASCII digits are a number.
        (("preview", "--program", "{program}", "--currency", "USD", "--minimum", "١٠٠"), "'١٠٠' is not a whole number"),
        (("preview", "--program", "١", "--currency", "USD"), "'١' is not a whole number"),
        (("confirm", "١"), "'١' is not a whole number"),
        (("confirm", "987654"), "Payout run 987654 does not exist"),
        (("show", "987654"), "Payout run 987654 does not exist"),
        (("list", "--program", "987654"), "Program 987654 does not exist"),
        (("export", "987654", "--rail", "paypal", "--output", "out.csv"), "Payout run 987654 does not exist"),
    ],
)
def test_unknown_ids_and_currencies_are_clear_errors(program, args, message):
    with pytest.raises(CommandError, match=message):
        payouts(*[arg.format(program=program.pk) for arg in args])
    assert not PayoutRun.objects.exists()


def test_list_and_show(program):
    owed(program, "Ann", 10_000)
    other = ProgramFactory.create(name="Other")
    usd = run_preview(program=program, currency="USD", actor="command")
    run_confirm(run_id=usd.pk, actor="command")
    eur = run_preview(program=program, currency="EUR", actor="command")
    elsewhere = run_preview(program=other, currency="USD", actor="command")

    listed = payouts("list").splitlines()
    assert [line.split()[0] for line in listed] == [f"#{elsewhere.pk}", f"#{eur.pk}", f"#{usd.pk}"]
    assert "confirmed" in listed[2] and "1 payable, 20.00 USD" in listed[2]
    assert [line.split()[0] for line in payouts("list", "--program", str(program.pk)).splitlines()] == [
        f"#{eur.pk}",
        f"#{usd.pk}",
    ]
    assert [line.split()[0] for line in payouts("list", "--limit", "1").splitlines()] == [f"#{elsewhere.pk}"]

    shown = payouts("show", str(usd.pk))
    payout = Payout.objects.get()
    assert f"Payout run #{usd.pk} (confirmed)" in shown
    assert f"payout #{payout.pk} partner #{payout.partner_id} Ann: 20.00 USD by paypal to {payout.destination}" in shown
    assert "previewed by command" in shown and "confirmed by command" in shown
    assert "Nobody is owed the minimum." in payouts("show", str(eur.pk))


def test_list_says_when_there_is_no_run():
    assert payouts("list") == "No payout runs.\n"


def test_reconcile_reports_what_the_reconciler_did():
    with mock.patch("payouts.management.commands.payouts.payouts_reconcile", return_value={}):
        assert payouts("reconcile") == "No Stripe payout left unsettled.\n"
    with mock.patch(
        "payouts.management.commands.payouts.payouts_reconcile", return_value={"paid": 2, "sent": 1}
    ) as reconcile:
        assert payouts("reconcile") == "Reconciled Stripe payouts: 2 paid, 1 sent.\n"
    reconcile.assert_called_once_with()


def test_reconcile_leaves_manual_payouts_alone(program):
    # Only Stripe payouts are reconciled: a PayPal one waits for the owner, whatever its age.
    owed(program, "Ann", 10_000)
    run = run_preview(program=program, currency="USD", actor="command")
    run_confirm(run_id=run.pk, actor="command")
    Payout.objects.update(updated_at=timezone.now() - timedelta(days=1))
    assert payouts("reconcile") == "No Stripe payout left unsettled.\n"


def test_export_writes_the_rails_batch_file_and_marks_the_payouts_processing(program, tmp_path: Path):
    ann = owed(program, "Ann", 10_000)
    wise = owed(program, "Bob", 5_000, rail=Rail.WISE, holder_name="Robert B")
    run = run_preview(program=program, currency="USD", actor="command")
    run_confirm(run_id=run.pk, actor="command")
    paypal_file, wise_file = tmp_path / "paypal.csv", tmp_path / "wise.csv"

    said = payouts("export", str(run.pk), "--rail", "paypal", "--output", str(paypal_file))

    assert said == f"Wrote 1 paypal payout(s), 20.00 USD, to {paypal_file}.\n"
    ann_payout = Payout.objects.get(partner=ann)
    [row] = list(csv.reader(io.StringIO(paypal_file.read_text())))
    assert ann.account is not None
    assert row[:4] == [ann.account.email, "20.00", "USD", f"payout-{ann_payout.pk}"]
    assert ann_payout.status == PayoutStatus.PROCESSING

    payouts("export", str(run.pk), "--rail", "wise", "--output", str(wise_file))
    header, line = list(csv.reader(io.StringIO(wise_file.read_text())))
    assert header[0] == "name" and line[0] == "Robert B" and line[5] == "10.00"
    assert Payout.objects.get(partner=wise).status == PayoutStatus.PROCESSING
    exported = PayoutRunAudit.objects.filter(run=run, action="exported").values_list("actor", "detail")
    assert list(exported.order_by("pk")) == [("command", "1 paypal payouts"), ("command", "1 wise payouts")]
    ledger_exact(ann)


def test_export_refuses_a_run_not_confirmed_or_with_nothing_open(program, tmp_path: Path):
    owed(program, "Ann", 10_000)
    run = run_preview(program=program, currency="USD", actor="command")
    target = tmp_path / "out.csv"
    with pytest.raises(CommandError, match=f"Payout run #{run.pk} is not confirmed"):
        payouts("export", str(run.pk), "--rail", "paypal", "--output", str(target))
    run_confirm(run_id=run.pk, actor="command")
    with pytest.raises(CommandError, match=f"No open wise payouts in run #{run.pk}"):
        payouts("export", str(run.pk), "--rail", "wise", "--output", str(target))
    with pytest.raises(CommandError, match="Could not write"):
        payouts("export", str(run.pk), "--rail", "paypal", "--output", str(tmp_path / "missing" / "out.csv"))
    assert not target.exists()
    # Nothing was exported: the payout is still pending, so a refund could still reduce it.
    assert Payout.objects.get().status == PayoutStatus.PENDING
    assert not PayoutRunAudit.objects.filter(action="exported").exists()


def test_export_takes_only_a_manual_rail(program, tmp_path: Path):
    with pytest.raises(CommandError, match="invalid choice: 'stripe'"):
        payouts("export", "1", "--rail", "stripe", "--output", str(tmp_path / "x.csv"))
