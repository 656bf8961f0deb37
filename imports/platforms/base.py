"""What every platform reader shares: the Platform type, reading a CSV or a saved API answer tolerantly (BOM, CRLF,
column order, extra columns), and a SourceBuilder that keeps the rows, refuses the bad ones by file and line, and
catches what only the whole source shows (a code claimed by two partners, a row for a partner the export refused)."""

import base64
import csv
import io
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings

from imports.records import (
    CodeRow,
    CommissionRow,
    GroupRow,
    ImportFileError,
    LinkRow,
    PartnerRow,
    ReferralRow,
    Refusal,
    RowRefused,
    Source,
    minor_units,
    parse_time,
)

Files = list[tuple[str, bytes]]
Item = dict[str, Any]

# Far above any real commission, far below what a 64-bit amount column holds (sums of many stay safe too).
MAX_MINOR = 10**15
# ReferralLink.short_link holds at most 100 characters.
CODE_MAX_LENGTH = 100
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class Platform:
    """One platform the service imports from. `read` takes the uploaded files (name, bytes) and decides by their
    columns or objects which file is which; a file it does not know raises ImportFileError.

    `asks_currency`: the platform's files may carry no currency (FirstPromoter's amounts are in the account's
    currency, which its API does not send): the owner names it once (`manage.py import --currency`, the Import page's
    Currency field) and `read(files, currency=...)` hands it to the reader, called `reader(files, currency=...)`.
    Other platforms' readers take the files only, and a currency given for them is not used."""

    name: str
    label: str
    link_param: str
    stripe_metadata_keys: tuple[str, ...]
    export_help: str
    reader: Callable[..., Source] = field(repr=False)
    asks_currency: bool = False
    # Other query parameters the platform's links carry the code in (PartnerStack's current ?ps_partner_key= beside
    # its older ?gspk=): each is a link alias to turn on after the move.
    extra_link_params: tuple[str, ...] = ()

    @property
    def link_params(self) -> tuple[str, ...]:
        """Every query parameter the platform's links carry the code in, the main one first; () for a platform
        whose links are short links on its own domain (Dub)."""
        return tuple(param for param in (self.link_param, *self.extra_link_params) if param)

    def read(self, files: Files, *, currency: str = "") -> Source:
        if not files:
            raise ImportFileError(f"No files given: {self.export_help}")
        values_check(files)
        if self.asks_currency:
            return self.reader(files, currency=currency)
        return self.reader(files)


def values_at_most(content: bytes) -> int:
    """At least as many values as the file's parse would hold, counted without parsing: every JSON value but the
    first follows a comma or opens a list or object; every CSV field ends at a comma or a line end. Those characters
    inside strings count too, so the count errs high, never low."""
    if looks_like_json(content):
        return content.count(b",") + content.count(b"[") + content.count(b"{") + 1
    return content.count(b",") + content.count(b"\n") + content.count(b"\r") + 1


def values_check(files: Files) -> None:
    """Refuses, before any is parsed, files holding more values together than settings.IMPORT_MAX_VALUES: their parse
    would hold every value as a Python object, tens of times the bytes for the tiniest ones."""
    limit = settings.IMPORT_MAX_VALUES
    total = 0
    for name, content in files:
        total += values_at_most(content)
        if total > limit:
            raise ImportFileError(
                f"{name}: too many values to import at once "
                f"(more than {limit:,} JSON values or CSV fields in the files together)"
            )


def decode(name: str, content: bytes) -> str:
    """The file's text: UTF-8 with or without a BOM."""
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{name}: not UTF-8 text (save the export as UTF-8 CSV or JSON)") from exc


def looks_like_json(content: bytes) -> bool:
    return content.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"[", b"{")


