"""What other apps do when commissions change, registered in their AppConfig.ready() (the portal: the partner's
emails), so commissions imports none of them. A follower never fails the money path that calls it."""

from collections.abc import Callable
from datetime import datetime

from .models import Commission

# Called, inside the caller's transaction, for a commission that became approved (off the sale's path), refunded or
# reversed; each follower acts after commit.
status_followers: list[Callable[[Commission | None], None]] = []
# Called once the hold-end job has approved what was due (approvals made as their sale was stored are caught up).
approval_job_followers: list[Callable[..., int]] = []


def commission_status_changed(commission: Commission | None) -> None:
    for follow in status_followers:
        follow(commission)


def approval_job_done(*, now: datetime) -> None:
    for follow in approval_job_followers:
        follow(now=now)
