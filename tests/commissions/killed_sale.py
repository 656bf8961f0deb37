"""Run as `python -m tests.commissions.killed_sale` by test_reconcile_commissions.py: a real process that sends
one sale through the whole HTTP stack against the test database and is killed (SIGKILL, nothing cleaned up)
at the point named by KILL_AT, so the sale is stored and its commission never is.

Environment: DATABASE_URL (the test database), KILL_AT, SALE_KEY (a live program key), SALE_BODY (JSON)."""

import importlib
import json
import os
import signal
import sys

# Where the process dies: just before the sale path settles the commission, or inside the commission's
# transaction after the customer row was locked and converted (that work must roll back with the process).
KILL_POINTS = {
    "before_commission": "tracking.services.sale.commission_create_for_sale",
    "inside_commission": "commissions.services.commission_amount",
}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.test.utils import setup_test_environment
    from rest_framework.test import APIClient

    setup_test_environment()
    module, name = KILL_POINTS[os.environ["KILL_AT"]].rsplit(".", 1)

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(importlib.import_module(module), name, die)
    response = APIClient().post(
        "/api/v1/track/sale",
        json.loads(os.environ["SALE_BODY"]),
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {os.environ['SALE_KEY']}",
    )
    print(f"the process was not killed: {response.status_code} {response.content!r}")
    sys.exit(3)


if __name__ == "__main__":
    main()
