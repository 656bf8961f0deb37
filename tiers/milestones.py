"""Milestone bonuses: a partner of a group whose figure (tiers.figures) reaches a bonus's threshold in a period is
paid the bonus once, as a commission of kind bonus that goes through the hold, approval and ledger of any other
commission (commissions.approval: created pending with the group's hold_days, approved and credited by the
hold-end job, or at once with a hold of 0).

Exactly once: the award and its commission are inserted in one transaction, and the award's constraint
(bonus_once_per_period) refuses a second, whatever runs at the same time; an IntegrityError is a bonus paid
already. The award is decided with the partner's enrolment row locked, and so is a clawback, so the two see each
other: a refund that commits before the award is counted by it, one that commits after finds the award.

Clawback: a refund that takes the partner's figure below the threshold of a bonus already awarded for the
refunded sale's period reverses that bonus's commission whole, as a full refund reverses a sale's: what it had
credited is deducted from the ledger (open withdrawals and payouts not sent are reduced to fit). The award stays
(it names the reversed commission), so a clawed-back bonus is not paid again for that period."""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from commissions.approval import commission_event_emit, commission_insert, review_entry
from commissions.followers import commission_status_changed
from commissions.models import Commission, CommissionKind, CommissionReview, CommissionStatus
from commissions.services import _deduct, commission_review_record
from groups.models import Bonus, BonusAward, PartnerGroup
from groups.periods import period_bounds, period_key
from programs.models import PartnerProgram, Program
from webhooks.models import EventType

from .figures import partner_figure, partner_figures

logger = logging.getLogger("svc.groups")

CLAWBACK_REASON = "A refund took the {metric} of {period} below the bonus's threshold ({figure} of {threshold})"
CLAWBACK_MEMO = "Bonus #{pk} reversed: {bonus} ({period}) no longer reached"


def group_hold_days(group: PartnerGroup, program: Program) -> int:
    """The hold of the group's commissions: the program's for the default group (its terms are the program's)."""
    return program.hold_days if group.is_default else group.hold_days


def group_enrolments(group: PartnerGroup) -> "Q":
    """The filter of the group's enrolments: a default group's are also those with no group (NULL)."""
    if group.is_default:
        return Q(program_id=group.program_id) & (Q(group__isnull=True) | Q(group=group))
    return Q(program_id=group.program_id, group=group)


def in_group(enrolment: PartnerProgram, group: PartnerGroup) -> bool:
    if group.is_default:
        return enrolment.group_id is None or enrolment.group_id == group.pk
    return enrolment.group_id == group.pk


def enrolment_lock(*, program_id: int, partner_id: int) -> PartnerProgram | None:
    """Locks the partner's enrolment row, in the caller's transaction: what an award and a clawback of the
    partner's bonuses serialise on (a group move takes the same lock)."""
    return (
        PartnerProgram.objects.select_for_update(no_key=True).filter(program_id=program_id, partner_id=partner_id)
    ).first()


@dataclass(frozen=True)
class AwardRun:
    awarded: int = 0
    already: int = 0


def bonus_award_partner(*, bonus: Bonus, partner_id: int, key: str, now: datetime) -> BonusAward | None:
    """Pays the bonus to the partner for the period `key` when, under the enrolment's lock, they are still in the
    bonus's group, have not been awarded it for the period, and their figure reaches the threshold. None when it
    is not paid (now, or by a concurrent run: the constraint)."""
    group = bonus.group
    program = group.program
    with transaction.atomic():
        enrolment = enrolment_lock(program_id=program.pk, partner_id=partner_id)
        if enrolment is None or not in_group(enrolment, group):
            return None
        if BonusAward.objects.filter(bonus=bonus, partner_id=partner_id, period_key=key).exists():
            return None
        figure = partner_figure(program_id=program.pk, partner_id=partner_id, metric=bonus.metric, period_key=key)
        if figure < bonus.threshold:
            return None
        hold_days = group_hold_days(group, program)
        instant = hold_days == 0
        commission = Commission(
            program=program,
            partner_id=partner_id,
            kind=CommissionKind.BONUS,
            sale=None,
            customer=None,
            # As a sale's commission records it: NULL is the default group.
            group=None if group.is_default else group,
            amount_cents=bonus.amount_cents,
            currency=bonus.currency,
            status=CommissionStatus.APPROVED if instant else CommissionStatus.PENDING,
            credited=instant,
            approved_at=now if instant else None,
            hold_until=now + timedelta(days=hold_days),
            created_at=now,
        )
        award = BonusAward(
            bonus=bonus, partner_id=partner_id, program=program, period_key=key, figure=figure, created_at=now
        )
        # Both sides cached: the commission's events name its bonus (webhooks.payloads.commission_data).
        commission.bonus_award = award
        try:
            with transaction.atomic():
                commission_insert(commission)
                award.save(force_insert=True)
        except IntegrityError:
            return None  # awarded by a concurrent run, which committed first
    return award


