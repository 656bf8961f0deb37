from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from .models import CliLoginSession

# A day past expiry nobody can poll or complete a login session any more; its row is only clutter.
LOGIN_SESSION_RETENTION = timedelta(days=1)


def cli_login_sessions_purge(*, now=None) -> int:
    """Deletes login sessions that expired more than a day ago. Tokens they issued stay (their link is
    set to null). Returns how many were deleted."""
    cutoff = (now or timezone.now()) - LOGIN_SESSION_RETENTION
    deleted, _ = CliLoginSession.objects.filter(expires_at__lt=cutoff).delete()
    return deleted


@shared_task(name="cli_api.purge_login_sessions", acks_late=True, ignore_result=True)
def purge_login_sessions_task() -> int:
    return cli_login_sessions_purge()
