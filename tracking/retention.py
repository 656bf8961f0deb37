"""Raw clicks over time: the click table grows with every visit, while the reports read rollups
(tracking.rollups). An operator drops raw clicks older than N days (`manage.py prune_clicks`, or daily with
RAW_CLICK_RETENTION_DAYS); the rollups keep their totals, and customers, leads, sales, commissions and refunds
keep working, as none of them needs its clicks once recorded. Explain shows the clicks that remain."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db import transaction
from django.utils import timezone

from .models import ClickEvent, RollupState
from .rollups import rollups_update

DELETE_BATCH = 10_000


@dataclass(frozen=True)
class PruneResult:
    before: date
    deleted: int


def raw_clicks_prune(*, older_than_days: int, now: datetime | None = None, batch: int = DELETE_BATCH) -> PruneResult:
    """Deletes the raw clicks of the UTC days older than `older_than_days` (whole days, so a day the rollups count
    is either all raw or all pruned), in batches of `batch` rows, each its own transaction. Only clicks already
    folded into the rollups are deleted: a run goes first, and the watermark bounds the deletion."""
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    now = now or timezone.now()
    before = (now - timedelta(days=older_than_days)).astimezone(UTC).date()
    rollups_update(now=now)
    with transaction.atomic():
        state, _ = RollupState.objects.select_for_update().get_or_create(pk=1)
        if state.clicks_pruned_before is None or state.clicks_pruned_before < before:
            state.clicks_pruned_before = before
            state.save(update_fields=["clicks_pruned_before"])
        watermark = state.click_id
    cutoff = datetime.combine(before, time.min, tzinfo=UTC)
    deleted = 0
    while True:
        ids = list(
            ClickEvent.objects.filter(click_timestamp__lt=cutoff, id__lte=watermark).values_list("id", flat=True)[
                :batch
            ]
        )
        if not ids:
            return PruneResult(before=before, deleted=deleted)
        deleted += ClickEvent.objects.filter(id__in=ids).delete()[0]