def bonuses_award(program: Program, now: datetime | None = None) -> AwardRun:
    """Pays every active bonus of the program's groups to each partner of the group whose figure in the bonus's
    current period reached its threshold, once per partner and period. The figures are read once per bonus for
    the whole program; each partner found is decided again under its lock (bonus_award_partner)."""
    now = now or timezone.now()
    awarded = already = 0
    bonuses = Bonus.objects.filter(group__program=program, is_active=True).select_related("group__program")
    for bonus in bonuses.order_by("pk"):
        key = period_key(bonus.period, now)
        figures = partner_figures(program_id=program.pk, period_key=key)
        reached = {pk for pk, figures_of in figures.items() if figures_of.of(bonus.metric) >= bonus.threshold}
        if not reached:
            continue
        paid = set(
            BonusAward.objects.filter(bonus=bonus, period_key=key, partner_id__in=reached).values_list(
                "partner_id", flat=True
            )
        )
        already += len(paid)
        members = PartnerProgram.objects.filter(
            group_enrolments(bonus.group), partner_id__in=reached - paid, partner__is_active=True
        ).values_list("partner_id", flat=True)
        for partner_id in sorted(members):
            if bonus_award_partner(bonus=bonus, partner_id=partner_id, key=key, now=now) is not None:
                awarded += 1
                logger.info(
                    "groups.bonus_awarded",
                    extra={"bonus_id": bonus.pk, "partner_id": partner_id, "period": key, "program_id": program.pk},
                )
    return AwardRun(awarded=awarded, already=already)


def bonuses_award_all(now: datetime | None = None) -> AwardRun:
    """bonuses_award for every program with an active bonus (the beat task)."""
    now = now or timezone.now()
    awarded = already = 0
    programs = Program.objects.filter(pk__in=Bonus.objects.filter(is_active=True).values("group__program_id")).order_by(
        "pk"
    )
    for program in programs:
        run = bonuses_award(program, now)
        awarded, already = awarded + run.awarded, already + run.already
    return AwardRun(awarded=awarded, already=already)


# --- Clawback -------------------------------------------------------------------------------------------------


def bonus_reverse(commission_id: int, *, reason: str, memo: str) -> bool:
    """Reverses a bonus's commission whole, in the caller's transaction, with its row locked: what it still had
    credited is deducted from the ledger (even paid out: the balance then goes below zero, as after a refund of a
    paid commission), a hold ends, and commission.reversed is announced. False when it was reversed already (by
    a clawback or an owner's void that committed first)."""
    commission = Commission.objects.select_for_update().get(pk=commission_id)
    if commission.status == CommissionStatus.REVERSED:
        return False
    still_credited = commission.amount_cents - commission.deducted_cents if commission.credited else 0
    commission.status = CommissionStatus.REVERSED
    commission.refund_reason = reason
    if still_credited > 0:
        commission.deducted_cents = commission.amount_cents
    held, rule = commission.held_at is not None, commission.hold_rule
    commission.held_at, commission.hold_rule, commission.hold_reason = None, "", ""
    commission.save()
    if still_credited > 0:
        _deduct(commission, amount=still_credited, memo=memo[:255])
    elif held:
        # Only a pending commission is held: nothing is left for an owner to release or void.
        commission_review_record(
            commission, action=CommissionReview.Action.ENDED, actor="refund", rule=rule, reason=reason, memo=memo
        )
    else:
        review_entry(commission, memo).save(force_insert=True)  # the ledger's record of it, of no amount
    commission_event_emit(commission, EventType.COMMISSION_REVERSED)
    commission_status_changed(commission)  # the partner's email (reversed), after commit
    return True


def bonuses_refund_check(commission: Commission) -> None:
    """Called by commissions.services.refund_apply with the refunded sale's commission saved and locked, before
    any ledger change (so the partner row is not locked yet: an award holding the enrolment may insert its rows).
    Reverses each bonus awarded for the refunded sale's period that the partner's figure no longer reaches."""
    if commission.kind != CommissionKind.SALE or commission.sale_id is None:
        return
    program_id = commission.program_id
    # Programs without bonuses (most) pay no more than this query for a refund.
    if not Bonus.objects.filter(group__program_id=program_id).exists():
        return
    sale = Commission.objects.filter(pk=commission.pk).values("sale__sale_date", "sale__partner_id").first()
    if sale is None or sale["sale__partner_id"] is None:
        return
    partner_id = sale["sale__partner_id"]
    enrolment_lock(program_id=program_id, partner_id=partner_id)
    awards = (
        BonusAward.objects.select_for_update(of=("self",))
        .filter(program_id=program_id, partner_id=partner_id)
        .exclude(commission__status=CommissionStatus.REVERSED)
        .select_related("bonus")
        .order_by("pk")
    )
    for award in _covering(awards, sale["sale__sale_date"]):
        bonus = award.bonus
        figure = partner_figure(
            program_id=program_id, partner_id=partner_id, metric=bonus.metric, period_key=award.period_key
        )
        if figure >= bonus.threshold:
            continue
        reason = CLAWBACK_REASON.format(
            metric=bonus.get_metric_display().lower(), period=award.period_key, figure=figure, threshold=bonus.threshold
        )
        memo = CLAWBACK_MEMO.format(pk=award.commission_id, bonus=bonus.name, period=award.period_key)
        if bonus_reverse(award.commission_id, reason=reason, memo=memo):
            logger.info(
                "groups.bonus_clawed_back",
                extra={"bonus_id": bonus.pk, "partner_id": partner_id, "period": award.period_key},
            )


def _covering(awards: Iterable[BonusAward], sale_date: datetime) -> Iterable[BonusAward]:
    """The awards whose period contains the sale."""
    for award in awards:
        bounds = period_bounds(award.period_key)
        if (bounds.start is None or bounds.start <= sale_date) and (bounds.end is None or sale_date < bounds.end):
            yield award
