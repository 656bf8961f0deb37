"""The request limits against the real server: gunicorn with config/gunicorn.conf.py, spoken to over raw
sockets, because the test client never exercises what gunicorn does first (its own line and header limits, its
HTML error page, chunked bodies, a Content-Length that lies). Every refusal here is JSON in the route's envelope.

Nothing here reaches the database (each request is refused before a view needs it), so the server runs on an
empty SQLite file and the tests run the same on every database."""

import json
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from core import limits, messages
from core.api.parsers import MAX_JSON_DEPTH
from tests.gunicorn import free_port, gunicorn_serving

BODY_LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE


@dataclass
class Server:
    host: str
    port: int
    log: Path


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        assert self.headers.get("content-type", "").startswith("application/json"), (self.headers, self.body[:300])
        return json.loads(self.body)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("bad-input-served")
    port = free_port()
    env = {
        "DATABASE_URL": f"sqlite:///{tmp / 'unused.sqlite3'}",
        "DEBUG": "false",
        "SECRET_KEY": "bad-input-served-tests-only",
        "ALLOWED_HOSTS": "127.0.0.1",
        "REDIS_URL": "",
        "INSTANCE_ID": "",
        "RATELIMIT_SHARED": "false",
    }
    log = tmp / "gunicorn.log"
    with gunicorn_serving(env=env, log=log, workers=2, port=port):
        yield Server(host="127.0.0.1", port=port, log=log)


def exchange(server: Server, head: bytes, body_parts: Sequence[bytes] = (), *, close_write: bool = False) -> Answer:
    """Sends a raw request and reads the whole answer (the sync worker closes the connection after it). Sending
    may fail once the server has answered and closed (it need not read what it refused): the answer still counts."""
    with socket.create_connection((server.host, server.port), timeout=20) as sock:
        try:
            sock.sendall(head)
            for part in body_parts:
                sock.sendall(part)
            if close_write:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    head_part, _, body = received.partition(b"\r\n\r\n")
    lines = head_part.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        body = dechunked(body)
    return Answer(status=status, headers=headers, body=body)


def dechunked(data: bytes) -> bytes:
    body = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        body, data = body + data[:size], data[size + 2 :]
    return body


def request_head(method: str, target: str, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_post(target: str, body: bytes, **headers: str) -> bytes:
    return request_head(
        "POST", target, {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}
    )


def chunked(data: bytes, size: int = 65536) -> list[bytes]:
    parts = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return [*parts, b"0\r\n\r\n"]


def assert_platform(answer: Answer, status: int, message: str, code: str | None = None) -> None:
    error = {"status": status, "name": answer.json()["error"]["name"], "message": message, "details": {}}
    if code is not None:
        error["code"] = code
    assert answer.status == status, answer.body[:500]
    assert answer.json() == {"data": None, "error": error}


URI_TOO_LONG = messages.URI_TOO_LONG.format(limit=limits.MAX_URL_BYTES)
HEADERS_TOO_LARGE = messages.HEADERS_TOO_LARGE.format(
    fields=limits.MAX_HEADER_FIELDS, field_bytes=limits.MAX_HEADER_FIELD_BYTES, total_bytes=limits.MAX_HEADER_BYTES
)
TOO_LARGE = messages.PAYLOAD_TOO_LARGE.format(limit=BODY_LIMIT)
CHUNKED_JSON = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}


class TestUrl:
    @pytest.mark.parametrize("length", [limits.MAX_URL_BYTES + 1, 16_000, 100_000])
    def test_a_long_url_is_a_json_414_not_gunicorns_page(self, server, length):
        target = "/api/v1/track/sale?q=" + "a" * length
        answer = exchange(server, request_head("GET", target))
        assert_platform(answer, 414, URI_TOO_LONG, code="uri_too_long")
        assert answer.headers["x-request-id"]

    def test_a_long_url_on_a_page_is_json_too(self, server):
        answer = exchange(server, request_head("GET", "/?q=" + "a" * 20_000))
        assert_platform(answer, 414, URI_TOO_LONG)


class TestHeaders:
    @pytest.mark.parametrize(
        "headers",
        [
            {"X-Fill": "a" * 10_000},
            {"X-Fill": "a" * 60_000},
            {f"X-Fill-{n}": "a" for n in range(150)},
            {f"X-Fill-{n}": "a" * 8000 for n in range(9)},
        ],
        ids=["one of 10 KB", "one of 60 KB", "150 headers", "72 KB in all"],
    )
    def test_oversized_headers_are_a_json_431(self, server, headers):
        answer = exchange(server, request_head("POST", "/api/v1/track/refund", headers))
        assert_platform(answer, 431, HEADERS_TOO_LARGE, code="headers_too_large")

    def test_a_cookie_of_16_kb_on_a_page_is_json(self, server):
        answer = exchange(server, request_head("GET", "/", {"Cookie": "sessionid=" + "a" * 16_000}))
        assert_platform(answer, 431, HEADERS_TOO_LARGE)


