"""What other apps do when commissions change (the portal: the partner's emails). They sit above commissions, so
commissions names them by path here (core.providers) and imports none of them. A follower never fails the money path
that calls it."""

from collections.abc import Callable
from datetime import datetime

from core.providers import Providers

from .models import Commission

# Called, inside the caller's transaction, for a commission that became approved (off the sale's path), refunded or
# reversed; each follower acts after commit.
status_followers: Providers[Callable[[Commission | None], None]] = Providers("portal.emails.commission_email_later")
# Called once the hold-end job has approved what was due (approvals made as their sale was stored are caught up).
approval_job_followers: Providers[Callable[..., int]] = Providers("portal.emails.commission_emails_catch_up")
# Called inside refund_apply's transaction with the refunded commission saved and locked, before the ledger moves (the
# partner row is not locked yet): the milestone bonuses the refund no longer lets the partner reach are reversed. Unlike
# the others it is part of the money path: its writes commit with the refund's, or neither does.
refund_followers: Providers[Callable[[Commission], None]] = Providers("tiers.milestones.bonuses_refund_check")


def commission_status_changed(commission: Commission | None) -> None:
    for follow in status_followers:
        follow(commission)


def approval_job_done(*, now: datetime) -> None:
    for follow in approval_job_followers:
        follow(now=now)


def commission_refunded(commission: Commission) -> None:
    for follow in refund_followers:
        follow(commission)
