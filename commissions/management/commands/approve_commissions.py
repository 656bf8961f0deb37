from typing import Any

from django.core.management.base import BaseCommand

from commissions.approval import commissions_approve_due


class Command(BaseCommand):
    help = (
        "Approves commissions whose hold period has ended and credits their partners (beat runs this every 5 minutes)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        count = commissions_approve_due()
        self.stdout.write(f"Approved {count} commission(s).")
