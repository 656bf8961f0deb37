"""The engine's groups, moves and codes, on sources built in code: a campaign or group arrives as a group of the
program (the platform's default one is the program's default group), each partner in its group, each code the
partner's; a rerun creates nothing twice and leaves a partner an owner moved since where the owner put them."""

from dataclasses import replace
from decimal import Decimal

import pytest

from groups.models import CouponCode, GroupChange, PartnerGroup
from groups.services import Move, group_create, partner_move
from imports.engine import import_source
from imports.models import ImportedRecord
from imports.records import CodeRow, GroupRow
from programs.models import PartnerProgram
from tests.factories import PartnerFactory, ProgramFactory
from tests.imports.engine_sources import small_source

pytestmark = pytest.mark.django_db

TERMS_TABLES = (PartnerGroup, GroupChange, CouponCode, ImportedRecord)


def table_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in TERMS_TABLES}


def grouped_source():
    source = small_source(partners=3)
    groups = [
        GroupRow(where="groups.json item 1", source_id="g-default", name="Everyone", is_default=True),
        GroupRow(
            where="groups.json item 2",
            source_id="g-vip",
            name="VIP",
            commission_type="recurring_percent",
            commission_rate=Decimal("35"),
            duration_months=12,
            hold_days=14,
            discount_type="percent",
            discount_percent=Decimal("10"),
            discount_duration="repeating",
            discount_duration_months=3,
        ),
        GroupRow(where="groups.json item 3", source_id="g-plain", name="Podcasters"),
    ]
    partners = [
        replace(source.partners[0], group_source_id="g-vip"),
        replace(source.partners[1], group_source_id="g-plain"),
        replace(source.partners[2], group_source_id="g-default"),
    ]
    codes = [
        CodeRow(where="codes.json item 1", source_id="c1", partner_source_id="p1", code="vip10"),
        CodeRow(where="codes.json item 2", source_id="c2", partner_source_id="p2", code="POD-5"),
    ]
    return replace(source, partners=partners, groups=groups, codes=codes)


def enrolment_group(program, email):
    enrolment = PartnerProgram.objects.select_related("group").get(program=program, partner__email=email)
    return enrolment.group


def test_groups_moves_and_codes_arrive_and_a_rerun_creates_nothing_twice():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30)
    source = grouped_source()
    before = table_counts()
    dry = import_source(program, source, dry_run=True)
    assert table_counts() == before, "a dry run writes nothing"
    planned = dry.counts_dict()
    assert planned["group"] == {"created": 2, "matched": 1, "skipped": 0, "refused": 0}
    assert planned["move"] == {"created": 2, "matched": 1, "skipped": 0, "refused": 0}
    assert planned["code"] == {"created": 2, "matched": 0, "skipped": 0, "refused": 0}
    assert any("groups: 2 to create" in line for line in dry.lines())

    report = import_source(program, source, dry_run=False)
    assert report.counts_dict()["group"] == planned["group"]
    assert report.counts_dict()["move"] == planned["move"]
    vip = PartnerGroup.objects.get(program=program, name="VIP")
    assert (vip.commission_type, vip.commission_rate, vip.duration_months, vip.hold_days) == (
        "recurring_percent",
        Decimal("35"),
        12,
        14,
    )
    assert (vip.discount_type, vip.discount_percent, vip.discount_duration, vip.discount_duration_months) == (
        "percent",
        Decimal("10"),
        "repeating",
        3,
    )
    # A group the export gives no terms for takes the program's.
    plain = PartnerGroup.objects.get(program=program, name="Podcasters")
    assert (plain.commission_type, plain.commission_rate, plain.hold_days) == ("percent", Decimal("20"), 30)
    # The platform's default group is the program's default group: no third group, its terms the program's.
    assert PartnerGroup.objects.filter(program=program).count() == 3
    assert PartnerGroup.objects.get(program=program, is_default=True).name == "Default"

    assert enrolment_group(program, "Partner1@Example.com") == vip
    assert enrolment_group(program, "Partner2@Example.com") == plain
    assert enrolment_group(program, "Partner3@Example.com") is None
    changes = GroupChange.objects.filter(program=program)
    assert changes.count() == 2
    assert {(c.reason, c.actor) for c in changes} == {("import", "import:fake")}

    codes = {c.code: c for c in CouponCode.objects.filter(program=program).select_related("partner")}
    assert set(codes) == {"VIP10", "POD-5"}
    assert codes["VIP10"].partner.email == "Partner1@Example.com" and codes["VIP10"].source == "import"

    # An owner moves partner 1 elsewhere; the rerun creates nothing and does not move them back.
    enrolment = PartnerProgram.objects.get(program=program, partner__email="Partner1@Example.com")
    partner_move(enrolment=enrolment, group=plain, move=Move(reason="owner"))
    after = table_counts()
    rerun = import_source(program, source, dry_run=False).counts_dict()
    assert table_counts() == after
    for kind in ("group", "move", "code"):
        assert rerun[kind]["created"] == 0, kind
    assert rerun["group"]["matched"] == 3 and rerun["move"]["matched"] == 3 and rerun["code"]["matched"] == 2
    assert enrolment_group(program, "Partner1@Example.com") == plain


