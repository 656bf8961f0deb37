"""CSV files for the manual rails and for owners (docs/payouts.md, "Running payouts").

Out: a run's PayPal payouts as a PayPal Payouts Web payment file, its Wise payouts as a Wise batch payment file,
and a program's payouts and commissions. In: the results an owner brings back (`payout_id,status,reference,message`),
each line settled through payouts.services, or refused with its line number and why.

Every cell written goes through `cell` (OWASP's CSV injection advice): a value a spreadsheet would read as a formula
(= + - @, tab or carriage return first, after any spaces or quotes) is written after a single quote and quoted. So is
one holding a formula after a field separator of any locale (`,` `;` tab, or a line end): a spreadsheet that splits
on semicolons would start a cell there, so that cell starts with a single quote too. A value holding a separator or
a double quote is quoted (RFC 4180), so every locale's spreadsheet keeps it whole; anything else, amounts included,
is written as it is, as the rails' upload formats show it."""

import csv
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import OuterRef, Subquery

from commissions.models import Commission
from core.currency import minor_unit_exponent
from core.ids import id_parse
from programs.models import Program

from .models import (
    MANUAL_RAILS,
    OPEN_PAYOUT_STATUSES,
    Payout,
    PayoutAccount,
    PayoutCommission,
    PayoutRun,
    PayoutRunAudit,
    Rail,
)
from .services import payout_mark_failed, payout_mark_paid, run_export

FORMULA_OPENINGS = ("=", "+", "-", "@", "\t", "\r")
# What a spreadsheet may skip before it reads a cell's first character.
SKIPPED_FIRST = " \t\r\n\"'"
# Where a spreadsheet of one locale or another starts a new cell (or row).
SEPARATORS = ",;\t\r\n"
_FORMULA_AFTER_SEPARATOR = re.compile(r"([,;\t\r\n])(?=[ \t\r\n\"']*[=+\-@])")
_QUOTED_WHEN = frozenset(SEPARATORS + '"')
LINE_END = "\r\n"  # RFC 4180, as spreadsheets and both rails' uploads read it

# PayPal Payouts Web: no header row; per line the recipient, amount, currency, customer id (at most 30 characters,
# no spaces), note to the recipient (at most 400 characters) and the recipient wallet.
PAYPAL_WALLET = "PAYPAL"
PAYPAL_NOTE_MAX = 400
PAYPAL_NOTE = "{program}: payout #{pk} of your commissions"

# Wise batch payments, "send by email" template; a bank recipient adds the "send to bank accounts" template's IBAN.
WISE_COLUMNS = (
    "name",
    "recipientEmail",
    "paymentReference",
    "receiverType",
    "amountCurrency",
    "amount",
    "sourceCurrency",
    "targetCurrency",
)
WISE_BANK_COLUMN = "IBAN"
WISE_RECEIVER_TYPE = "PERSON"
WISE_AMOUNT_CURRENCY = "target"  # the partner receives the amount exactly; Wise's fee is on the sender

# Each column of the payouts export and the field it is read from.
PAYOUT_FIELDS = {
    "payout_id": "pk",
    "run_id": "run_id",
    "partner_id": "partner_id",
    "partner": "partner__name",
    "amount": "amount_cents",
    "currency": "currency",
    "status": "status",
    "rail": "rail",
    "destination": "destination",
    "rail_reference": "rail_reference",
    "failure_code": "failure_code",
    "failure_message": "failure_message",
    "created_at": "created_at",
    "sent_at": "sent_at",
    "paid_at": "paid_at",
    "failed_at": "failed_at",
}
PAYOUT_COLUMNS = tuple(PAYOUT_FIELDS)
COMMISSION_COLUMNS = (
    "commission_id",
    "partner_id",
    "partner",
    "amount",
    "refunded",
    "currency",
    "status",
    "created_at",
    "approved_at",
    "payout_id",
    "payout_status",
)

RESULT_COLUMNS = ("payout_id", "status", "reference", "message")
RESULTS_MAX_BYTES = 1_000_000
RESULTS_MAX_LINES = 5_000  # PayPal's and Wise's own batch limits are 5,000 and 1,000 rows
REFERENCE_MAX = 255  # Payout.rail_reference
MESSAGE_MAX = 500  # Payout.failure_message
IMPORTED_FAILURE_CODE = "reported_failed"
PAYOUT_REFERENCE = re.compile(r"payout-([0-9]{1,19})", re.IGNORECASE)


