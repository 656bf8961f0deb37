"""Importing what another platform's export says (an imports.records.Source) into a program: partners and their
enrolments, links with their codes unchanged, referrals as customers (with a lead each), and historical sales with
their commissions and the ledger entries that make each partner's opening balance; and, where the export gives them,
the platform's campaigns or groups as groups of the program (the platform's default one is the program's default
group, whose terms stay the program's), each partner placed in their group once, and each partner's coupon codes.

Every row is first planned (created, matched or skipped; or refused, with where and why) against what the program
already holds, reading in batches; a dry run stops there and writes nothing. A real run then writes kind by kind in
batches of `batch_size` rows, each batch in one transaction with its ImportedRecords and the run's progress, so a
crash leaves whole batches only. Running the same source again resumes: rows whose ImportedRecord exists are not
written again, and the unique ImportedRecord (program, platform, kind, source id) stops a second copy even when two
runs race. The run stays "running" (then "interrupted") until every batch is in.

Historical rows announce nothing: no webhooks and no emails for events that happened on the old platform. Placing a
partner in their group goes through groups.services.partner_move, which records the GroupChange (reason import) and
sends partner.group_changed as every move does: the partner's terms here change with it."""

import hashlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import BaseConstraint, Q
from django.db.models.functions import Lower
from django.utils import timezone

from commissions.approval import review_new
from commissions.models import Commission, CommissionReview, CommissionStatus, LedgerEntry
from commissions.services import CommissionActionRefused, commission_paid_elsewhere, commission_void
from core.currency import Currency
from core.errors import BadRequestError, ConflictError
from core.money import money
from groups.codes import code_register, code_valid
from groups.messages import CODE_INVALID
from groups.models import CouponCode, GroupChange, PartnerGroup
from groups.selectors import default_group
from groups.services import GROUP_FIELDS, Move, group_create, partner_move
from programs.link_aliases import RESERVED_LINK_PARAMS, link_aliases_of
from programs.models import Partner, PartnerProgram, Program, ReferralLink
from programs.services import SHORT_LINK_PATTERN
from tracking.counters import partner_leads_add
from tracking.models import IMPORTED_PROVIDER_PREFIX, Customer, CustomerStatus, LeadEvent, SaleEvent
from tracking.services.common import new_click_id

from .models import ImportedRecord, ImportRun, ImportUpload
from .platforms import PLATFORMS
from .records import (
    KINDS,
    CodeRow,
    CommissionRow,
    GroupRow,
    ImportFileError,
    LinkRow,
    PartnerRow,
    ReferralRow,
    Refusal,
    Source,
)

logger = logging.getLogger("svc.imports")

PARTNER, LINK, REFERRAL, COMMISSION, GROUP, MOVE, CODE = KINDS
# The kinds every import has; groups, their moves and codes only where the platform's export gives them.
BASIC_KINDS = (PARTNER, LINK, REFERRAL, COMMISSION)
KIND_LABELS = {GROUP: "groups", MOVE: "partners placed in groups", CODE: "coupon codes"}
CREDIT_MEMO = "Imported from {label}: commission {source_id}"
PAID_MEMO = "Paid on {label} before the move"
# A batch that met rows another run of the same program imported meanwhile: rolled back whole, nothing twice.
RAN_AT_ONCE = "another import of this program wrote the same rows at the same time; run it again to finish"
# The group's checks (groups.models.PartnerGroup constraints) in the owner's words.
GROUP_CHECKS = {
    "group_rate_positive": "commission_rate must be above 0",
    "group_percent_at_most_100": "commission_rate of a percent commission is at most 100",
    "group_discount_complete": "the discount needs a percent above 0 and at most 100, or an amount above 0",
    "group_discount_months": "a discount for the first N months needs N of at least 1",
}


def _said_by(constraint_name: str) -> str:
    """The violation message of PartnerGroup's constraint of that name ("" when it has none of its own)."""
    for constraint in PartnerGroup._meta.constraints:
        if constraint.name == constraint_name and isinstance(constraint, BaseConstraint):
            message = constraint.violation_error_message
            return "" if message == BaseConstraint.default_violation_error_message else str(message)
    return ""


# A planned group that is the program's default group, before the program has its row (made on the real run).
DEFAULT_GROUP = object()
# How many rows a read of existing objects asks for at once (IN lists stay short).
READ_CHUNK = 2000

T = TypeVar("T")


# --- The report ------------------------------------------------------------------------------------------------


@dataclass
class KindCounts:
    created: int = 0
    matched: int = 0
    skipped: int = 0
    refused: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "matched": self.matched, "skipped": self.skipped, "refused": self.refused}


# A partner whose old-platform figure differs from what arrives here is named; past this many, only counted.
MISMATCHES_NAMED = 20


@dataclass
class BalanceCheck:
    """One currency's money, before confirming: what the import leaves partners owed (pending and approved
    commissions not yet paid, summed over the partners it brings); and, over the partners whose export says what
    the old platform showed them owed, that figure beside what arrives for them here (their approved commissions
    only, where the figure leaves pending ones out), and who differs. `reported_minor`
    is None when no partner's export says it."""

    currency: str
    expected_minor: int = 0
    reported_minor: int | None = None
    compared_expected_minor: int = 0
    compared_partners: int = 0
    mismatches: list[str] = field(default_factory=list)
    mismatch_count: int = 0

    @property
    def difference_minor(self) -> int | None:
        return None if self.reported_minor is None else self.compared_expected_minor - self.reported_minor

    def as_dict(self) -> dict[str, Any]:
        def shown(amount: int | None) -> str | None:
            return None if amount is None else money(amount, self.currency)

        return {
            "currency": self.currency,
            "expected": money(self.expected_minor, self.currency),
            "compared_expected": money(self.compared_expected_minor, self.currency),
            "reported": shown(self.reported_minor),
            "difference": shown(self.difference_minor),
            "compared_partners": self.compared_partners,
            "mismatches": self.mismatches,
            "mismatch_count": self.mismatch_count,
        }

    def line(self, label: str) -> str:
        expected = money(self.expected_minor, self.currency)
        if self.reported_minor is None:
            return f"  {self.currency}: {expected} owed on arrival ({label}'s export shows no balance to compare)"
        assert self.difference_minor is not None
        here = money(self.compared_expected_minor, self.currency)
        verdict = (
            "matches"
            if not self.mismatch_count
            else f"difference {money(self.difference_minor, self.currency)}, {self.mismatch_count} partner(s) differ"
        )
        return (
            f"  {self.currency}: {expected} owed on arrival; for the {self.compared_partners} partner(s) {label} "
            f"reports, {here} here and {money(self.reported_minor, self.currency)} on {label}: {verdict}"
        )


