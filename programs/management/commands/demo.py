import json
import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from programs.demo import demo_create

# `make run` has gunicorn write the address it actually serves on here (see config/gunicorn.conf.py).
SERVER_URL_FILE = settings.BASE_DIR / ".server-url"


def default_base_url() -> str:
    """Where the examples should point: the public address when configured, else the address the local
    server last started on, else PORT (what `make run` honours), else 8000."""
    public: str = settings.PUBLIC_BASE_URL
    if public:
        return public
    try:
        served = SERVER_URL_FILE.read_text().strip()
    except OSError:
        served = ""
    if served.startswith(("http://", "https://")):
        return served
    return f"http://127.0.0.1:{os.environ.get('PORT') or 8000}"


class Command(BaseCommand):
    help = "Creates a fresh demo workspace, programs, partners, links and users, and prints their keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object (for scripts)")
        parser.add_argument(
            "--base-url",
            default=None,
            help="Used in the curl examples (default: PUBLIC_BASE_URL, else the address `make run` serves on)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        demo = demo_create()
        if options["json"]:
            self.stdout.write(json.dumps(demo))
            return
        base = (options["base_url"] or default_base_url()).rstrip("/")
        main = demo["programs"]["main"]
        lines = [
            f"Demo workspace #{demo['workspace_id']} created. Keys are shown only now.",
            "",
            "Programs:",
        ]
        for name, program in demo["programs"].items():
            extra = ", ".join(f"{k}={v}" for k, v in program.items() if k not in {"id", "api_key", "test_api_key"})
            lines.append(
                f"  {name:<8} id={program['id']}  api_key={program['api_key']}" + (f"  ({extra})" if extra else "")
            )
            if "test_api_key" in program:
                lines.append(f"  {'':<8} test_api_key={program['test_api_key']}")
        lines += [
            "",
            "Referral links: " + ", ".join(f"{k}={v}" for k, v in demo["links"].items()),
            "",
            "Users:",
        ]
        for label, user in demo["users"].items():
            lines.append(f"  {label:<8} {user['username']} / {user['password']}")
        owner = demo["users"]["owner"]
        lines += [
            "",
            f"Dashboard: {base}/ (sign in at {base}{settings.LOGIN_URL})",
            f"  Try the owner first ({owner['username']}): every page and action. The member reads the pages but",
            "  changes nothing; the outsider belongs to no workspace, so their program list is empty.",
            f"  Main program: {base}/programs/{main['id']}/",
        ]
        link = demo["links"]["main"]
        lines += [
            "",
            "Try it:",
            f"  curl -s -X POST {base}/api/v1/track/click -H 'Content-Type: application/json' \\",
            f'    -d \'{{"affiliate_url": "https://shop.example.com/?aff={link}"}}\'',
            f"  curl -s -X POST {base}/api/v1/track/lead -H 'Authorization: Bearer {main['api_key']}' \\",
            '    -H \'Content-Type: application/json\' -d \'{"click_id": "<click_id>", "customer_key": "user-1"}\'',
            f"  curl -s -X POST {base}/api/v1/track/sale -H 'Authorization: Bearer {main['api_key']}' \\",
            "    -H 'Content-Type: application/json' \\",
            '    -d \'{"transaction_id": "txn-1", "amount_cents": 4900, "customer_key": "user-1"}\'',
            f"  curl -s -X POST {base}/api/v1/track/refund -H 'Authorization: Bearer {main['api_key']}' \\",
            "    -H 'Content-Type: application/json' \\",
            '    -d \'{"transaction_id": "txn-1", "refund_amount_cents": 1000, "refund_id": "re-1"}\'',
            f"  curl -s {base}/api/v1/programs/me/readiness -H 'Authorization: Bearer {main['api_key']}'",
        ]
        self.stdout.write("\n".join(lines))