class TestBody:
    def test_a_declared_body_over_the_limit_is_413_before_it_is_read(self, server):
        head = json_post("/api/v1/track/sale", b"", **{"Content-Length": str(BODY_LIMIT + 1)})
        answer = exchange(server, head)
        assert_platform(answer, 413, TOO_LARGE, code="payload_too_large")

    def test_a_sent_body_over_the_limit_is_413(self, server):
        body = b'{"page_url": "' + b"a" * (3 * 1024 * 1024) + b'"}'
        answer = exchange(server, json_post("/api/v1/track/click", body), [body])
        assert_platform(answer, 413, TOO_LARGE)

    def test_a_chunked_body_over_the_limit_is_413(self, server):
        body = b'{"page_url": "' + b"a" * (BODY_LIMIT + 10) + b'"}'
        head = request_head(
            "POST", "/api/v1/track/click", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        )
        answer = exchange(server, head, chunked(body))
        assert_platform(answer, 413, TOO_LARGE)

    def test_a_small_chunked_body_is_read(self, server):
        """WSGI gives Django no length for it: before, the body read as empty ("affiliate_url is required")."""
        head = request_head(
            "POST", "/api/v1/track/click", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        )
        answer = exchange(server, head, chunked(b'{"affiliate_url": "ftp://shop.test/?aff=x"}', size=7))
        assert_platform(answer, 400, messages.INVALID_AFFILIATE_URL)

    def test_a_content_length_shorter_than_the_body_reads_a_truncated_body(self, server):
        body = b'{"affiliate_url": "https://shop.test/?aff=x"}'
        head = json_post("/api/v1/track/click", body, **{"Content-Length": "10"})
        answer = exchange(server, head, [body])
        assert_platform(answer, 400, messages.MALFORMED_JSON)

    def test_a_content_length_longer_than_the_body_reads_what_came(self, server):
        body = b'{"affiliate_url": "ftp://x"}'
        head = json_post("/api/v1/track/click", body, **{"Content-Length": "4000"})
        answer = exchange(server, head, [body], close_write=True)
        assert_platform(answer, 400, messages.INVALID_AFFILIATE_URL)

    def test_a_content_length_longer_than_a_cut_body_is_400(self, server):
        body = b'{"affiliate_url": "ftp://x'
        head = json_post("/api/v1/track/click", body, **{"Content-Length": "4000"})
        answer = exchange(server, head, [body], close_write=True)
        assert_platform(answer, 400, messages.MALFORMED_JSON)

    def test_json_nested_a_thousand_deep_is_400(self, server):
        body = b'{"additional_data": ' + b"[" * 1000 + b"]" * 1000 + b"}"
        answer = exchange(server, json_post("/api/v1/track/click", body), [body])
        assert_platform(answer, 400, messages.JSON_TOO_DEEP.format(depth=MAX_JSON_DEPTH))

    def test_a_nul_inside_a_string_is_400(self, server):
        body = b'{"affiliate_url": "https://shop.test/?aff=\\u0000"}'
        answer = exchange(server, json_post("/api/v1/track/click", body), [body])
        assert_platform(answer, 400, messages.TEXT_NOT_STORABLE.format(field="affiliate_url"))


class TestMethodAndQuery:
    @pytest.mark.parametrize("path", ["/api/v1/track/sale", "/api/v1/track/refund"])
    @pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
    def test_another_method_on_sale_and_refund_is_a_405_with_a_code(self, server, path, method):
        answer = exchange(server, request_head(method, path))
        assert_platform(answer, 405, messages.METHOD_NOT_ALLOWED.format(method=method), code="method_not_allowed")
        assert answer.json()["error"]["name"] == "MethodNotAllowedError"
        assert answer.headers["allow"] == "POST, OPTIONS"

    def test_a_nul_in_the_query_string_is_400(self, server):
        answer = exchange(server, request_head("GET", "/api/v1/cli/auth/poll?state=%00"))
        assert_platform(answer, 400, messages.QUERY_NOT_STORABLE.format(name="state"))


class TestWhatGunicornRefusesItself:
    """Past gunicorn's own limits, or malformed at the protocol level, gunicorn answers before Django: in the
    platform envelope (core/gunicorn_errors.py), never its HTML page."""

    def assert_json_error(self, answer: Answer, status: int) -> None:
        assert answer.status == status, answer.body[:300]
        error = answer.json()["error"]
        assert answer.json()["data"] is None
        assert error["status"] == status and error["message"] and error["details"] == {} and error["code"]

    @pytest.mark.parametrize("header", ["User-Agent", "Cookie", "X-Request-ID"])
    def test_a_raw_nul_in_a_header_is_a_json_400(self, server, header):
        answer = exchange(server, request_head("GET", "/api/v1/track/config", {header: "a\x00b"}))
        self.assert_json_error(answer, 400)
        assert answer.json()["error"]["name"] == "BadRequestError"

    def test_a_raw_nul_in_the_request_line_is_a_json_400(self, server):
        answer = exchange(server, b"GET /api/v1/track/sale?\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.assert_json_error(answer, 400)

    def test_a_header_past_gunicorns_limit_is_a_json_431(self, server):
        answer = exchange(server, request_head("POST", "/api/v1/track/sale", {"X-Fill": "a" * 200_000}))
        self.assert_json_error(answer, 431)
        assert answer.json()["error"]["code"] == "headers_too_large"

    def test_a_malformed_chunk_is_a_json_400_not_a_500(self, server):
        head = request_head("POST", "/api/v1/track/click", CHUNKED_JSON)
        answer = exchange(server, head, [b"zz\r\n{}\r\n0\r\n\r\n"])
        assert_platform(answer, 400, messages.BODY_UNREADABLE)