@dataclass
class ImportReport:
    """What an import did (or, dry, would do): per kind, rows created, matched (already here), skipped (void
    commissions, visitors) and refused; every refusal named by where and why. Then the money per currency beside
    what the old platform showed (`balances`), the partners who arrive deactivated, and the steps that keep the
    imported links answering (`link_steps`)."""

    platform: str
    dry_run: bool
    counts: dict[str, KindCounts] = field(default_factory=lambda: {kind: KindCounts() for kind in KINDS})
    refusals: list[Refusal] = field(default_factory=list)
    run_id: int | None = None
    status: str = ""
    label: str = ""
    balances: list[BalanceCheck] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    link_steps: list[str] = field(default_factory=list)
    # Commissions imported before whose status changed on the old platform since: what the run does (or, dry,
    # would do) about each, or why it leaves one to the owner.
    changes: list[str] = field(default_factory=list)

    def refuse(self, where: str, kind: str, reason: str) -> None:
        self.refusals.append(Refusal(where=where, kind=kind, reason=reason))
        self.counts[kind].refused += 1

    def counts_dict(self) -> dict[str, dict[str, int]]:
        return {kind: counts.as_dict() for kind, counts in self.counts.items()}

    def lines(self) -> list[str]:
        """The report as text: one line per kind, then every refused row ("<file> line <n>: <reason>")."""
        head = "Dry run (nothing written)" if self.dry_run else f"Import {self.status or 'done'}"
        lines = [f"{head}: {self.platform}"]
        for kind in KINDS:
            c = self.counts[kind]
            if kind not in BASIC_KINDS and not any(c.as_dict().values()):
                continue
            label = KIND_LABELS.get(kind, f"{kind}s")
            lines.append(
                f"  {label}: {c.created} {'to create' if self.dry_run else 'created'}, {c.matched} matched, "
                f"{c.skipped} skipped, {c.refused} refused"
            )
        if self.balances:
            lines.append("Owed to partners, per currency:")
            for balance in self.balances:
                lines.append(balance.line(self.label or self.platform))
                lines.extend(f"    {mismatch}" for mismatch in balance.mismatches)
        if self.deactivated:
            lines.append(f"Arriving deactivated, their links off ({len(self.deactivated)}):")
            lines.extend(f"  {entry}" for entry in self.deactivated)
        if self.link_steps:
            lines.append("To keep the imported links working:")
            lines.extend(f"  {step}" for step in self.link_steps)
        if self.changes:
            lines.append(f"Changed on {self.label or self.platform} since imported ({len(self.changes)}):")
            lines.extend(f"  {change}" for change in self.changes)
        if self.refusals:
            lines.append(f"Refused rows ({len(self.refusals)}):")
            lines.extend(f"{refusal.where}: {refusal.reason}" for refusal in self.refusals)
        return lines

    def summary(self) -> dict[str, Any]:
        """What the dashboard keeps of a dry run (ImportUpload.report) beside the counts and refusals."""
        return {
            "balances": [balance.as_dict() for balance in self.balances],
            "deactivated": self.deactivated,
            "link_steps": self.link_steps,
            "changes": self.changes,
        }


def source_digest(source: Source) -> str:
    """SHA-256 over everything the source says: the same export read again has the same digest (a rerun resumes
    its run), a changed one another."""
    digest = hashlib.sha256(source.platform.encode())
    for rows in (
        source.partners,
        source.links,
        source.referrals,
        source.commissions,
        source.refusals,
        source.groups,
        source.codes,
    ):
        for row in rows:
            digest.update(repr(row).encode())
        digest.update(b"\x00")
    return digest.hexdigest()


class UnknownPlatform(Exception):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.message = f"Unknown platform {name!r}. Known: {', '.join(known) or 'none'}"
        super().__init__(self.message)


def platforms() -> dict[str, Any]:
    """The registered platform readers by name (imports.platforms.PLATFORMS)."""
    return dict(PLATFORMS)


def source_read(platform: str, files: list[tuple[str, bytes]], *, currency: str = "") -> Source:
    """The platform's files read into a Source. `currency`: the owner's answer for a platform whose files carry
    none (Platform.asks_currency; ignored by the others). Raises UnknownPlatform, or the reader's ImportFileError."""
    registered = platforms()
    reader = registered.get(platform)
    if reader is None:
        raise UnknownPlatform(platform, sorted(registered))
    source: Source = reader.read(files, currency=currency)
    return source


def bytes_capped(chunks: Iterable[bytes], *, limit: int) -> bytes | None:
    """The chunks joined, or None once they pass `limit` bytes: an endless source (/dev/zero) is read no further
    than that. The Import page and `manage.py import` read every file through this."""
    data = bytearray()
    for chunk in chunks:
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


def platform_label(platform: str) -> str:
    """The platform's name as people read it ("Rewardful"); the key itself for a platform not registered."""
    entry = platforms().get(platform)
    return str(getattr(entry, "label", platform)) if entry is not None else platform


def link_param_steps(
    program: Program, *, platform: str, links: int, by_param: dict[str, int] | None = None
) -> list[str]:
    """What keeps the platform's links already out there answering: each link parameter the program does not
    accept yet, to turn on, with how many imported links it keeps working; for a platform whose links are short
    links on its own domain, where to point them. `by_param`: how many of the links carry each parameter, where the
    export says per link (Tolt); otherwise every link counts for each of the platform's parameters."""
    entry = platforms().get(platform)
    if entry is None or not links:
        return []
    label = entry.label
    counts = dict(by_param or {})
    if not counts:
        if not entry.link_params:
            return [f"Point the {label} short links at your landing page with ?via=<code> so they keep answering"]
        counts = dict.fromkeys(entry.link_params, links)
    accepted = set(RESERVED_LINK_PARAMS) | set(link_aliases_of(program.link_aliases))
    return [
        f"Turn on ?{param}= (Overview → Link parameters → Also accept) to keep the {count} imported {label} "
        f"link{'' if count == 1 else 's'} working"
        for param, count in counts.items()
        if param not in accepted
    ]


# A test replaces this to stop a run in the middle of a batch (after its rows are inserted, before it commits).
def batch_hook(kind: str, number: int) -> None:
    """Called inside each batch's transaction, after its objects are inserted; does nothing."""


# --- Planning --------------------------------------------------------------------------------------------------


@dataclass
class _Known:
    """An ImportedRecord already written: the object it points at and whether this run (an earlier attempt of it)
    created that object."""

    object_id: int
    created: bool
    run_id: int | None


@dataclass
class _Item:
    """A planned row: `obj` is a new unsaved object (created) or the id of one already here (matched)."""

    row: Any
    obj: Any
    created: bool
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def object_id(self) -> int | None:
        return self.obj if isinstance(self.obj, int) else self.obj.pk

    @property
    def saved_id(self) -> int:
        pk = self.object_id
        assert pk is not None, "written before its record"
        return pk


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _email_key(email: str) -> str:
    return (email or "").strip().lower()


def _same(one: Any, other: Any) -> bool:
    """Whether two planned objects (or ids) are the same: one object, or saved with the same id."""
    return one is other or (_ref(one) is not None and _ref(one) == _ref(other))


def _ref(value: Any) -> int | None:
    """The id of a planned object (None while it is unsaved, in a dry run) or the id itself."""
    if value is None or isinstance(value, int):
        return value
    pk: int | None = value.pk
    return pk