def json_items(name: str, content: bytes) -> list[Item]:
    """The objects of a saved API answer: a JSON list, or the platforms' envelopes {"data": [...]} (Rewardful, Tolt,
    FirstPromoter v2) and {"data": {"items": [...]}} (PartnerStack). Anything but objects in the list is refused."""
    document = decode(name, content)
    try:
        payload = json.loads(document)
    except json.JSONDecodeError as exc:
        raise ImportFileError(f"{name}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    except RecursionError as exc:
        raise ImportFileError(f"{name}: JSON nested too deeply to be an export") from exc
    except ValueError as exc:  # an integer past Python's int-string conversion limit
        raise ImportFileError(f"{name}: not valid JSON ({_long_number(document)})") from exc
    items = payload
    if isinstance(items, dict):
        items = items.get("data", items.get("items"))
        if isinstance(items, dict):
            items = items.get("items")
    if not isinstance(items, list):
        raise ImportFileError(f'{name}: expected a JSON list of objects, or {{"data": [...]}} as the API answers')
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise ImportFileError(f"{name}: item {number} is not an object")
    return items


@dataclass
class CsvFile:
    name: str
    columns: list[str]
    rows: list[tuple[int, dict[str, str]]]

    def require(self, *columns: str) -> None:
        missing = [column for column in columns if column not in self.columns]
        if missing:
            raise ImportFileError(f"{self.name}: missing required columns: {', '.join(missing)}")


def normalise_column(header: str) -> str:
    """'First Name ' and 'first_name' are the same column."""
    return re.sub(r"[\s\-]+", "_", header.strip().lower())


def read_csv(name: str, content: bytes) -> CsvFile:
    """Rows keyed by normalised column name, each with the physical line it starts on (the header is line 1).
    Blank lines are skipped; a quoted field may span lines."""
    text = decode(name, content)
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = next(reader, None)
        if header is None:
            raise ImportFileError(f"{name}: the file is empty")
        columns = [normalise_column(column) for column in header]
        line = reader.line_num + 1
        for record in reader:
            start, line = line, reader.line_num + 1
            if not any(value.strip() for value in record):
                continue
            rows.append((start, {column: value.strip() for column, value in zip(columns, record, strict=False)}))
    except csv.Error as exc:
        raise ImportFileError(f"{name}: not a readable CSV (line {reader.line_num}: {exc})") from exc
    return CsvFile(name=name, columns=columns, rows=rows)


def text(value: Any) -> str:
    """A JSON value as text: None -> "", numbers as written (ids are often integers)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else ""
    return str(value).strip()


def dig(item: Mapping[str, Any], *path: str) -> Any:
    """item[a][b]... or None when any step is missing or not an object."""
    value: Any = item
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def obj(value: Any) -> Item:
    """A nested object, or {} when it is missing or not an object (an id where an expanded object was expected)."""
    return value if isinstance(value, dict) else {}


def seq(value: Any) -> list[Any]:
    """A nested list, or [] when it is missing or not a list."""
    return value if isinstance(value, list) else []


def first(*values: Any) -> str:
    """The first value that is not blank, as text."""
    for value in values:
        if text(value):
            return text(value)
    return ""


def time_or_epoch(value: Any) -> datetime | None:
    """parse_time, and also epoch seconds or milliseconds as PartnerStack sends them."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            # An integer too large for a float fails already in the division.
            seconds = value / 1000 if value > 10**11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise RowRefused(f"time {value!r} is not a date and time") from exc
    return parse_time(text(value) or None)


def money(value: Any, currency: str, *, given_in: str) -> int:
    """records.minor_units, refusing an amount no export could mean (it would overflow the ledger's sums)."""
    amount = minor_units(value, currency, given_in=given_in)
    if amount > MAX_MINOR:
        raise RowRefused(f"amount {text(value)} is too large")
    return amount


def email_of(value: Any, *, required: bool) -> str:
    email = text(value).lower()
    if not email:
        if required:
            raise RowRefused("email is missing")
        return ""
    if not _EMAIL.match(email):
        raise RowRefused(f"email {text(value)!r} is not an email address")
    return email


def gspk(partner_key: str) -> str:
    """PartnerStack's ?gspk= value: the partner key, Base64-encoded (PartnerStackJS decodes it)."""
    return base64.b64encode(partner_key.encode()).decode("ascii")


def amount_take(rows: list[CommissionRow], indexes: list[int], amount: int) -> int:
    """Takes `amount` (minor units) off the commissions at `indexes`, in that order, each down to nothing at most
    (a commission taken to nothing becomes void): a refund or clawback netted against what it reverses. Answers what
    was left to take."""
    for index in indexes:
        if amount == 0:
            break
        row = rows[index]
        taken = min(amount, row.commission_amount_minor)
        left = row.commission_amount_minor - taken
        rows[index] = replace(row, commission_amount_minor=left, status=row.status if left else "void")
        amount -= taken
    return amount


def netted_row(
    *, where: str, source_id: str, partner_source_id: str, referral_source_id: str, currency: str
) -> CommissionRow:
    """What stays of a refund or clawback row once netted: a void row of nothing, so the report counts it as
    skipped and a rerun knows its id."""
    return CommissionRow(
        where=where,
        source_id=source_id,
        partner_source_id=partner_source_id,
        referral_source_id=referral_source_id,
        currency=currency,
        status="void",
    )


@dataclass
class SourceBuilder:
    """Collects one source's rows in `rows`, as they are read. Refusals found only by looking at the whole source are
    made in `finish`, in the order rows were read, so a re-read gives the same refusals."""

    platform: str
    rows: Source = field(init=False)
    refused_partners: dict[str, str] = field(default_factory=dict)  # source id -> where it was refused
    saw_partner_file: bool = False
    # A file listing the campaigns or groups was read: a partner naming one it does not hold is refused its move;
    # without one, a partner's bare group id (no name, no terms) leaves the partner in the default group.
    saw_group_file: bool = False
    refused_groups: dict[str, str] = field(default_factory=dict)  # group source id -> where it was refused

    def __post_init__(self) -> None:
        self.rows = Source(platform=self.platform)

    def refuse(self, where: str, kind: str, reason: str, *, partner_id: str = "") -> None:
        if kind == "group" and partner_id:
            # The same campaign is listed with each of its partners: refused once, where first read.
            if partner_id in self.refused_groups:
                return
            self.refused_groups[partner_id] = where
        self.rows.refusals.append(Refusal(where=where, kind=kind, reason=reason))
        if kind == "partner" and partner_id:
            self.refused_partners.setdefault(partner_id, where)

    def attempt(self, where: str, kind: str, make: Callable[..., Any], *args: Any, partner_id: str = "") -> None:
        """Run one row's parsing, make(*args); a RowRefused becomes a Refusal and reading goes on. `partner_id`:
        the row's own source id for a partner or a group, so what names it is refused with it."""
        try:
            row = make(*args)
        except RowRefused as refused:
            self.refuse(where, kind, refused.reason, partner_id=partner_id)
            return
        if row is None:
            return
        rows = row if isinstance(row, list) else [row]
        for one in rows:
            self._bucket(one).append(one)

    def _bucket(self, row: Any) -> list[Any]:
        if isinstance(row, PartnerRow):
            return self.rows.partners
        if isinstance(row, LinkRow):
            return self.rows.links
        if isinstance(row, ReferralRow):
            return self.rows.referrals
        if isinstance(row, GroupRow):
            return self.rows.groups
        if isinstance(row, CodeRow):
            return self.rows.codes
        return self.rows.commissions

    def finish(self) -> Source:
        partners = self._unique_partners()
        known = {row.source_id for row in partners}
        links = self._unique_links(known)
        referrals = [
            row for row in self.rows.referrals if self._partner_ok(row.where, "referral", row.partner_source_id, known)
        ]
        referrals = self._unique_ids(referrals, "referral")
        # A void commission is skipped by its status (the engine counts it), whoever it names.
        commissions = [
            row
            for row in self.rows.commissions
            if row.status == "void" or self._partner_ok(row.where, "commission", row.partner_source_id, known)
        ]
        commissions = self._unique_ids(commissions, "commission")
        groups = self._unique_groups()
        partners = self._partner_groups(partners, {row.source_id for row in groups})
        codes = self._unique_codes(known)
        refusals = sorted(self.rows.refusals, key=_where_key)
        return replace(
            self.rows,
            partners=partners,
            links=links,
            referrals=referrals,
            commissions=commissions,
            refusals=refusals,
            groups=groups,
            codes=codes,
        )

    def _unique_groups(self) -> list[GroupRow]:
        """One row per group id: the same campaign is listed with every partner in it, and in its own file; the
        row that gives the group's terms wins over one that names it only."""
        by_id: dict[str, int] = {}
        kept: list[GroupRow] = []
        for row in self.rows.groups:
            if row.source_id not in by_id:
                by_id[row.source_id] = len(kept)
                kept.append(row)
                continue
            earlier = kept[by_id[row.source_id]]
            if not (earlier.commission_type or earlier.is_default) and (row.commission_type or row.is_default):
                kept[by_id[row.source_id]] = replace(row, where=earlier.where)
        return kept

    def _partner_groups(self, partners: list[PartnerRow], groups: set[str]) -> list[PartnerRow]:
        """A partner's group id that no group row names: refused at the move when a groups file was read (the
        engine names it), otherwise dropped (the partner stays in the default group)."""
        kept = []
        for row in partners:
            group = row.group_source_id
            if group and group not in groups and group in self.refused_groups:
                self.refuse(
                    row.where,
                    "move",
                    f"partner {row.source_id} stays in the default group: its group {group} was refused "
                    f"({self.refused_groups[group]})",
                )
                row = replace(row, group_source_id="")
            elif group and group not in groups and not self.saw_group_file:
                row = replace(row, group_source_id="")
            kept.append(row)
        return kept

    def _unique_codes(self, known: set[str]) -> list[CodeRow]:
        owners: dict[str, CodeRow] = {}
        kept: list[CodeRow] = []
        for row in self.rows.codes:
            if not self._partner_ok(row.where, "code", row.partner_source_id, known):
                continue
            key = row.code.strip().upper()  # codes are case-insensitive (groups.codes.code_normalized)
            owner = owners.get(key)
            if owner is None:
                owners[key] = row
                kept.append(row)
            elif owner.partner_source_id != row.partner_source_id:
                self.refuse(
                    row.where,
                    "code",
                    f"code {row.code!r} is already the code of partner {owner.partner_source_id} ({owner.where})",
                )
        return kept

    def _unique_partners(self) -> list[PartnerRow]:
        by_id: dict[str, PartnerRow] = {}
        by_email: dict[str, PartnerRow] = {}
        kept: list[PartnerRow] = []
        for row in self.rows.partners:
            if row.source_id in by_id:
                earlier = by_id[row.source_id].where
                self.refuse(row.where, "partner", f"partner {row.source_id} appears twice (first at {earlier})")
                continue
            if row.email in by_email:
                other = by_email[row.email]
                self.refuse(
                    row.where,
                    "partner",
                    f"email {row.email} is already the email of partner {other.source_id} ({other.where})",
                    partner_id=row.source_id,
                )
                continue
            by_id[row.source_id] = row
            by_email[row.email] = row
            kept.append(row)
        return kept

    def _partner_ok(self, where: str, kind: str, partner_id: str, known: set[str]) -> bool:
        if partner_id in self.refused_partners and partner_id not in known:
            self.refuse(where, kind, f"partner {partner_id} was refused ({self.refused_partners[partner_id]})")
            return False
        if self.saw_partner_file and partner_id not in known:
            self.refuse(where, kind, f"partner {partner_id} is not in the partners file")
            return False
        return True

    def _unique_links(self, known: set[str]) -> list[LinkRow]:
        owners: dict[str, LinkRow] = {}
        kept: list[LinkRow] = []
        for row in self.rows.links:
            if not self._partner_ok(row.where, "link", row.partner_source_id, known):
                continue
            owner = owners.get(row.code.lower())
            if owner is None:
                owners[row.code.lower()] = row
                kept.append(row)
            elif owner.partner_source_id != row.partner_source_id:
                self.refuse(
                    row.where,
                    "link",
                    f"code {row.code!r} is already the code of partner {owner.partner_source_id} ({owner.where})",
                )
            # the same code listed twice for the same partner is one link
        return kept

    def _unique_ids(self, rows: list[Any], kind: str) -> list[Any]:
        seen: dict[str, str] = {}
        kept = []
        for row in rows:
            if row.source_id in seen:
                self.refuse(row.where, kind, f"{kind} {row.source_id} appears twice (first at {seen[row.source_id]})")
                continue
            seen[row.source_id] = row.where
            kept.append(row)
        return kept


def _long_number(document: str) -> str:
    """Where the first number longer than Python converts is ("line 3: a number longer than 4300 digits")."""
    digits = sys.get_int_max_str_digits()
    found = re.search(rf"\d{{{digits + 1}}}", document)
    line = f"line {document.count(chr(10), 0, found.start()) + 1}: " if found else ""
    return f"{line}a number longer than {digits} digits"


def _where_key(refusal: Refusal) -> tuple[str, int]:
    """Refusals in file order: "a.csv line 9" before "a.csv line 10"."""
    name, _, number = refusal.where.rpartition(" ")
    return (name, int(number) if number.isdigit() else 0)


def code_of(value: Any) -> str:
    code = text(value)
    if not code:
        raise RowRefused("code is missing")
    if len(code) > CODE_MAX_LENGTH:
        raise RowRefused(f"code is longer than {CODE_MAX_LENGTH} characters")
    if any(character.isspace() for character in code):
        raise RowRefused(f"code {code!r} has a space: a link could not carry it")
    return code


# Far above any real commission rate in minor units, within Program.commission_rate's 14 digits (4 decimals).
MAX_RATE = Decimal("9999999999")
# A hundred years (programs.models.DURATION_MONTHS_MAX).
MAX_MONTHS = 1200


def decimal_of(value: Any, what: str) -> Decimal:
    """A number the export gives (a JSON number or its text) as a Decimal; RowRefused for anything else."""
    if isinstance(value, bool) or value is None or text(value) == "":
        raise RowRefused(f"{what} is missing")
    raw = repr(value) if isinstance(value, float) else text(value)
    try:
        number = Decimal(raw)
    except InvalidOperation:
        raise RowRefused(f"{what} {raw!r} is not a number") from None
    if not number.is_finite():
        raise RowRefused(f"{what} {raw!r} is not a number")
    return number


def percent_of(value: Any, what: str) -> Decimal:
    """A percentage above 0 and at most 100, with at most 4 decimals (as a group's rate is kept)."""
    number = decimal_of(value, what)
    if number <= 0 or number > 100:
        raise RowRefused(f"{what} {text(value)} is not a percentage above 0 and at most 100")
    if number != number.quantize(Decimal("0.0001")):
        raise RowRefused(f"{what} {text(value)} has more than 4 decimals")
    return number


def minor_amount_of(value: Any, what: str) -> int:
    """A whole amount in minor units above 0 (a fixed commission or discount in cents), at most MAX_RATE."""
    number = decimal_of(value, what)
    if number != number.to_integral_value():
        raise RowRefused(f"{what} {text(value)} in cents has decimals")
    if number <= 0:
        raise RowRefused(f"{what} {text(value)} is not above 0")
    if number > MAX_RATE:
        raise RowRefused(f"{what} {text(value)} is too large")
    return int(number)


def months_of(value: Any, what: str) -> int:
    """A whole number of months from 0 to MAX_MONTHS."""
    number = decimal_of(value, what)
    if number != number.to_integral_value() or number < 0 or number > MAX_MONTHS:
        raise RowRefused(f"{what} {text(value)} is not a whole number of months from 0 to {MAX_MONTHS}")
    return int(number)


def days_of(value: Any, what: str) -> int:
    """A whole number of days from 0 to 36500 (a group's hold period)."""
    number = decimal_of(value, what)
    if number != number.to_integral_value() or number < 0 or number > 36500:
        raise RowRefused(f"{what} {text(value)} is not a whole number of days from 0 to 36500")
    return int(number)


def group_name_of(value: Any, fallback: str) -> str:
    """A group's name as the program shows it (at most 100 characters); the fallback when it has none."""
    name = " ".join(text(value).split())
    return (name or fallback)[:100]


def required(value: Any, what: str) -> str:
    result = text(value)
    if not result:
        raise RowRefused(f"{what} is missing")
    return result


def name_of(*parts: Any) -> str:
    return " ".join(text(part) for part in parts if text(part))


def where_csv(name: str, line: int) -> str:
    return f"{name} line {line}"


def where_json(name: str, number: int) -> str:
    return f"{name} item {number}"


def items_with_where(name: str, items: list[Item]) -> Iterator[tuple[str, Item]]:
    for number, item in enumerate(items, start=1):
        yield where_json(name, number), item


def unknown_file(name: str, expected: str) -> ImportFileError:
    return ImportFileError(f"{name}: not a file this import knows; expected {expected}")