def cell(value: object) -> str:
    """The value as the file writes it: defused and quoted when a spreadsheet of any locale could run it as a
    formula, quoted when it holds a separator or a quote, else as it is."""
    text = "" if value is None else str(value)
    defused = _FORMULA_AFTER_SEPARATOR.sub(r"\1'", text)
    if defused != text or text.startswith(FORMULA_OPENINGS) or text.lstrip(SKIPPED_FIRST).startswith(FORMULA_OPENINGS):
        defused = "'" + defused
    if defused == text and not _QUOTED_WHEN.intersection(text):
        return text
    return '"' + defused.replace('"', '""') + '"'


def amount_text(minor: int, currency: str) -> str:
    """Major units with the currency's own decimals and no grouping: 1234 USD -> "12.34", 5000 VND -> "5000"."""
    places = minor_unit_exponent(currency)
    return f"{Decimal(int(minor)).scaleb(-places):.{places}f}"


def payout_reference(payout_id: int) -> str:
    """The payout as the rails carry it back: PayPal's customer id, Wise's payment reference."""
    return f"payout-{payout_id}"


def utc_text(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else ""


def _lines(rows: Iterable[Iterable[object]]) -> Iterator[str]:
    # Written by hand, not by csv.writer: its quoting is all or nothing per file, and `cell` quotes what needs it.
    for row in rows:
        yield ",".join(cell(value) for value in row) + LINE_END


def csv_bytes(rows: Iterable[Iterable[object]]) -> bytes:
    return "".join(_lines(rows)).encode()


# --- The rails' batch files -------------------------------------------------------------------------------------


def paypal_batch_csv(payouts: Iterable[Payout], *, program_name: str) -> bytes:
    """A PayPal Payouts Web payment file (one currency per file, as PayPal requires: a run has one)."""
    return csv_bytes(
        (
            payout.destination,
            amount_text(payout.amount_cents, payout.currency),
            payout.currency,
            payout_reference(payout.pk),
            PAYPAL_NOTE.format(program=program_name, pk=payout.pk)[:PAYPAL_NOTE_MAX],
            PAYPAL_WALLET,
        )
        for payout in payouts
        if payout.rail == Rail.PAYPAL
    )


def holder_names(payouts: Iterable[Payout]) -> dict[int, str]:
    """{partner_id: the name the partner gave for their account}, in one read (partners must be loaded)."""
    partners = {payout.partner_id: payout.partner.account_id for payout in payouts}
    names = dict(
        PayoutAccount.objects.filter(account_id__in=[a for a in partners.values() if a is not None]).values_list(
            "account_id", "holder_name"
        )
    )
    return {partner_id: names.get(account_id, "") for partner_id, account_id in partners.items() if account_id}


def _is_email(destination: str) -> bool:
    return "@" in destination


def wise_batch_csv(payouts: Iterable[Payout], *, names: dict[int, str]) -> bytes:
    """A Wise batch payment file: email recipients as Wise's "send by email" template has them; when any payout
    goes to a bank reference, the IBAN column of the "send to bank accounts" template carries it (spaces removed,
    upper case). `names`: the account holder's name by partner id (holder_names), else the partner's name."""
    wise = [payout for payout in payouts if payout.rail == Rail.WISE]
    with_bank = any(not _is_email(payout.destination) for payout in wise)
    header = (*WISE_COLUMNS, WISE_BANK_COLUMN) if with_bank else WISE_COLUMNS
    rows: list[tuple[object, ...]] = [header]
    for payout in wise:
        email = payout.destination if _is_email(payout.destination) else ""
        row: tuple[object, ...] = (
            names.get(payout.partner_id) or payout.partner.name,
            email,
            payout_reference(payout.pk),
            WISE_RECEIVER_TYPE,
            WISE_AMOUNT_CURRENCY,
            amount_text(payout.amount_cents, payout.currency),
            payout.currency,
            payout.currency,
        )
        if with_bank:
            row = (*row, "" if email else re.sub(r"\s+", "", payout.destination).upper())
        rows.append(row)
    return csv_bytes(rows)


def batch_file(payouts: list[Payout], *, rail: str, program_name: str) -> bytes:
    """The manual rail's batch file of these payouts: PayPal's payment file or Wise's batch file."""
    if rail == Rail.PAYPAL:
        return paypal_batch_csv(payouts, program_name=program_name)
    return wise_batch_csv(payouts, names=holder_names(payouts))


def run_batch_export(*, run_id: int, rail: str, actor: str, program_name: str) -> bytes:
    """The rail's batch file of the run's open payouts (services.run_export), in one transaction with the export: the
    payouts turn `processing` only if their file is made."""
    with transaction.atomic():
        payouts = run_export(run_id=run_id, rail=rail, actor=actor)
        return batch_file(payouts, rail=rail, program_name=program_name)


# --- Owners' exports (streamed: a program may have many) ----------------------------------------------------------


def program_payouts_csv(program: Program) -> Iterator[str]:
    rows = Payout.objects.filter(program=program).order_by("-created_at", "-pk").values_list(*PAYOUT_FIELDS.values())

    def table() -> Iterator[tuple[object, ...]]:
        yield PAYOUT_COLUMNS
        for pk, run_id, partner_id, name, amount, currency, *middle, created, sent, paid, failed in rows.iterator(
            chunk_size=2000
        ):
            yield (
                pk,
                run_id,
                partner_id,
                name,
                amount_text(amount, currency),
                currency,
                *middle,
                utc_text(created),
                utc_text(sent),
                utc_text(paid),
                utc_text(failed),
            )

    return _lines(table())


def program_commissions_csv(program: Program) -> Iterator[str]:
    """Every commission of the program, and the live payout covering it (failed and cancelled payouts cover
    nothing any more)."""
    covering = PayoutCommission.objects.filter(commission=OuterRef("pk"), active=True)
    rows = (
        Commission.objects.filter(program=program)
        .annotate(
            payout_id=Subquery(covering.values("payout_id")[:1]),
            payout_status=Subquery(covering.values("payout__status")[:1]),
        )
        .order_by("-created_at", "-pk")
        .values_list(
            "pk",
            "partner_id",
            "partner__name",
            "amount_cents",
            "deducted_cents",
            "currency",
            "status",
            "created_at",
            "approved_at",
            "payout_id",
            "payout_status",
        )
    )

    def table() -> Iterator[tuple[object, ...]]:
        yield COMMISSION_COLUMNS
        for row in rows.iterator(chunk_size=2000):
            pk, partner_id, name, amount, deducted, currency, status, created, approved, payout_id, payout_status = row
            yield (
                pk,
                partner_id,
                name,
                amount_text(amount, currency),
                amount_text(deducted, currency),
                currency,
                status,
                utc_text(created),
                utc_text(approved),
                payout_id or "",
                payout_status or "",
            )

    return _lines(table())


# --- Results brought back -----------------------------------------------------------------------------------------


class Outcome:
    PAID = "paid"
    FAILED = "failed"
    UNCHANGED = "unchanged"
    REFUSED = "refused"


@dataclass(frozen=True)
class ResultLine:
    line: int
    outcome: str
    text: str


@dataclass
class ImportReport:
    # The whole file refused (too big, not UTF-8, not CSV): nothing was read or changed.
    refused: str = ""
    lines: list[ResultLine] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for line in self.lines if line.outcome == outcome)

    @property
    def summary(self) -> str:
        return (
            f"{self.count(Outcome.PAID)} marked paid, {self.count(Outcome.FAILED)} marked failed, "
            f"{self.count(Outcome.UNCHANGED)} already settled, {self.count(Outcome.REFUSED)} refused"
        )