class _Importer:
    def __init__(
        self, *, program: Program, source: Source, dry_run: bool, actor: Any, batch_size: int, run: ImportRun | None
    ) -> None:
        self.program = program
        self.source = source
        self.platform = source.platform
        self.label = platform_label(source.platform)
        self.dry_run = dry_run
        self.actor = actor
        self.batch_size = max(1, batch_size)
        self.run = run
        self.now = timezone.now()
        self.report = ImportReport(platform=source.platform, dry_run=dry_run)
        for refusal in source.refusals:
            self.report.refuse(refusal.where, refusal.kind if refusal.kind in KINDS else PARTNER, refusal.reason)
        self.known: dict[str, dict[str, _Known]] = {kind: {} for kind in KINDS}
        # Source id -> a Partner/ReferralLink/Customer (unsaved in a dry run) or its id.
        self.partners: dict[str, Any] = {}
        self.links_by_code: dict[str, tuple[Any, Any]] = {}  # code -> (link, partner)
        self.customers: dict[str, Any] = {}
        self.batches = run.batches_done if run else 0
        self.click_ids: dict[int, str] = {}
        self.gone: dict[str, set[int]] = {}
        self.deactivated_sources = {row.source_id for row in source.partners if row.deactivated}
        # Commission rows imported before, with the Commission each became (for what changed since).
        self.known_commissions: list[tuple[CommissionRow, int]] = []
        # (partner source id, currency) -> minor units owed on arrival: pending and approved, not paid.
        self.owed: dict[tuple[str, str], int] = {}
        self.owed_approved: dict[tuple[str, str], int] = {}  # of which approved (past their hold)
        # Group source id -> a PartnerGroup (unsaved in a dry run), its id, or DEFAULT_GROUP before the program
        # has its default group row; and where each refused group was refused.
        self.groups: dict[str, Any] = {}
        self.groups_refused: dict[str, str] = {}

    # Reading what is already here ----------------------------------------------------------------------------

    def load_known(self) -> None:
        rows = ImportedRecord.objects.filter(program=self.program, platform=self.platform).values_list(
            "kind", "source_id", "object_id", "created", "run_id"
        )
        for kind, source_id, object_id, created, run_id in rows.iterator(chunk_size=READ_CHUNK):
            if kind in self.known:
                self.known[kind][source_id] = _Known(object_id, created, run_id)
        # Objects imported before and deleted since: their rows are refused (the record still holds the source id).
        self.gone = {}
        for kind, model in (
            (PARTNER, Partner),
            (LINK, ReferralLink),
            (REFERRAL, Customer),
            (GROUP, PartnerGroup),
            (CODE, CouponCode),
        ):
            ids = sorted({known.object_id for known in self.known[kind].values()})
            present: set[int] = set()
            for chunk in _chunks(ids, READ_CHUNK * 5):
                present.update(model.objects.filter(pk__in=list(chunk)).values_list("pk", flat=True))
            self.gone[kind] = set(ids) - present

    def _gone(self, kind: str, row: Any) -> bool:
        """Refuses a row whose object was imported before and is no longer here (deleted since)."""
        if self.known[kind][row.source_id].object_id not in self.gone.get(kind, ()):
            return False
        self.report.refuse(row.where, kind, f"{kind} {row.source_id} was imported before and has been deleted since")
        return True

    def _count_known(self, kind: str, known: _Known) -> None:
        # Created by an earlier attempt of this very run (resumed): still this run's creation.
        mine = self.run is not None and known.run_id == self.run.pk and known.created
        counts = self.report.counts[kind]
        if mine:
            counts.created += 1
        else:
            counts.matched += 1

    # Partners ------------------------------------------------------------------------------------------------

    def plan_partners(self) -> list[_Item]:
        known = self.known[PARTNER]
        fresh = [row for row in self.source.partners if row.source_id not in known]
        emails = sorted({_email_key(row.email) for row in fresh if _email_key(row.email)})
        existing: dict[str, int] = {}
        for chunk in _chunks(emails, READ_CHUNK):
            found = (
                Partner.objects.filter(workspace_id=self.program.workspace_id)
                .annotate(email_key=Lower("email"))
                .filter(email_key__in=list(chunk))
                .order_by("pk")
                .values_list("email_key", "pk")
            )
            for email, pk in found:
                existing.setdefault(email, pk)
        items: list[_Item] = []
        new_by_email: dict[str, Partner] = {}
        for row in self.source.partners:
            if row.source_id in known:
                if self._gone(PARTNER, row):
                    continue
                self.partners[row.source_id] = known[row.source_id].object_id
                self._count_known(PARTNER, known[row.source_id])
                continue
            if row.source_id in self.partners:
                self.report.refuse(row.where, PARTNER, f"partner {row.source_id} appears twice")
                continue
            email = _email_key(row.email)
            if not email:
                self.report.refuse(row.where, PARTNER, "partner has no email")
                continue
            if email in existing:
                item = _Item(row, existing[email], created=False)
                self.report.counts[PARTNER].matched += 1
            elif email in new_by_email:
                item = _Item(row, new_by_email[email], created=False)
                self.report.counts[PARTNER].matched += 1
            else:
                partner = Partner(
                    workspace_id=self.program.workspace_id,
                    name=(row.name or row.email).strip()[:200],
                    email=row.email.strip(),
                    notes=self._partner_notes(row),
                    is_active=not row.deactivated,
                    created_at=row.created_at or self.now,
                )
                new_by_email[email] = partner
                item = _Item(row, partner, created=True)
                self.report.counts[PARTNER].created += 1
            self.partners[row.source_id] = item.obj
            items.append(item)
            if row.deactivated:
                here = "" if item.created else " (already a partner here: stays active; the imported links are off)"
                self.report.deactivated.append(f"partner {row.source_id} ({row.email}): {row.deactivated}{here}")
        return items

    def _partner_notes(self, row: PartnerRow) -> str:
        note = f"Imported from {self.label} (partner {row.source_id})."
        if row.deactivated:
            note += f" Arrived deactivated: {row.deactivated}."
        if row.payout_email:
            rail = {"paypal": "PayPal", "wise": "Wise"}.get(row.payout_rail, "")
            note += f" Payout email on {self.label}: {row.payout_email}{f' ({rail})' if rail else ''}."
        return note

    def write_partners(self, items: list[_Item]) -> None:
        for number, batch in self._batches(PARTNER, items):
            new = [item.obj for item in batch if item.created and item.obj.pk is None]
            Partner.objects.bulk_create(new)
            PartnerProgram.objects.bulk_create(
                [
                    PartnerProgram(partner_id=pk, program_id=self.program.pk, created_at=self.now)
                    for pk in sorted({item.object_id for item in batch if item.object_id is not None})
                ],
                ignore_conflicts=True,
            )
            self._commit_batch(PARTNER, number, batch)

    # Groups, their partners, codes ----------------------------------------------------------------------------

    def _group_fields(self, row: GroupRow) -> dict[str, Any]:
        """The group's columns: the platform's terms where its export gives them, the program's otherwise."""
        program = self.program
        fields: dict[str, Any] = {"name": row.name.strip()[:100]}
        if row.commission_type:
            fields.update(
                commission_type=row.commission_type,
                commission_rate=row.commission_rate,
                duration_months=row.duration_months,
            )
        else:
            fields.update(
                commission_type=program.commission_type,
                commission_rate=program.commission_rate,
                duration_months=program.duration_months,
            )
        fields["hold_days"] = program.hold_days if row.hold_days is None else row.hold_days
        if row.discount_type:
            fields.update(
                discount_type=row.discount_type,
                discount_percent=row.discount_percent,
                discount_amount_cents=row.discount_amount_minor,
                discount_currency=row.discount_currency,
                discount_duration=row.discount_duration,
                discount_duration_months=row.discount_duration_months,
            )
        return fields

    def _group_checked(self, row: GroupRow) -> PartnerGroup | str:
        """The unsaved group the row makes, or why the group's own checks refuse it (its field and problem)."""
        group = PartnerGroup(program=self.program, **self._group_fields(row))
        try:
            group.full_clean(exclude=["program", "slug"], validate_unique=False)
        except ValidationError as refusal:
            field_name, problems = next(iter(refusal.message_dict.items()))
            problem = problems[0]
            if field_name == NON_FIELD_ERRORS:
                # Django names the constraint in its message, or says the constraint's own violation message.
                problem = next(
                    (words for name, words in GROUP_CHECKS.items() if name in problem or problem in _said_by(name)),
                    problem,
                )
            else:
                problem = f"{field_name}: {problem}"
            return f"group {row.source_id} ({row.name!r}) cannot be a group here: {problem}"
        return group

    def plan_groups(self) -> list[_Item]:
        """A campaign or group becomes a group of the program (matched by name when the program has one so
        named); the platform's default one is the program's default group, whose terms stay the program's."""
        known = self.known[GROUP]
        existing = {
            name.upper(): (pk, is_default)
            for pk, name, is_default in PartnerGroup.objects.filter(program=self.program).values_list(
                "pk", "name", "is_default"
            )
        }
        default_pk = next((pk for pk, is_default in existing.values() if is_default), None)
        items: list[_Item] = []
        planned_names: dict[str, PartnerGroup] = {}
        for row in self.source.groups:
            if row.source_id in known:
                if self._gone(GROUP, row):
                    self.groups_refused[row.source_id] = row.where
                    continue
                self.groups[row.source_id] = known[row.source_id].object_id
                self._count_known(GROUP, known[row.source_id])
                continue
            if row.is_default:
                target: Any = default_pk if default_pk is not None else DEFAULT_GROUP
                self.groups[row.source_id] = target
                self.report.counts[GROUP].matched += 1
                items.append(_Item(row, target, created=False))
                continue
            name = row.name.strip()[:100].upper()
            if name in existing:
                self.groups[row.source_id] = existing[name][0]
                self.report.counts[GROUP].matched += 1
                items.append(_Item(row, existing[name][0], created=False))
                continue
            if name in planned_names:
                self.groups[row.source_id] = planned_names[name]
                self.report.counts[GROUP].matched += 1
                items.append(_Item(row, planned_names[name], created=False))
                continue
            group = self._group_checked(row)
            if isinstance(group, str):
                self.report.refuse(row.where, GROUP, group)
                self.groups_refused[row.source_id] = row.where
                continue
            planned_names[name] = group
            self.groups[row.source_id] = group
            self.report.counts[GROUP].created += 1
            items.append(_Item(row, group, created=True))
        return items

    def write_groups(self, items: list[_Item]) -> None:
        for number, batch in self._batches(GROUP, items):
            for item in batch:
                if item.obj is DEFAULT_GROUP:
                    item.obj = default_group(self.program).pk
                elif isinstance(item.obj, PartnerGroup) and item.obj.pk is None:
                    fields = {name: getattr(item.obj, name) for name in GROUP_FIELDS}
                    try:
                        item.obj.pk = group_create(program=self.program, **fields).pk
                    except ConflictError:
                        # An owner made a group of that name meanwhile: it is the group, as a dry run would say.
                        same = PartnerGroup.objects.get(program=self.program, name__iexact=item.obj.name)
                        item.obj.pk, item.created = same.pk, False
                        self.report.counts[GROUP].created -= 1
                        self.report.counts[GROUP].matched += 1
                self.groups[item.row.source_id] = item.obj
            self._commit_batch(GROUP, number, batch)

    def plan_moves(self) -> list[_Item]:
        """Each imported partner whose export names a campaign or group is placed in that group, once: a rerun
        (the ImportedRecord) leaves them where an owner may have moved them since. A partner already here and in a
        group other than the default one stays there."""
        known = self.known[MOVE]
        wanted = [row for row in self.source.partners if row.group_source_id and row.source_id in self.partners]
        partner_ids = sorted({pk for row in wanted if (pk := _ref(self.partners[row.source_id])) is not None})
        current: dict[int, int | None] = {}
        for chunk in _chunks(partner_ids, READ_CHUNK):
            current.update(
                PartnerProgram.objects.filter(program=self.program, partner_id__in=list(chunk)).values_list(
                    "partner_id", "group_id"
                )
            )
        default_pk = (
            PartnerGroup.objects.filter(program=self.program, is_default=True).values_list("pk", flat=True).first()
        )
        names = dict(PartnerGroup.objects.filter(program=self.program).values_list("pk", "name"))
        items: list[_Item] = []
        for row in wanted:
            if row.source_id in known:
                self._count_known(MOVE, known[row.source_id])
                continue
            group = self.groups.get(row.group_source_id)
            if group is None:
                refused = self.groups_refused.get(row.group_source_id)
                reason = f"was refused ({refused})" if refused else "is not in the export"
                self.report.refuse(
                    row.where,
                    MOVE,
                    f"partner {row.source_id} stays in the default group: its group {row.group_source_id} {reason}",
                )
                continue
            # None: the default group (an enrolment's NULL group, or the default group's row).
            new = isinstance(group, PartnerGroup) and group.pk is None  # planned in a dry run: nobody in it yet
            target = None if group is DEFAULT_GROUP or _ref(group) == default_pk else _ref(group)
            here = current.get(_ref(self.partners[row.source_id]) or 0)
            here = None if here == default_pk else here
            if here is not None and (new or here != target):
                self.report.refuse(
                    row.where,
                    MOVE,
                    f"partner {row.source_id} is in the group {names.get(here, here)!r} here already: left there "
                    f"(not moved to {self.label}'s group {row.group_source_id})",
                )
                continue
            if not new and here == target:
                self.report.counts[MOVE].matched += 1  # in that group already
                items.append(_Item(row, group, created=False))
                continue
            self.report.counts[MOVE].created += 1
            items.append(_Item(row, group, created=True))
        return items

    def write_moves(self, items: list[_Item]) -> None:
        move = Move(reason=GroupChange.Reason.IMPORT, actor=f"import:{self.platform}"[:200], announce=False)
        for number, batch in self._batches(MOVE, items):
            targets = {self._saved(self.groups[item.row.group_source_id]) for item in batch}
            groups = {group.pk: group for group in PartnerGroup.objects.filter(pk__in=targets)}
            enrolments = {
                enrolment.partner_id: enrolment
                for enrolment in PartnerProgram.objects.select_related("program").filter(
                    program=self.program, partner_id__in=[_ref(self.partners[i.row.source_id]) for i in batch]
                )
            }
            for item in batch:
                item.obj = self._saved(self.groups[item.row.group_source_id])
                enrolment = enrolments[self._saved(self.partners[item.row.source_id])]
                partner_move(enrolment=enrolment, group=groups[item.saved_id], move=move)
            self._commit_batch(MOVE, number, batch)

    @staticmethod
    def _saved(value: Any) -> int:
        """The id of an object a real run has written (or found)."""
        pk = _ref(value)
        assert pk is not None, "written before it is read"
        return pk

    def plan_codes(self) -> list[_Item]:
        """Each partner's coupon codes, registered as they are (groups.codes): a code another partner of the
        program holds already, or one the codes here cannot spell, is refused by name."""
        known = self.known[CODE]
        items: list[_Item] = []
        wanted: dict[str, tuple[CodeRow, Any]] = {}
        for row in self.source.codes:
            if row.source_id in known:
                if not self._gone(CODE, row):
                    self._count_known(CODE, known[row.source_id])
                continue
            partner = self.partners.get(row.partner_source_id)
            if partner is None:
                self.report.refuse(
                    row.where, CODE, f"code {row.code!r} is for partner {row.partner_source_id}, not imported"
                )
                continue
            try:
                normalized = code_valid(row.code)
            except BadRequestError:
                self.report.refuse(row.where, CODE, f"code {row.code!r} cannot be a coupon code here: {CODE_INVALID}")
                continue
            if normalized in wanted:
                if not _same(wanted[normalized][1], partner):
                    self.report.refuse(row.where, CODE, f"code {row.code!r} is held by another partner in this import")
                else:
                    self.report.counts[CODE].matched += 1
                continue
            wanted[normalized] = (row, partner)
        holders: dict[str, tuple[int, int]] = {}
        for chunk in _chunks(sorted(wanted), READ_CHUNK):
            for code, pk, partner_id in CouponCode.objects.filter(
                program=self.program, code__in=list(chunk)
            ).values_list("code", "pk", "partner_id"):
                holders[code] = (pk, partner_id)
        for normalized, (row, partner) in wanted.items():
            if normalized in holders:
                pk, partner_id = holders[normalized]
                if partner_id == _ref(partner):
                    self.report.counts[CODE].matched += 1
                    items.append(_Item(row, pk, created=False))
                else:
                    self.report.refuse(row.where, CODE, f"code {row.code!r} is held by another partner of this program")
                continue
            self.report.counts[CODE].created += 1
            items.append(_Item(row, None, created=True, extra={"partner": partner, "code": normalized}))
        return items

    def write_codes(self, items: list[_Item]) -> None:
        for number, batch in self._batches(CODE, items):
            written: list[_Item] = []
            for item in batch:
                if item.created and item.obj is None:
                    partner = Partner.objects.get(pk=self._saved(item.extra["partner"]))
                    try:
                        item.obj = code_register(
                            program=self.program, partner=partner, code=item.extra["code"], source="import"
                        )
                    except (BadRequestError, ConflictError) as refused:
                        # Taken meanwhile by a partner outside this import: the row is refused, the batch goes on.
                        self.report.counts[CODE].created -= 1
                        self.report.refuse(item.row.where, CODE, f"code {item.row.code!r}: {refused.message}")
                        continue
                written.append(item)
            self._commit_batch(CODE, number, written)

    # Links ---------------------------------------------------------------------------------------------------

    def plan_links(self) -> list[_Item]:
        known = self.known[LINK]
        fresh = [row for row in self.source.links if row.source_id not in known]
        codes = sorted({row.code for row in fresh})
        existing: dict[str, tuple[int, int | None, int | None, int | None]] = {}
        for chunk in _chunks(codes, READ_CHUNK):
            found = ReferralLink.objects.filter(short_link__in=list(chunk)).values_list(
                "short_link", "pk", "program_id", "partner_id", "program__workspace_id"
            )
            for code, pk, program_id, partner_id, workspace_id in found:
                existing[code] = (pk, program_id, partner_id, workspace_id)
        items: list[_Item] = []
        for row in self.source.links:
            if row.source_id in known:
                if self._gone(LINK, row):
                    continue
                self._count_known(LINK, known[row.source_id])
                link_id = known[row.source_id].object_id
                self.links_by_code[row.code] = (link_id, self.partners.get(row.partner_source_id))
                continue
            item = self._plan_link(row, existing)
            if item is not None:
                items.append(item)
        return items

    def _plan_link(self, row: LinkRow, existing: dict[str, tuple[int, int | None, int | None, int | None]]) -> Any:
        partner = self.partners.get(row.partner_source_id)
        if partner is None:
            self.report.refuse(
                row.where, LINK, f"link {row.code!r} is for partner {row.partner_source_id}, not imported"
            )
            return None
        if not SHORT_LINK_PATTERN.fullmatch(row.code):
            self.report.refuse(
                row.where, LINK, f"code {row.code!r} cannot be a link here (1 to 100 of A-Z a-z 0-9 _ -)"
            )
            return None
        if row.code in self.links_by_code:
            _, holder = self.links_by_code[row.code]
            if not _same(holder, partner):
                self.report.refuse(row.where, LINK, f"code {row.code!r} is held by another partner in this import")
                return None
            self.report.counts[LINK].matched += 1
            link, _ = self.links_by_code[row.code]
            return _Item(row, link, created=False)
        if row.code in existing:
            pk, program_id, partner_id, workspace_id = existing[row.code]
            if program_id == self.program.pk and partner_id is not None and partner_id == _ref(partner):
                self.report.counts[LINK].matched += 1
                self.links_by_code[row.code] = (pk, partner)
                return _Item(row, pk, created=False)
            if program_id == self.program.pk:
                reason = f"code {row.code!r} is held by another partner of this program"
            elif workspace_id == self.program.workspace_id:
                reason = f"code {row.code!r} is already used by another program of this workspace"
            else:
                reason = f"code {row.code!r} is already taken (used by another workspace)"
            self.report.refuse(row.where, LINK, reason)
            return None
        link = ReferralLink(
            short_link=row.code,
            program_id=self.program.pk,
            partner_id=_ref(partner),
            # A partner the old platform switched off brings their links off: a click on them answers 410.
            is_active=row.partner_source_id not in self.deactivated_sources,
        )
        self.links_by_code[row.code] = (link, partner)
        self.report.counts[LINK].created += 1
        return _Item(row, link, created=True, extra={"partner": partner})

    def write_links(self, items: list[_Item]) -> None:
        for number, batch in self._batches(LINK, items):
            new = [item.obj for item in batch if item.created and item.obj.pk is None]
            for item in batch:
                if item.created:
                    item.obj.partner_id = _ref(item.extra["partner"])
            ReferralLink.objects.bulk_create(new)
            self._commit_batch(LINK, number, batch)

    # Referrals -----------------------------------------------------------------------------------------------

    def plan_referrals(self, first_sales: dict[str, datetime]) -> list[_Item]:
        known = self.known[REFERRAL]
        fresh = [row for row in self.source.referrals if row.source_id not in known and row.status != "visitor"]
        emails = sorted({_email_key(row.email) for row in fresh if row.email})
        processor_ids = sorted({row.processor_customer_id for row in fresh if row.processor_customer_id})
        by_email: dict[str, int] = {}
        by_processor: dict[str, int] = {}
        real = Customer.objects.filter(program=self.program, is_test=False)
        for chunk in _chunks(emails, READ_CHUNK):
            found = (
                real.annotate(email_key=Lower("email"))
                .filter(email_key__in=list(chunk))
                .order_by("pk")
                .values_list("email_key", "pk")
            )
            for email, pk in found:
                by_email.setdefault(email, pk)
        for chunk in _chunks(processor_ids, READ_CHUNK):
            for processor_id, pk in (
                real.filter(processor_customer_id__in=list(chunk))
                .order_by("pk")
                .values_list("processor_customer_id", "pk")
            ):
                by_processor.setdefault(processor_id, pk)
        items: list[_Item] = []
        for row in self.source.referrals:
            if row.source_id in known:
                if self._gone(REFERRAL, row):
                    continue
                self._count_known(REFERRAL, known[row.source_id])
                self.customers[row.source_id] = known[row.source_id].object_id
                continue
            if row.source_id in self.customers:
                self.report.refuse(row.where, REFERRAL, f"referral {row.source_id} appears twice")
                continue
            partner = self.partners.get(row.partner_source_id)
            if partner is None:
                self.report.refuse(
                    row.where, REFERRAL, f"referral of partner {row.partner_source_id}, who is not imported"
                )
                continue
            if row.status == "visitor":
                self.report.counts[REFERRAL].skipped += 1  # a visit with no sign-up: nothing to attribute later
                continue
            match = by_processor.get(row.processor_customer_id) if row.processor_customer_id else None
            if match is None and row.email:
                match = by_email.get(_email_key(row.email))
            if match is not None:
                self.customers[row.source_id] = match
                self.report.counts[REFERRAL].matched += 1
                items.append(_Item(row, match, created=False))
                continue
            items.append(self._new_customer(row, partner, first_sales.get(row.source_id)))
            self.report.counts[REFERRAL].created += 1
        return items

    def _new_customer(self, row: ReferralRow, partner: Any, first_sale_at: datetime | None) -> _Item:
        at = row.created_at or self.now
        link = None
        if row.link_code and row.link_code in self.links_by_code:
            candidate, holder = self.links_by_code[row.link_code]
            if _same(holder, partner):
                link = candidate
        converted = row.status == "customer" or first_sale_at is not None
        if converted and first_sale_at is None:
            first_sale_at = at
        customer = Customer(
            program_id=self.program.pk,
            click_id=new_click_id(self.program.pk),
            customer_key=row.customer_key or None,
            customer_status=CustomerStatus.CONVERTED if converted else CustomerStatus.LEAD,
            email=row.email.strip()[:254],
            processor_customer_id=row.processor_customer_id,
            first_clicked_at=at,
            last_clicked_at=at,
            # Set for a paying customer, so their renewals follow them past the click's attribution window.
            first_sale_at=first_sale_at,
            created_at=at,
        )
        self.customers[row.source_id] = customer
        return _Item(row, customer, created=True, extra={"partner": partner, "link": link})

    def write_referrals(self, items: list[_Item]) -> None:
        for number, batch in self._batches(REFERRAL, items):
            new_items = [item for item in batch if item.created and item.obj.pk is None]
            for item in new_items:
                item.obj.first_partner_id = _ref(item.extra["partner"])
                item.obj.first_link_id = _ref(item.extra["link"])
            Customer.objects.bulk_create([item.obj for item in new_items])
            leads = [
                LeadEvent(
                    program_id=self.program.pk,
                    customer_id=item.obj.pk,
                    partner_id=item.obj.first_partner_id,
                    click_id=item.obj.click_id,
                    customer_key=item.obj.customer_key or "",
                    email=item.obj.email,
                    lead_timestamp=item.obj.created_at,
                    settled_at=item.obj.created_at,
                    server_mode=True,
                    created_at=item.obj.created_at,
                )
                for item in new_items
            ]
            LeadEvent.objects.bulk_create(leads)
            per_partner: dict[int, int] = {}
            for lead in leads:
                if lead.partner_id:
                    per_partner[lead.partner_id] = per_partner.get(lead.partner_id, 0) + 1
            # The lead path adds to these counters itself (the rollup run adds only clicks and sales): the same
            # UPDATE ... SET leads = leads + n, sent for the batch's partners at once.
            partner_leads_add(program_id=self.program.pk, leads=per_partner)
            self._commit_batch(REFERRAL, number, batch)

    # Commissions ---------------------------------------------------------------------------------------------

    def first_sales(self) -> dict[str, datetime]:
        """Per referral source id, its earliest imported sale (a customer who paid converted then)."""
        first: dict[str, datetime] = {}
        for row in self.source.commissions:
            if row.referral_source_id and row.status != "void":
                at = row.created_at or self.now
                if row.referral_source_id not in first or at < first[row.referral_source_id]:
                    first[row.referral_source_id] = at
        return first

    def plan_commissions(self) -> list[_Item]:
        known = self.known[COMMISSION]
        sale_ids_used: dict[str, int] = {}
        for row in self.source.commissions:
            if row.sale_source_id:
                sale_ids_used[row.sale_source_id] = sale_ids_used.get(row.sale_source_id, 0) + 1
        planned: list[tuple[CommissionRow, Any, str]] = []
        seen: set[str] = set()
        for row in self.source.commissions:
            if row.source_id in known:
                self._count_known(COMMISSION, known[row.source_id])
                self._owed_add(row)
                self.known_commissions.append((row, known[row.source_id].object_id))
                seen.add(row.source_id)
                continue
            if row.source_id in seen:
                self.report.refuse(row.where, COMMISSION, f"commission {row.source_id} appears twice")
                continue
            seen.add(row.source_id)
            if row.status == "void":  # nothing owed: skipped by its status, whoever it names
                self.report.counts[COMMISSION].skipped += 1
                continue
            partner = self.partners.get(row.partner_source_id)
            if partner is None:
                self.report.refuse(
                    row.where, COMMISSION, f"commission for partner {row.partner_source_id}, who is not imported"
                )
                continue
            if row.currency not in Currency.values:
                self.report.refuse(row.where, COMMISSION, f"unknown currency {row.currency!r}")
                continue
            if row.commission_amount_minor <= 0:
                self.report.counts[COMMISSION].skipped += 1  # nothing owed, nothing to carry over
                continue
            # One sale per commission: a sale shared by two commissions (two tiers) is named by each commission.
            own_sale = row.sale_source_id and sale_ids_used[row.sale_source_id] == 1
            event_id = f"import:{self.platform}:{self.program.pk}:" + (
                f"sale:{row.sale_source_id}" if own_sale else f"commission:{row.source_id}"
            )
            planned.append((row, partner, event_id))
        taken: set[str | None] = set()
        for chunk in _chunks([event_id for _, _, event_id in planned], READ_CHUNK):
            taken.update(
                SaleEvent.objects.filter(processor_event_id__in=list(chunk), is_test=False).values_list(
                    "processor_event_id", flat=True
                )
            )
        self.click_ids = self._click_ids_of_known_customers()
        items: list[_Item] = []
        for row, partner, event_id in planned:
            if event_id in taken:
                self.report.refuse(row.where, COMMISSION, f"sale {event_id} is already recorded here")
                continue
            items.append(_Item(row, None, created=True, extra={"partner": partner, "event_id": event_id}))
            self.report.counts[COMMISSION].created += 1
            self._owed_add(row)
        return items

    def _owed_add(self, row: CommissionRow) -> None:
        if row.status in ("pending", "approved") and row.commission_amount_minor > 0:
            key = (row.partner_source_id, row.currency)
            self.owed[key] = self.owed.get(key, 0) + row.commission_amount_minor
            if row.status == "approved":
                self.owed_approved[key] = self.owed_approved.get(key, 0) + row.commission_amount_minor

    def link_params_used(self) -> dict[str, int]:
        """Per query parameter, how many of the links here (created or matched) carry their code in it, when the
        export names each link's parameter; {} when it names none. Most used first."""
        arrived = {row.code for row in self.source.links if row.code in self.links_by_code}
        if not any(row.param for row in self.source.links):
            return {}
        main = next(iter(platforms()[self.platform].link_params), "") if self.platform in platforms() else ""
        counts: dict[str, int] = {}
        for row in self.source.links:
            param = row.param or main
            if row.code in arrived and param:
                counts[param] = counts.get(param, 0) + 1
                arrived.discard(row.code)
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    # What changed on the old platform since an earlier import ------------------------------------------------

    def plan_changes(self) -> list[tuple[CommissionRow, int, str, str]]:
        """Commissions imported before that the old platform has paid or voided since, while here they are still
        pending or approved, to mark paid (so they are never paid here too) or void: (row, commission id, "paid" |
        "void", ""). One the old platform changed otherwise is named for the owner and left: (row, id, "", why).
        In the rows' order; a dry run reports each as it would go."""
        ids = [commission_id for _, commission_id in self.known_commissions]
        here: dict[int, tuple[str, int]] = {}
        for chunk in _chunks(ids, READ_CHUNK):
            rows = Commission.objects.filter(pk__in=list(chunk)).values_list("pk", "status", "amount_cents")
            here.update((pk, (status, amount)) for pk, status, amount in rows)
        open_here = (CommissionStatus.PENDING, CommissionStatus.APPROVED)
        planned: list[tuple[CommissionRow, int, str, str]] = []
        for row, commission_id in self.known_commissions:
            if commission_id not in here:
                continue
            status, amount = here[commission_id]
            named = f"{row.where}: commission {row.source_id}"
            if row.status in ("paid", "void") and status in open_here:
                planned.append((row, commission_id, row.status, ""))
                if self.dry_run:
                    action = "mark it paid here" if row.status == "paid" else "void it here"
                    self.report.changes.append(f"{self._changed(row)}: would {action}")
            elif row.status == "void" and status == CommissionStatus.PAID:
                planned.append(
                    (
                        row,
                        commission_id,
                        "",
                        f"{named} is void on {self.label}, and paid here: left as it is (refund the sale here if the "
                        "money should come back)",
                    )
                )
            elif row.status in ("pending", "approved", "paid") and row.commission_amount_minor != amount:
                planned.append(
                    (
                        row,
                        commission_id,
                        "",
                        f"{named} is {money(row.commission_amount_minor, row.currency)} on {self.label}, "
                        f"{money(amount, row.currency)} here: left as it is",
                    )
                )
            else:
                continue
            if self.dry_run and planned[-1][3]:
                self.report.changes.append(planned[-1][3])
        return planned

    def payment_ids_backfill(self) -> int:
        """Sales imported before their platform's processor payment id was kept (they hold the platform's own sale
        id) get it now, so a Stripe refund after the move finds them; a sale whose payment id was changed since is
        left. Answers how many were updated."""
        wanted = [
            (commission_id, row.processor_payment_id[:255], row.sale_source_id[:255])
            for row, commission_id in self.known_commissions
            if row.processor_payment_id and row.processor_payment_id != row.sale_source_id
        ]
        updated = 0
        for chunk in _chunks(wanted, READ_CHUNK):
            with transaction.atomic():
                for commission_id, payment_id, sale_id in chunk:
                    updated += SaleEvent.objects.filter(
                        commission__pk=commission_id,
                        provider=f"{IMPORTED_PROVIDER_PREFIX}{self.platform}"[:32],
                        provider_payment_id=sale_id,
                    ).update(provider_payment_id=payment_id)
        return updated

    def _changed(self, row: CommissionRow) -> str:
        return f"{row.where}: commission {row.source_id} is {row.status} on {self.label} since it was imported"

    def write_changes(self, planned: list[tuple[CommissionRow, int, str, str]]) -> None:
        """Each change in its own transaction (the service's), decided again under the commission's lock: a rerun
        finds it done and does nothing."""
        for row, commission_id, change, note in planned:
            if not change:
                self.report.changes.append(note)
                continue
            try:
                if change == "paid":
                    commission_paid_elsewhere(commission_id=commission_id, memo=PAID_MEMO.format(label=self.label))
                    done = "marked paid here"
                else:
                    commission_void(
                        commission_id=commission_id,
                        reason=f"voided on {self.label} after the import",
                        actor=f"import:{self.platform}"[:200],
                    )
                    done = "voided here"
            except CommissionActionRefused as refused:
                done = f"left as it is ({refused})"
            self.report.changes.append(f"{self._changed(row)}: {done}")

    # The money and the links, before confirming -------------------------------------------------------------

    def check_balances(self) -> list[BalanceCheck]:
        """Per currency, what arrives owed beside what the old platform showed, partner by partner."""
        arriving = [row for row in self.source.partners if row.source_id in self.partners]
        currencies = {currency for _, currency in self.owed}
        for row in arriving:
            currencies.update(currency for currency, _ in row.reported_owed)
        checks = {currency: BalanceCheck(currency=currency) for currency in sorted(currencies)}
        for (_, currency), amount in self.owed.items():
            checks[currency].expected_minor += amount
        for row in arriving:
            if not row.reported_owed:
                continue
            reported = dict(row.reported_owed)
            owed = self.owed if row.reported_owed_counts_pending else self.owed_approved
            for currency in sorted(set(reported) | {c for (p, c) in owed if p == row.source_id}):
                check = checks[currency]
                shown = reported.get(currency, 0)
                here = owed.get((row.source_id, currency), 0)
                check.reported_minor = (check.reported_minor or 0) + shown
                check.compared_expected_minor += here
                check.compared_partners += 1
                if shown != here:
                    check.mismatch_count += 1
                    if len(check.mismatches) < MISMATCHES_NAMED:
                        check.mismatches.append(
                            f"partner {row.source_id} ({row.email}): {money(here, currency)} here, "
                            f"{money(shown, currency)} on {self.label}"
                        )
        return list(checks.values())

    def _click_id(self, customer: Any) -> str:
        if isinstance(customer, Customer):
            return customer.click_id
        return self.click_ids.get(customer, "") if isinstance(customer, int) else ""

    def _click_ids_of_known_customers(self) -> dict[int, str]:
        ids = sorted({value for value in self.customers.values() if isinstance(value, int)})
        click_ids: dict[int, str] = {}
        for chunk in _chunks(ids, READ_CHUNK):
            click_ids.update(Customer.objects.filter(pk__in=list(chunk)).values_list("pk", "click_id"))
        return click_ids

    def write_commissions(self, items: list[_Item]) -> None:
        for number, batch in self._batches(COMMISSION, items):
            sales: list[SaleEvent] = []
            for item in batch:
                row: CommissionRow = item.row
                at = row.created_at or self.now
                customer = self.customers.get(row.referral_source_id) if row.referral_source_id else None
                sale = SaleEvent(
                    program_id=self.program.pk,
                    customer_id=_ref(customer),
                    partner_id=_ref(item.extra["partner"]),
                    click_id=self._click_id(customer),
                    processor_event_id=item.extra["event_id"],
                    # An export without the sale's amount: the sale is recorded at the commission's, so it counts.
                    amount_cents=row.sale_amount_minor if row.sale_amount_minor > 0 else row.commission_amount_minor,
                    currency=row.currency,
                    provider=f"{IMPORTED_PROVIDER_PREFIX}{self.platform}"[:32],
                    # The processor's id where the platform gives one: a Stripe refund finds the sale by it.
                    provider_payment_id=(row.processor_payment_id or row.sale_source_id)[:255],
                    occurred_at=at,
                    sale_date=at,
                    attributed=True,
                    attributed_by="import",
                    created_at=at,
                )
                sales.append(sale)
            SaleEvent.objects.bulk_create(sales)
            commissions = [self._commission(item.row, sale) for item, sale in zip(batch, sales, strict=True)]
            Commission.objects.bulk_create(commissions)
            for item, commission in zip(batch, commissions, strict=True):
                item.obj = commission
            CommissionReview.objects.bulk_create(
                review_new(
                    commission,
                    action=CommissionReview.Action.HELD,
                    actor=f"import:{self.platform}"[:200],
                    reason=commission.hold_reason,
                )
                for commission in commissions
                if commission.held_at is not None
            )
            batch_hook(COMMISSION, number)
            entries: list[LedgerEntry] = []
            for item, commission in zip(batch, commissions, strict=True):
                if not commission.credited:
                    continue
                entries.append(self._ledger(commission, LedgerEntry.Kind.CREDIT, commission.amount_cents, item))
                if commission.status == CommissionStatus.PAID:
                    entries.append(self._ledger(commission, LedgerEntry.Kind.PAYOUT, -commission.amount_cents, item))
            LedgerEntry.objects.bulk_create(entries)
            self._commit_batch(COMMISSION, number, batch, hooked=True)

    def _commission(self, row: CommissionRow, sale: SaleEvent) -> Commission:
        at = row.created_at or self.now
        credited = row.status in ("approved", "paid")
        status = {"approved": CommissionStatus.APPROVED, "paid": CommissionStatus.PAID}.get(
            row.status, CommissionStatus.PENDING
        )
        hold_until = row.due_at or at + timedelta(days=self.program.hold_days)
        held = bool(row.held_reason) and status == CommissionStatus.PENDING
        assert sale.partner_id is not None  # every planned commission has its partner
        return Commission(
            program_id=self.program.pk,
            partner_id=sale.partner_id,
            sale_id=sale.pk,
            customer_id=sale.customer_id,
            amount_cents=row.commission_amount_minor,
            currency=row.currency,
            status=status,
            credited=credited,
            approved_at=at if credited else None,
            hold_until=hold_until,
            held_at=at if held else None,
            hold_reason=row.held_reason if held else "",
            created_at=at,
        )

    def _ledger(self, commission: Commission, kind: str, amount: int, item: _Item) -> LedgerEntry:
        memo = (
            PAID_MEMO.format(label=self.label)
            if kind == LedgerEntry.Kind.PAYOUT
            else CREDIT_MEMO.format(label=self.label, source_id=item.row.source_id)
        )
        return LedgerEntry(
            partner_id=commission.partner_id,
            program_id=commission.program_id,
            commission_id=commission.pk,
            kind=kind,
            amount_cents=amount,
            currency=commission.currency,
            memo=memo[:255],
            created_at=commission.approved_at or commission.created_at,
        )

    # Batches -------------------------------------------------------------------------------------------------

    def _batches(self, kind: str, items: list[_Item]) -> Iterator[tuple[int, list[_Item]]]:
        """Each batch inside its own transaction: what it writes commits together or not at all."""
        for chunk in _chunks(items, self.batch_size):
            self.batches += 1
            with transaction.atomic():
                yield self.batches, list(chunk)

    def _commit_batch(self, kind: str, number: int, batch: Iterable[_Item], *, hooked: bool = False) -> None:
        """The batch's ImportedRecords and the run's progress, in the batch's transaction."""
        if not hooked:
            batch_hook(kind, number)
        records = [
            ImportedRecord(
                program_id=self.program.pk,
                platform=self.platform,
                kind=kind,
                source_id=item.row.source_id,
                object_id=item.saved_id,
                created=item.created,
                run=self.run,
                created_at=self.now,
            )
            for item in batch
        ]
        # No ignore_conflicts: a row another run imported meanwhile fails the batch, which rolls back whole.
        ImportedRecord.objects.bulk_create(records)
        assert self.run is not None
        self.run.batches_done = number
        self.run.counts = self.report.counts_dict()
        self.run.save(update_fields=["batches_done", "counts", "updated_at"])

    # The whole ----------------------------------------------------------------------------------------------

    def execute(self) -> ImportReport:
        self.load_known()
        first_sales = self.first_sales()
        groups = self.plan_groups()
        if not self.dry_run:
            self.write_groups(groups)
        partners = self.plan_partners()
        if not self.dry_run:
            self.write_partners(partners)
        moves = self.plan_moves()
        if not self.dry_run:
            self.write_moves(moves)
        links = self.plan_links()
        if not self.dry_run:
            self.write_links(links)
        codes = self.plan_codes()
        if not self.dry_run:
            self.write_codes(codes)
        referrals = self.plan_referrals(first_sales)
        if not self.dry_run:
            self.write_referrals(referrals)
        commissions = self.plan_commissions()
        if not self.dry_run:
            self.write_commissions(commissions)
        changes = self.plan_changes()
        if not self.dry_run:
            self.write_changes(changes)
            self.payment_ids_backfill()
        self.report.label = self.label
        self.report.balances = self.check_balances()
        link_count = self.report.counts[LINK].created + self.report.counts[LINK].matched
        self.report.link_steps = link_param_steps(
            self.program, platform=self.platform, links=link_count, by_param=self.link_params_used()
        )
        return self.report


