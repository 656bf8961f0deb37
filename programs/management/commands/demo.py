import json

from django.core.management.base import BaseCommand

from programs.demo import demo_create


class Command(BaseCommand):
    help = "Creates a fresh demo workspace, programs, partners, links and users, and prints their keys."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print one JSON object (for scripts)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="Used in the curl examples")

    def handle(self, *args, **options):
        demo = demo_create()
        if options["json"]:
            self.stdout.write(json.dumps(demo))
            return
        base = options["base_url"].rstrip("/")
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
            f"  curl -s {base}/api/v1/programs/me/readiness -H 'Authorization: Bearer {main['api_key']}'",
        ]
        self.stdout.write("\n".join(lines))
