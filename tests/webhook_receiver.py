"""A real HTTP receiver for the tests that deliver webhooks: a local server that answers as each test scripts it
(status, Retry-After, delay, body), records every request, and verifies each with the standardwebhooks library under
the secrets it is told to trust, the way an integrator's receiver does. `receiving()` runs it in a thread."""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Reply:
    """What the receiver answers to one request."""

    status: int = 200
    body: bytes = b"ok"
    retry_after: str | None = None
    delay: float = 0.0
    # Sends the body one byte at a time, this many seconds apart (a receiver that answers, then stalls).
    byte_delay: float = 0.0


@dataclass
class Received:
    """One request as the receiver saw it; `verified` says, per secret trusted when it came, whether its signature
    verified."""

    path: str
    headers: dict[str, str]
    body: bytes
    verified: dict[str, bool] = field(default_factory=dict)
    received_at: float = field(default_factory=time.time)

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]

    def payload(self) -> dict[str, Any]:
        return json.loads(self.body)


class Receiver:
    """Answers each request with the next scripted Reply, then with `default` (200 "ok" unless told)."""

    def __init__(self, default: Reply | None = None) -> None:
        self.secrets: list[str] = []
        self.requests: list[Received] = []
        self.default = default or Reply()
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = receiver._received(Received(path=self.path, headers=headers, body=body))
                if reply.delay:
                    threading.Event().wait(reply.delay)
                try:
                    self.send_response(reply.status)
                    if reply.retry_after is not None:
                        self.send_header("Retry-After", reply.retry_after)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    for start in range(0, len(reply.body), 1 if reply.byte_delay else len(reply.body) or 1):
                        threading.Event().wait(reply.byte_delay)
                        self.wfile.write(reply.body[start : start + (1 if reply.byte_delay else len(reply.body))])
                except OSError:
                    pass  # the sender gave up (a timeout test): nothing to answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def _received(self, request: Received) -> Reply:
        for secret in self.secrets:
            try:
                Webhook(secret).verify(request.body, request.headers)
                request.verified[secret] = True
            except WebhookVerificationError:
                request.verified[secret] = False
        with self._lock:
            self.requests.append(request)
            return self._replies.pop(0) if self._replies else self.default

    def script(self, *replies: Reply) -> None:
        """The next requests' answers, in order; once they are used up, `default`."""
        with self._lock:
            self._replies.extend(replies)

    def trust(self, *secrets: str) -> None:
        """Verifies the requests that come from now on under these secrets (see Received.verified)."""
        self.secrets = list(secrets)

    def ids(self) -> list[str]:
        return [request.webhook_id for request in self.requests]

    def verified_payloads(self, secret: str) -> list[dict[str, Any]]:
        """Every request's payload as the library returns it under `secret`; fails on any request it refuses."""
        payloads = []
        for request in list(self.requests):
            try:
                payloads.append(Webhook(secret).verify(request.body, request.headers))
            except WebhookVerificationError as error:
                raise AssertionError(f"{request.headers.get('webhook-id')}: {error}") from None
        return payloads


@contextmanager
def receiving(default: Reply | None = None) -> Iterator[Receiver]:
    """A Receiver serving in a thread until the block ends."""
    receiver = Receiver(default)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join(timeout=10)