def run_prepare(
    *, program: Program, platform: str, digest: str, actor: Any = None, file_names: Sequence[str] = ()
) -> ImportRun:
    """The run to continue: the latest unfinished run of these same rows (a rerun after a crash resumes it), or a
    new one; marked running."""
    run = (
        ImportRun.objects.filter(program=program, platform=platform, files_digest=digest)
        .filter(~Q(status=ImportRun.Status.COMPLETE))
        .order_by("-pk")
        .first()
    )
    if run is None:
        return ImportRun.objects.create(
            program=program,
            platform=platform,
            files_digest=digest,
            file_names=list(file_names),
            actor=actor if getattr(actor, "pk", None) else None,
        )
    run.status = ImportRun.Status.RUNNING
    run.error = ""
    run.save(update_fields=["status", "error", "updated_at"])
    return run


def import_source(
    program: Program,
    source: Source,
    *,
    dry_run: bool,
    actor: Any = None,
    batch_size: int = 1000,
    run: ImportRun | None = None,
    file_names: Sequence[str] = (),
) -> ImportReport:
    """Imports the source into the program (see the module's docstring); `dry_run` plans only and writes nothing.
    `run`: an ImportRun made beforehand (the dashboard's confirmation); otherwise the unfinished run of the same
    rows is resumed, or a new one made. An exception marks the run failed (shown as interrupted) and propagates;
    running the same source again resumes it."""
    if dry_run:
        importer = _Importer(program=program, source=source, dry_run=True, actor=actor, batch_size=batch_size, run=None)
        report = importer.execute()
        report.status = "dry run"
        return report
    if run is None:
        run = run_prepare(
            program=program, platform=source.platform, digest=source_digest(source), actor=actor, file_names=file_names
        )
    elif run.status != ImportRun.Status.RUNNING:
        run.status = ImportRun.Status.RUNNING
        run.error = ""
        run.save(update_fields=["status", "error", "updated_at"])
    importer = _Importer(program=program, source=source, dry_run=False, actor=actor, batch_size=batch_size, run=run)
    try:
        report = importer.execute()
    except BaseException as error:
        reason = RAN_AT_ONCE if isinstance(error, IntegrityError) else f"{type(error).__name__}: {error}"
        ImportRun.objects.filter(pk=run.pk).update(
            status=ImportRun.Status.FAILED, error=reason[:2000], updated_at=timezone.now()
        )
        logger.exception("import.failed", extra={"run_id": run.pk, "platform": source.platform})
        raise
    run.status = ImportRun.Status.COMPLETE
    run.finished_at = timezone.now()
    run.counts = report.counts_dict()
    run.refusals = [[r.where, r.kind, r.reason] for r in report.refusals]
    run.changes = report.changes
    run.batches_done = importer.batches
    run.save(update_fields=["status", "finished_at", "counts", "refusals", "changes", "batches_done", "updated_at"])
    report.run_id = run.pk
    report.status = run.status
    return report


