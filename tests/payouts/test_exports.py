"""payouts.exports: the PayPal Payouts Web and Wise batch files a run's manual payouts are paid from (checked byte for
byte against the columns the rails document), the owners' payouts and commissions CSVs, and the results file
brought back, whose bad lines are refused by line number and change nothing. Every test that moves money ends with
each partner's ledger exact."""

import csv
import io

import pytest

from commissions.models import CommissionStatus
from payouts.exports import (
    COMMISSION_COLUMNS,
    PAYOUT_COLUMNS,
    RESULTS_MAX_BYTES,
    RESULTS_MAX_LINES,
    Outcome,
    amount_text,
    cell,
    holder_names,
    paypal_batch_csv,
    program_commissions_csv,
    program_payouts_csv,
    results_import,
    wise_batch_csv,
)
from payouts.models import Payout, PayoutAccount, PayoutRunAudit, PayoutStatus, Rail
from payouts.services import payout_mark_paid, run_confirm, run_export, run_preview
from tests.factories import ProgramFactory

from .money import balance, credited, ledger_exact, payable_partner

pytestmark = pytest.mark.django_db

ACTOR = "user:owner"
# Partner-controlled text (a Wise holder's name, a partner's name from the public join form) built to start a new
# cell, and run it, in a spreadsheet that splits on semicolons.
ATTACK = ";=cmd|' /C calc'!A0"


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def confirmed_run(program, currency: str = "USD"):
    run = run_preview(program=program, currency=currency, actor=ACTOR)
    run_confirm(run_id=run.pk, actor=ACTOR)
    return run


def payout_of(partner) -> Payout:
    return Payout.objects.get(partner=partner)


def results(*lines: str) -> bytes:
    return "".join(line + "\r\n" for line in lines).encode()


# --- Amounts and cells --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("minor", "currency", "text"),
    [(1234, "USD", "12.34"), (5, "EUR", "0.05"), (123_456_789, "USD", "1234567.89"), (50_000, "VND", "50000")],
)
def test_amounts_in_major_units_with_the_currencys_decimals_and_no_grouping(minor, currency, text):
    assert amount_text(minor, currency) == text


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("=HYPERLINK(1)", '"\'=HYPERLINK(1)"'),
        ("+1", '"\'+1"'),
        ("-1", '"\'-1"'),
        ("@SUM(A1)", '"\'@SUM(A1)"'),
        ("\tx", '"\'\tx"'),
        ("\r=1", "\"'\r'=1\""),
        # What a spreadsheet skips before a cell's first character does not hide a formula.
        ("  =1+2", '"\'  =1+2"'),
        ('"=1+2', '"\'""=1+2"'),
        ("'=1+2", "\"''=1+2\""),
        # A field separator of any locale followed by a formula: quoted, and the formula defused where a spreadsheet
        # splitting on that separator would start a cell.
        (ATTACK, "\"';'=cmd|' /C calc'!A0\""),
        (f"Ann{ATTACK}", "\"'Ann;'=cmd|' /C calc'!A0\""),
        ("Ann,=1+2", "\"'Ann,'=1+2\""),
        ("Ann\t@SUM(A1)", "\"'Ann\t'@SUM(A1)\""),
        ('=1+2";=1+2', '"\'=1+2"";\'=1+2"'),
        # Separators alone: quoted, so a spreadsheet of any locale keeps the cell whole; nothing is added.
        ("Bo, Ltd", '"Bo, Ltd"'),
        ("Bo; Ltd", '"Bo; Ltd"'),
        ("Bo\tLtd", '"Bo\tLtd"'),
        ('Bo "B" Berg', '"Bo ""B"" Berg"'),
        ("Ann = 1", "Ann = 1"),
        ("Smith-Jones", "Smith-Jones"),
        ("20.00", "20.00"),
        ("", ""),
        (None, ""),
    ],
)
def test_a_cell_a_spreadsheet_would_run_as_a_formula_is_quoted_and_written_after_a_quote(value, written):
    assert cell(value) == written


def no_formula_in_any_locale(text: str) -> None:
    """Read as a spreadsheet of each locale reads a CSV (split on `,`, `;` or tab, honouring quotes or not), no
    cell starts with a formula: a cell after a single quote is text."""
    for delimiter in (",", ";", "\t"):
        cells = [value for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) for value in row]
        cells += [piece for line in text.split("\r\n") for piece in line.split(delimiter)]
        for value in cells:
            shown = value.lstrip(' \t\r\n"')
            assert not shown.startswith(("=", "+", "-", "@")), (delimiter, value)


