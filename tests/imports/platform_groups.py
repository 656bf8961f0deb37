"""The check every platform's groups test runs on its fixture files: a dry run writes nothing, the real run makes
the groups (with their terms), puts each partner in their group and registers each code as its partner's; a rerun
creates nothing twice."""

from typing import Any

from groups.models import CouponCode, GroupChange, PartnerGroup
from imports.engine import import_source
from imports.models import ImportedRecord
from imports.platforms import PLATFORMS
from imports.records import Source
from programs.models import PartnerProgram, Program
from tests.factories import ProgramFactory
from webhooks.models import EventType, WebhookEvent

TABLES = (PartnerGroup, GroupChange, CouponCode, PartnerProgram, ImportedRecord)
TERMS = (
    "commission_type",
    "commission_rate",
    "duration_months",
    "hold_days",
    "discount_type",
    "discount_percent",
    "discount_amount_cents",
    "discount_currency",
    "discount_duration",
    "discount_duration_months",
)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in TABLES}


def groups_of(program: Program) -> dict[str, dict[str, Any]]:
    """The program's groups but the default one, by name: the terms the test names."""
    return {
        group.name: {name: getattr(group, name) for name in TERMS}
        for group in PartnerGroup.objects.filter(program=program, is_default=False)
    }


def partner_groups(program: Program) -> dict[str, str | None]:
    """Each enrolled partner's email (lower case) and group name (None: the default group)."""
    enrolments = PartnerProgram.objects.filter(program=program).select_related("partner", "group")
    return {
        enrolment.partner.email.lower(): (
            enrolment.group.name if enrolment.group and not enrolment.group.is_default else None
        )
        for enrolment in enrolments
    }


def codes_of(program: Program) -> dict[str, str]:
    return {
        code.code: code.partner.email.lower()
        for code in CouponCode.objects.filter(program=program, source="import").select_related("partner")
    }


def check_groups(
    platform: str,
    files: list[tuple[str, bytes]],
    *,
    groups: dict[str, dict[str, Any]],
    partners: dict[str, str | None],
    codes: dict[str, str],
    currency: str = "",
    program: Program | None = None,
) -> tuple[Program, Source]:
    """`groups`: the non-default groups expected, by name, with the terms to compare (a subset of TERMS);
    `partners`: email -> group name (None: the default group); `codes`: code -> its partner's email."""
    source = PLATFORMS[platform].read(files, currency=currency)
    program = program or ProgramFactory.create(commission_type="percent", hold_days=30)
    before = row_counts()
    dry = import_source(program, source, dry_run=True)
    assert row_counts() == before, "a dry run writes nothing"
    planned = dry.counts_dict()

    report = import_source(program, source, dry_run=False)
    done = report.counts_dict()
    for kind in ("group", "move", "code"):
        assert done[kind]["created"] == planned[kind]["created"], kind
    here = groups_of(program)
    assert set(here) == set(groups), here
    for name, terms in groups.items():
        assert {key: here[name][key] for key in terms} == terms, name
    got = partner_groups(program)
    assert {email: got.get(email) for email in partners} == partners
    assert codes_of(program) == codes
    assert done["code"]["created"] == len(codes)
    changes = GroupChange.objects.filter(program=program)
    assert {(change.reason, change.actor) for change in changes} <= {("import", f"import:{platform}")}
    assert changes.count() == sum(1 for name in partners.values() if name is not None)
    # Placing imported partners is history: recorded, announced to no webhook receiver.
    assert not WebhookEvent.objects.filter(program=program, type=EventType.PARTNER_GROUP_CHANGED).exists()

    after = row_counts()
    rerun = import_source(program, source, dry_run=False).counts_dict()
    assert row_counts() == after, "a rerun creates nothing twice"
    for kind in ("group", "move", "code"):
        assert rerun[kind]["created"] == 0, kind
        assert rerun[kind]["matched"] == done[kind]["created"] + done[kind]["matched"], kind
    return program, source