@dataclass(frozen=True)
class _Wanted:
    line: int
    payout_id: int
    status: str
    reference: str
    message: str


def _payout_id(text: str) -> int | None:
    text = text.strip()
    found = PAYOUT_REFERENCE.fullmatch(text)
    return id_parse(found.group(1) if found else text)


def _rows(data: bytes) -> list[tuple[int, list[str]]] | str:
    """The file's rows with their line numbers, or why the whole file is refused."""
    if len(data) > RESULTS_MAX_BYTES:
        return f"The file is larger than {RESULTS_MAX_BYTES // 1000} kB: split it."
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return f"The file is not UTF-8 text (byte {error.start + 1}): save it as CSV UTF-8."
    if "\x00" in text:
        return "The file is not CSV text: it holds NUL bytes."
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            if len(rows) >= RESULTS_MAX_LINES:
                return f"The file has more than {RESULTS_MAX_LINES} lines: split it."
            rows.append((reader.line_num, row))
    except csv.Error as error:
        return f"Line {reader.line_num} is not CSV ({error}): nothing was imported."
    return rows


def _read_line(line: int, row: list[str], payouts: dict[int, Payout], seen: dict[int, int]) -> _Wanted | str:
    """The line's request, or why it is refused."""
    if len(row) < 2 or len(row) > len(RESULT_COLUMNS):
        return f"expected {','.join(RESULT_COLUMNS)} (reference and message may be empty), got {len(row)} columns"
    payout_text, status, reference, message = (*[value.strip() for value in row], "", "")[:4]
    payout_id = _payout_id(payout_text)
    if payout_id is None:
        return f"{payout_text[:40]!r} is not a payout id (write 123 or payout-123)"
    status = status.lower()
    if status not in (Outcome.PAID, Outcome.FAILED):
        return f"status {status[:40]!r} is not paid or failed"
    if len(reference) > REFERENCE_MAX:
        return f"the reference is longer than {REFERENCE_MAX} characters"
    if len(message) > MESSAGE_MAX:
        return f"the message is longer than {MESSAGE_MAX} characters"
    if status == Outcome.FAILED and not message:
        return "a failed payout needs a message: the partner is told why"
    payout = payouts.get(payout_id)
    if payout is None:
        return f"payout #{payout_id} is not a payout of this run"
    if payout.rail not in MANUAL_RAILS:
        return f"payout #{payout_id} is paid by {payout.rail}: the rail settles it, not an import"
    if payout_id in seen:
        return f"payout #{payout_id} is on line {seen[payout_id]} already"
    seen[payout_id] = line
    return _Wanted(line=line, payout_id=payout_id, status=status, reference=reference, message=message)