def read_back(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


# --- PayPal Payouts Web -------------------------------------------------------------------------------------------


def test_paypal_file_has_no_header_and_the_documented_columns_in_order(program):
    ann = payable_partner(program, name="Ann", payout_email="ann@example.com")
    credited(ann, program, amount=10_000)  # 20.00 USD
    bo = payable_partner(program, name="Bo", payout_email="bo@example.com")
    credited(bo, program, amount=12_345)  # 24.69 USD
    wise = payable_partner(program, name="Cy", rail=Rail.WISE, payout_email="cy@example.com")
    credited(wise, program, amount=5_000)
    run = confirmed_run(program)

    payouts = run_export(run_id=run.pk, rail=Rail.PAYPAL, actor=ACTOR)

    first, second = payout_of(ann).pk, payout_of(bo).pk
    assert (
        paypal_batch_csv(payouts, program_name="Acme")
        == (
            f"ann@example.com,20.00,USD,payout-{first},Acme: payout #{first} of your commissions,PAYPAL\r\n"
            f"bo@example.com,24.69,USD,payout-{second},Acme: payout #{second} of your commissions,PAYPAL\r\n"
        ).encode()
    )
    assert {payout.status for payout in Payout.objects.filter(rail=Rail.PAYPAL)} == {PayoutStatus.PROCESSING}
    assert payout_of(wise).status == PayoutStatus.PENDING  # another rail's payouts are not exported
    for partner in (ann, bo, wise):
        ledger_exact(partner)


def test_paypal_file_in_vnd_has_no_decimals_and_a_formula_in_the_note_is_defused(program):
    program.name = "=cmd|' /C calc'!A0"
    program.save(update_fields=["name"])
    ann = payable_partner(program, name="Ann", payout_email="ann@example.com")
    credited(ann, program, amount=250_000, currency="VND")  # 50,000 VND
    run = confirmed_run(program, currency="VND")

    payouts = run_export(run_id=run.pk, rail=Rail.PAYPAL, actor=ACTOR)

    pk = payout_of(ann).pk
    assert (
        paypal_batch_csv(payouts, program_name=program.name)
        == (
            f"ann@example.com,50000,VND,payout-{pk},\"'=cmd|' /C calc'!A0: payout #{pk} of your commissions\","
            "PAYPAL\r\n"
        ).encode()
    )


# --- Wise batch payments ------------------------------------------------------------------------------------------


def test_wise_file_is_the_email_template_with_the_holders_name(program):
    ann = payable_partner(program, name="Ann", rail=Rail.WISE, payout_email="ann@example.com", holder_name="Ann Lee")
    credited(ann, program, amount=10_000)
    bo = payable_partner(program, name="Bo, Ltd", rail=Rail.WISE, payout_email="bo@example.com")
    credited(bo, program, amount=5_005)
    run = confirmed_run(program)

    payouts = run_export(run_id=run.pk, rail=Rail.WISE, actor=ACTOR)

    first, second = payout_of(ann).pk, payout_of(bo).pk
    assert (
        wise_batch_csv(payouts, names=holder_names(payouts))
        == (
            "name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency\r\n"
            f"Ann Lee,ann@example.com,payout-{first},PERSON,target,20.00,USD,USD\r\n"
            f'"Bo, Ltd",bo@example.com,payout-{second},PERSON,target,10.01,USD,USD\r\n'
        ).encode()
    )


def test_wise_file_with_a_bank_recipient_carries_the_iban_column(program):
    ann = payable_partner(program, name="Ann", rail=Rail.WISE, payout_email="ann@example.com")
    credited(ann, program, amount=10_000, currency="EUR")
    bank = payable_partner(
        program, name="Bo", rail=Rail.WISE, payout_email="", bank_reference="de89 3704 0044 0532 0130 00"
    )
    credited(bank, program, amount=20_000, currency="EUR")
    hostile = payable_partner(program, name="Cy", rail=Rail.WISE, payout_email="cy@example.com", holder_name="-2+3")
    credited(hostile, program, amount=5_000, currency="EUR")
    run = confirmed_run(program, currency="EUR")

    payouts = run_export(run_id=run.pk, rail=Rail.WISE, actor=ACTOR)

    ids = {partner.name: payout_of(partner).pk for partner in (ann, bank, hostile)}
    assert wise_batch_csv(payouts, names=holder_names(payouts)).decode() == (
        "name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency,IBAN\r\n"
        f"Ann,ann@example.com,payout-{ids['Ann']},PERSON,target,20.00,EUR,EUR,\r\n"
        f"Bo,,payout-{ids['Bo']},PERSON,target,40.00,EUR,EUR,DE89370400440532013000\r\n"
        f'"\'-2+3",cy@example.com,payout-{ids["Cy"]},PERSON,target,10.00,EUR,EUR,\r\n'
    )


# --- Owners' exports ----------------------------------------------------------------------------------------------


def test_payouts_csv_lists_every_payout_of_the_program_and_nothing_of_another(program):
    ann = payable_partner(program, name="Ann", payout_email="ann@example.com")
    credited(ann, program, amount=10_000)
    run = confirmed_run(program)
    payout = payout_of(ann)
    payout_mark_paid(payout_id=payout.pk, actor=ACTOR, reference="PP-1")
    other = ProgramFactory()
    credited(payable_partner(other, name="Zed"), other, amount=10_000)
    confirmed_run(other)

    text = "".join(program_payouts_csv(program))

    header, line, end = text.split("\r\n")
    assert header == ",".join(PAYOUT_COLUMNS)
    payout.refresh_from_db()
    paid_at = payout.paid_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    created = payout.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert line == (
        f"{payout.pk},{run.pk},{ann.pk},Ann,20.00,USD,paid,paypal,ann@example.com,PP-1,,,{created},,{paid_at},"
    )
    assert end == ""


def test_commissions_csv_names_the_live_payout_covering_each_commission(program):
    ann = payable_partner(program, name="Ann")
    covered = credited(ann, program, amount=10_000)
    confirmed_run(program)
    later = credited(ann, program, amount=5_000)  # credited after the run: not covered yet

    rows = [line.split(",") for line in "".join(program_commissions_csv(program)).split("\r\n")[:-1]]

    assert rows[0] == list(COMMISSION_COLUMNS)
    by_id = {row[0]: row for row in rows[1:]}
    assert by_id[str(covered.pk)][3:7] == ["20.00", "0.00", "USD", CommissionStatus.APPROVED]
    assert by_id[str(covered.pk)][9:] == [str(payout_of(ann).pk), "pending"]
    assert by_id[str(later.pk)][9:] == ["", ""]


def test_paypal_file_keeps_amounts_unquoted_when_a_note_is_defused(program):
    program.name = f"Acme{ATTACK}"
    program.save(update_fields=["name"])
    ann = payable_partner(program, name="Ann", payout_email="ann@example.com")
    credited(ann, program, amount=10_000)
    run = confirmed_run(program)

    text = paypal_batch_csv(run_export(run_id=run.pk, rail=Rail.PAYPAL, actor=ACTOR), program_name=program.name)

    pk = payout_of(ann).pk
    assert text.decode() == (
        f"ann@example.com,20.00,USD,payout-{pk},\"'Acme;'=cmd|' /C calc'!A0: payout #{pk} of your commissions\","
        "PAYPAL\r\n"
    )
    no_formula_in_any_locale(text.decode())


@pytest.mark.parametrize("hostile", ["holder", "partner"])
def test_wise_file_defuses_a_holder_or_partner_name_built_for_semicolon_spreadsheets(program, hostile):
    name = f"Ann{ATTACK}"
    ann = payable_partner(
        program,
        name=name if hostile == "partner" else "Ann",
        rail=Rail.WISE,
        payout_email="ann@example.com",
        holder_name=name if hostile == "holder" else "",
    )
    credited(ann, program, amount=10_000)
    run = confirmed_run(program)

    payouts = run_export(run_id=run.pk, rail=Rail.WISE, actor=ACTOR)
    text = wise_batch_csv(payouts, names=holder_names(payouts)).decode()

    assert text.split("\r\n")[1] == (
        f"\"'Ann;'=cmd|' /C calc'!A0\",ann@example.com,payout-{payout_of(ann).pk},PERSON,target,20.00,USD,USD"
    )
    no_formula_in_any_locale(text)
    assert read_back(text)[1][0] == "'Ann;'=cmd|' /C calc'!A0"


def test_payouts_and_commissions_csv_defuse_a_partner_name_built_for_semicolon_spreadsheets(program):
    ann = payable_partner(program, name=f"Ann{ATTACK}", payout_email="ann@example.com")
    credited(ann, program, amount=10_000)
    run = confirmed_run(program)
    payout = payout_of(ann)
    payout_mark_paid(payout_id=payout.pk, actor=ACTOR, reference="=HYPERLINK(1);@SUM(A1)")

    payouts_text = "".join(program_payouts_csv(program))
    commissions_text = "".join(program_commissions_csv(program))

    for text in (payouts_text, commissions_text):
        no_formula_in_any_locale(text)
    [header, line] = read_back(payouts_text)
    assert header == list(PAYOUT_COLUMNS)
    assert line[:6] == [str(payout.pk), str(run.pk), str(ann.pk), "'Ann;'=cmd|' /C calc'!A0", "20.00", "USD"]
    assert line[9] == "'=HYPERLINK(1);'@SUM(A1)"
    [header, line] = read_back(commissions_text)
    assert header == list(COMMISSION_COLUMNS) and line[2] == "'Ann;'=cmd|' /C calc'!A0"
    assert line[3:6] == ["20.00", "0.00", "USD"]


# --- Results brought back -----------------------------------------------------------------------------------------


@pytest.fixture
def exported(program):
    """A confirmed run of three PayPal partners, exported."""
    partners = []
    for name in ("Ann", "Bo", "Cy"):
        partner = payable_partner(program, name=name, payout_email=f"{name.lower()}@example.com")
        credited(partner, program, amount=10_000)
        partners.append(partner)
    run = confirmed_run(program)
    run_export(run_id=run.pk, rail=Rail.PAYPAL, actor=ACTOR)
    return run, partners


def test_results_mark_paid_and_failed_and_a_failure_puts_the_money_back(exported):
    run, (ann, bo, cy) = exported
    data = results(
        "payout_id,status,reference,message",
        f"{payout_of(ann).pk},paid,PP-TX-1,",
        f"payout-{payout_of(bo).pk},FAILED,,Receiver account is unconfirmed",
    )

    report = results_import(data=data, run=run, actor=ACTOR)

    assert report.refused == ""
    assert [(line.line, line.outcome) for line in report.lines] == [(2, Outcome.PAID), (3, Outcome.FAILED)]
    paid, failed = payout_of(ann), payout_of(bo)
    assert (paid.status, paid.rail_reference) == (PayoutStatus.PAID, "PP-TX-1")
    assert (failed.status, failed.failure_code, failed.failure_message) == (
        PayoutStatus.FAILED,
        "reported_failed",
        "Receiver account is unconfirmed",
    )
    assert payout_of(cy).status == PayoutStatus.PROCESSING  # not in the file
    assert (balance(ann), balance(bo), balance(cy)) == (0, 2_000, 0)
    actions = list(PayoutRunAudit.objects.filter(run=run).values_list("action", "actor").order_by("pk"))
    assert actions[-3:] == [("marked_paid", ACTOR), ("marked_failed", ACTOR), ("imported", ACTOR)]
    assert PayoutRunAudit.objects.get(run=run, action="imported").detail == (
        "1 marked paid, 1 marked failed, 0 already settled, 0 refused"
    )
    for partner in (ann, bo, cy):
        ledger_exact(partner)


def test_bad_lines_are_refused_by_number_and_change_nothing_while_good_lines_apply(exported, program):
    run, (ann, bo, cy) = exported
    elsewhere = payable_partner(program, name="Dee")
    credited(elsewhere, program, amount=10_000)
    other_run = confirmed_run(program)  # another run of the same program
    stripe = payable_partner(program, name="Eve", rail=Rail.STRIPE)
    credited(stripe, program, amount=10_000)
    stripe_run = confirmed_run(program)
    data = results(
        f"{payout_of(ann).pk},paid,,",  # 1: applied
        "abc,paid,,",  # 2
        "0,paid,,",  # 3
        "99999999999999999999999,paid,,",  # 4
        f"{payout_of(bo).pk},sent,,",  # 5
        f"{payout_of(bo).pk},failed,,",  # 6: no message
        f"{payout_of(elsewhere).pk},paid,,",  # 7: another run's payout
        f"{payout_of(stripe).pk},paid,,",  # 8: not in this run either
        f"{payout_of(ann).pk},failed,,twice",  # 9: the same payout again
        f"{payout_of(cy).pk},paid,{'x' * 256},",  # 10
        f"{payout_of(cy).pk}",  # 11: one column
        f"{payout_of(cy).pk},paid,,,extra",  # 12
        "",  # 13: blank lines are skipped
        f"payout-{payout_of(cy).pk},paid,,",  # 14: applied
    )

    report = results_import(data=data, run=run, actor=ACTOR)

    outcomes = {line.line: line.outcome for line in report.lines}
    assert outcomes == {1: "paid", 14: "paid", **dict.fromkeys(range(2, 13), "refused")}
    texts = {line.line: line.text for line in report.lines}
    assert texts[2] == "'abc' is not a payout id (write 123 or payout-123)"
    assert texts[5] == "status 'sent' is not paid or failed"
    assert texts[6] == "a failed payout needs a message: the partner is told why"
    assert texts[7] == f"payout #{payout_of(elsewhere).pk} is not a payout of this run"
    assert texts[9] == f"payout #{payout_of(ann).pk} is on line 1 already"
    assert texts[10] == "the reference is longer than 255 characters"
    assert texts[11].startswith("expected payout_id,status,reference,message")
    assert payout_of(bo).status == PayoutStatus.PROCESSING
    assert payout_of(ann).status == payout_of(cy).status == PayoutStatus.PAID
    assert payout_of(elsewhere).status == PayoutStatus.PENDING
    assert payout_of(stripe).status == PayoutStatus.PENDING
    assert payout_of(elsewhere).run_id == other_run.pk and payout_of(stripe).run_id == stripe_run.pk
    for partner in (ann, bo, cy, elsewhere, stripe):
        ledger_exact(partner)


def test_a_stripe_payout_of_the_run_is_not_settled_by_an_import(program):
    stripe = payable_partner(program, name="Eve", rail=Rail.STRIPE)
    credited(stripe, program, amount=10_000)
    run = confirmed_run(program)

    report = results_import(data=results(f"{payout_of(stripe).pk},paid,,"), run=run, actor=ACTOR)

    [line] = report.lines
    assert line.text == f"payout #{payout_of(stripe).pk} is paid by stripe: the rail settles it, not an import"
    assert payout_of(stripe).status == PayoutStatus.PENDING


def test_a_payout_settled_already_is_left_as_it_is(exported):
    run, (ann, _bo, _cy) = exported
    payout_mark_paid(payout_id=payout_of(ann).pk, actor=ACTOR)

    report = results_import(data=results(f"{payout_of(ann).pk},failed,,bounced"), run=run, actor=ACTOR)

    [line] = report.lines
    assert (line.outcome, line.text) == ("unchanged", f"payout #{payout_of(ann).pk} was paid already: nothing changed")
    assert payout_of(ann).status == PayoutStatus.PAID
    assert balance(ann) == 0
    ledger_exact(ann)


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda pk: f"{pk},paid,,\r\n".encode().ljust(RESULTS_MAX_BYTES + 1, b"x"), "The file is larger than 1000 kB"),
        (lambda pk: "1,paid,,caf\u00e9".encode("latin-1"), "The file is not UTF-8 text (byte 12)"),
        (lambda pk: f"{pk},paid,,\r\n2,paid\x00,,".encode(), "The file is not CSV text: it holds NUL bytes."),
        (lambda pk: f'{pk},paid,,\r\n3,paid,"PP,\r\n'.encode(), "Line 2 is not CSV (unexpected end of data)"),
        (
            lambda pk: f"{pk},paid,,\r\n".encode() * (RESULTS_MAX_LINES + 1),
            f"The file has more than {RESULTS_MAX_LINES}",
        ),
    ],
    ids=["too-big", "not-utf8", "nul", "broken-quote", "too-many-lines"],
)
def test_a_file_that_cannot_be_read_is_refused_whole(exported, make, reason):
    """Each file starts with a good line: refusing the file must not apply it."""
    run, partners = exported
    audits = PayoutRunAudit.objects.count()

    report = results_import(data=make(payout_of(partners[0]).pk), run=run, actor=ACTOR)

    assert report.refused.startswith(reason), report.refused
    assert report.lines == []
    assert {payout.status for payout in Payout.objects.filter(run=run)} == {PayoutStatus.PROCESSING}
    assert PayoutRunAudit.objects.count() == audits  # nothing imported, nothing audited


def test_a_file_saved_with_a_byte_order_mark_reads(exported):
    run, (ann, _bo, _cy) = exported

    report = results_import(data=b"\xef\xbb\xbf" + results(f"{payout_of(ann).pk},paid,,"), run=run, actor=ACTOR)

    assert [line.outcome for line in report.lines] == ["paid"]


def test_holder_names_reads_the_payout_accounts_once(exported, django_assert_num_queries):
    run, partners = exported
    PayoutAccount.objects.filter(account_id=partners[0].account_id).update(holder_name="Ann Lee")
    payouts = list(Payout.objects.filter(run=run).select_related("partner"))

    with django_assert_num_queries(1):
        names = holder_names(payouts)

    assert names == {partners[0].pk: "Ann Lee", partners[1].pk: "", partners[2].pk: ""}
