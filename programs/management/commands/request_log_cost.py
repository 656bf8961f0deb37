"""`manage.py request_log_cost`: what the request log costs one call, in microseconds. `make bench` runs it after
driving the server and reports the cost as a share of a click (its 5% budget). Writes rows the way the server does
(queued, REQUEST_LOG_BATCH per INSERT) and deletes them afterwards."""

import json
import secrets
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from programs import calllog
from programs.models import ApiCall

# A click's excerpt, as the log keeps it.
CLICK_EXCERPT = {"affiliate_url": "https://shop.example/pricing?aff=partner-code", "program_id": 1}


class Command(BaseCommand):
    help = "Measures the request log's cost per call (microseconds), as make bench reports it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--calls", type=int, default=5000, help="calls to record (default 5000)")
        parser.add_argument("--json", action="store_true", help='print {"microseconds_per_call": …, "calls": …}')

    def handle(self, *args: Any, **options: Any) -> None:
        calls = max(1, options["calls"])
        marker = "bench-" + secrets.token_hex(8)
        started = time.perf_counter()
        for _ in range(calls):
            calllog.api_call_record(
                program_id=None,
                method="POST",
                route="track-click",
                status=200,
                body={"success": True},
                request_id=marker,
                key=None,
                latency_ms=3,
                excerpt=CLICK_EXCERPT,
            )
        calllog.api_calls_flush()
        microseconds = (time.perf_counter() - started) / calls * 1e6
        ApiCall.objects.filter(request_id=marker).delete()
        if options["json"]:
            self.stdout.write(json.dumps({"microseconds_per_call": round(microseconds, 1), "calls": calls}))
        else:
            self.stdout.write(f"request log: {microseconds:.1f} µs per call ({calls} calls)")