def upload_run(*, upload_id: int) -> str:
    """Runs a confirmed dashboard upload (imports.tasks.upload_import_task): its files read again and imported into its
    run. Safe to run again: a finished run is left as it is, an interrupted one resumes."""
    upload = ImportUpload.objects.select_related("program", "run", "actor").filter(pk=upload_id).first()
    if upload is None or upload.run is None:
        return "nothing to run"
    run = upload.run
    if run.status == ImportRun.Status.COMPLETE:
        return "complete already"
    files = [(file.name, bytes(file.content)) for file in upload.files.all()]
    try:
        source = source_read(upload.platform, files, currency=upload.currency)
    except (ImportFileError, UnknownPlatform) as error:
        message = getattr(error, "message", str(error))
        ImportRun.objects.filter(pk=run.pk).update(status=ImportRun.Status.FAILED, error=message[:2000])
        return message
    report = import_source(upload.program, source, dry_run=False, actor=upload.actor, run=run)
    # The exports hold people's emails: once imported whole they are not kept (the run keeps their names).
    upload.files.all().delete()
    return report.status


# An upload never confirmed is kept this long after its dry run, then its files go.
UNCONFIRMED_UPLOAD_KEPT = timedelta(days=7)


def unconfirmed_uploads_prune(*, now: datetime | None = None) -> int:
    """Deletes the uploads (and their files) never confirmed within UNCONFIRMED_UPLOAD_KEPT; answers how many. A
    confirmed upload belongs to its run, which deletes its files once complete."""
    cutoff = (now or timezone.now()) - UNCONFIRMED_UPLOAD_KEPT
    stale = ImportUpload.objects.filter(run__isnull=True, created_at__lt=cutoff)
    count = stale.count()
    stale.delete()
    return count
