from typing import Any

from django.core.management.base import BaseCommand

from commissions.models import NotificationOutbox
from commissions.outbox import notification_outbox_deliver_pending


class Command(BaseCommand):
    help = (
        "Delivers refund notifications still waiting in the outbox (left by a broker outage or a failed task), "
        "in this process, without the broker. Celery beat runs the same sweep every minute."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        count = notification_outbox_deliver_pending()
        left = NotificationOutbox.objects.filter(delivered_at__isnull=True).count()
        self.stdout.write(f"Delivered {count} notification outbox row(s); {left} still undelivered.")