def results_import(*, data: bytes, run: PayoutRun, actor: str) -> ImportReport:
    """Settles the run's manual payouts from a results file. Every line is read and checked first; a refused line
    changes nothing, each accepted one is one service call (its own transaction). A payout settled already is left
    as it is and said so."""
    rows = _rows(data)
    if isinstance(rows, str):
        return ImportReport(refused=rows)
    if rows and [value.strip().lower() for value in rows[0][1]][:2] == list(RESULT_COLUMNS[:2]):
        rows = rows[1:]
    payouts = {payout.pk: payout for payout in Payout.objects.filter(run=run)}
    report = ImportReport()
    wanted: list[_Wanted] = []
    seen: dict[int, int] = {}
    for line, row in rows:
        if not any(value.strip() for value in row):
            continue
        read = _read_line(line, row, payouts, seen)
        if isinstance(read, str):
            report.lines.append(ResultLine(line=line, outcome=Outcome.REFUSED, text=read))
        else:
            wanted.append(read)
    for want in wanted:
        if want.status == Outcome.PAID:
            done = payout_mark_paid(payout_id=want.payout_id, actor=actor, reference=want.reference)
            text = f"payout #{want.payout_id} marked paid"
        else:
            done = payout_mark_failed(
                payout_id=want.payout_id, code=IMPORTED_FAILURE_CODE, message=want.message, actor=actor
            )
            text = f"payout #{want.payout_id} marked failed: its amount is back on the partner's balance"
        if not done:
            status = Payout.objects.filter(pk=want.payout_id).values_list("status", flat=True).first()
            text = f"payout #{want.payout_id} was {status} already: nothing changed"
        report.lines.append(ResultLine(line=want.line, outcome=want.status if done else Outcome.UNCHANGED, text=text))
    report.lines.sort(key=lambda result: result.line)
    # The import itself, beside the marked_paid / marked_failed rows the services wrote for each payout.
    PayoutRunAudit.objects.create(
        run=run, action=PayoutRunAudit.Action.IMPORTED, actor=actor[:200], detail=report.summary[:500]
    )
    return report


def open_manual_payouts(run: PayoutRun, rail: str) -> bool:
    return Payout.objects.filter(run=run, rail=rail, status__in=OPEN_PAYOUT_STATUSES).exists()