def test_a_group_named_as_one_the_program_has_is_that_group():
    program = ProgramFactory()
    mine = group_create(program=program, name="vip", commission_rate=Decimal("50"))
    import_source(program, grouped_source(), dry_run=False)
    assert PartnerGroup.objects.filter(program=program, name__iexact="vip").get() == mine
    assert enrolment_group(program, "Partner1@Example.com") == mine
    mine.refresh_from_db()
    assert mine.commission_rate == Decimal("50"), "the owner's terms are kept"


def test_a_partner_already_in_a_group_here_stays_there():
    program = ProgramFactory()
    partner = PartnerFactory(workspace=program.workspace, email="partner1@example.com")
    mine = group_create(program=program, name="Mine")
    enrolment = PartnerProgram.objects.create(partner=partner, program=program)
    partner_move(enrolment=enrolment, group=mine, move=Move(reason="owner"))
    report = import_source(program, grouped_source(), dry_run=False)
    assert enrolment_group(program, "partner1@example.com") == mine
    refused = [r.reason for r in report.refusals if r.kind == "move"]
    assert refused == ["partner p1 is in the group 'Mine' here already: left there (not moved to fake's group g-vip)"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"commission_type": "percent", "commission_rate": Decimal("250")},
            "commission_rate",
        ),
        ({"commission_type": "fixed", "commission_rate": Decimal("-5")}, "commission_rate"),
        ({"discount_type": "percent", "discount_percent": Decimal("0")}, "the discount needs a percent above 0"),
        ({"hold_days": -1}, "hold_days"),
    ],
)
def test_hostile_terms_refuse_the_group_and_its_partners_stay_in_the_default_group(change, reason):
    program = ProgramFactory()
    source = grouped_source()
    groups = [source.groups[0], replace(source.groups[1], **change), source.groups[2]]
    source = replace(source, groups=groups)
    report = import_source(program, source, dry_run=False)
    refusals = {r.kind: r.reason for r in report.refusals}
    assert reason in refusals["group"] and "g-vip" in refusals["group"]
    assert refusals["move"] == "partner p1 stays in the default group: its group g-vip was refused (groups.json item 2)"
    assert enrolment_group(program, "Partner1@Example.com") is None
    assert not PartnerGroup.objects.filter(program=program, name="VIP").exists()


@pytest.mark.parametrize("code", ["ÜBER10", "ten%off", "x" * 101, "-LEAD"])
def test_a_code_the_program_cannot_spell_is_refused(code):
    program = ProgramFactory()
    source = grouped_source()
    source = replace(source, codes=[replace(source.codes[0], code=code)])
    report = import_source(program, source, dry_run=False)
    assert [r.reason for r in report.refusals if r.kind == "code"] == [
        f"code {code!r} cannot be a coupon code here: coupon_code must be 1 to 100 letters, digits, - or _"
    ]
    assert not CouponCode.objects.filter(program=program).exists()


def test_a_code_another_partner_holds_is_refused_not_raised():
    program = ProgramFactory()
    other = PartnerFactory(workspace=program.workspace, email="someone.else@example.com")
    PartnerProgram.objects.create(partner=other, program=program)
    CouponCode.objects.create(program=program, partner=other, code="VIP10")
    report = import_source(program, grouped_source(), dry_run=False)
    assert [r.reason for r in report.refusals if r.kind == "code"] == [
        "code 'vip10' is held by another partner of this program"
    ]
    assert CouponCode.objects.get(code="VIP10").partner == other
    assert CouponCode.objects.filter(program=program, code="POD-5").exists()


def test_two_partners_with_one_code_in_the_same_import_the_second_is_refused():
    program = ProgramFactory()
    source = grouped_source()
    codes = [*source.codes, CodeRow(where="codes.json item 3", source_id="c3", partner_source_id="p3", code="VIP10")]
    report = import_source(program, replace(source, codes=codes), dry_run=False)
    assert [r.reason for r in report.refusals if r.kind == "code"] == [
        "code 'VIP10' is held by another partner in this import"
    ]


def test_a_group_deleted_since_the_import_is_refused_on_the_rerun():
    program = ProgramFactory()
    source = grouped_source()
    import_source(program, source, dry_run=False)
    plain = PartnerGroup.objects.get(program=program, name="Podcasters")
    PartnerProgram.objects.filter(group=plain).update(group=None)
    plain.delete()
    report = import_source(program, source, dry_run=False)
    assert "group g-plain was imported before and has been deleted since" in [r.reason for r in report.refusals]
    assert PartnerGroup.objects.filter(program=program, name="Podcasters").count() == 0
