"""HTTP calls to the service and what their failures mean for the exit code."""

from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

import httpx

from . import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
TIMEOUT_SECONDS = 20.0

# Exit codes scripts can rely on (docs/cli.md).
OK = 0
API_ERROR = 1  # the service refused the request (4xx not listed below) or failed (5xx)
USAGE = 2  # bad or missing options (Typer's own usage errors exit 2 too)
AUTH = 3  # not logged in, login expired, refused or cancelled, credential refused (401, 403)
NETWORK = 4  # the service could not be reached
RATE_LIMITED = 5  # 429: retry after the given seconds
VERIFICATION_FAILED = 6  # test-event ran, but a step of the chain failed


@dataclass
class CliFailure(Exception):
    message: str
    exit_code: int = API_ERROR
    status: int | None = None
    code: str | None = None
    request_id: str | None = None
    retry_after_seconds: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def as_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"message": self.message, "exit_code": self.exit_code}
        for name in ("status", "code", "request_id", "retry_after_seconds"):
            value = getattr(self, name)
            if value is not None:
                error[name] = value
        if self.details:
            error["details"] = self.details
        return {"error": error}


def _exit_code_for(status: int) -> int:
    if status in (401, 403):
        return AUTH
    if status == 429:
        return RATE_LIMITED
    return API_ERROR


def _failure_from(response: httpx.Response) -> CliFailure:
    request_id = response.headers.get("X-Request-ID") or None
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return CliFailure(
            f"Unexpected answer from the service (HTTP {response.status_code})",
            exit_code=_exit_code_for(response.status_code),
            status=response.status_code,
            request_id=request_id,
        )
    details = error.get("details")
    if not isinstance(details, dict):
        details = {}
    # Platform errors name a code in error.code or, for account problems, in error.details.code.
    code = error.get("code") or details.get("code")
    retry_after = error.get("retry_after_seconds")
    header = response.headers.get("Retry-After", "")
    # isascii: str.isdigit() also takes "²", which int() refuses.
    if retry_after is None and header.isascii() and header.isdigit():
        retry_after = int(header)
    return CliFailure(
        str(error.get("message") or f"HTTP {response.status_code}"),
        exit_code=_exit_code_for(response.status_code),
        status=response.status_code,
        code=code,
        request_id=request_id or details.get("request_id"),
        retry_after_seconds=retry_after,
        details=details,
    )


class Request(TypedDict, total=False):
    """What a call sends besides its method and path: a token other than the client's, a JSON body, query
    parameters, extra headers."""

    token: str | None
    json: dict[str, Any] | None
    params: dict[str, str] | None
    headers: dict[str, str] | None


class Api:
    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _send(self, method: str, path: str, **request: Unpack[Request]) -> tuple[httpx.Response, Any]:
        """The 2xx answer and its JSON body (None when it has none); raises CliFailure otherwise."""
        sent = {"User-Agent": f"svc-cli/{__version__}", "Accept": "application/json", **(request.get("headers") or {})}
        credential = request.get("token") or self.token
        if credential:
            sent["Authorization"] = f"Bearer {credential}"
        try:
            response = httpx.request(
                method,
                self.base_url + path,
                headers=sent,
                json=request.get("json"),
                params=request.get("params"),
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise CliFailure(f"Could not reach {self.base_url}: {exc}", exit_code=NETWORK) from None
        if not response.is_success:
            raise _failure_from(response)
        try:
            return response, response.json()
        except ValueError:
            return response, None

    def call(self, method: str, path: str, **request: Unpack[Request]) -> dict[str, Any]:
        """The whole JSON body of a 2xx answer ({"data": …, "warnings"?}); raises CliFailure otherwise."""
        response, body = self._send(method, path, **request)
        if not isinstance(body, dict) or "data" not in body:
            raise CliFailure(
                f"Unexpected answer from the service (HTTP {response.status_code})",
                status=response.status_code,
                request_id=response.headers.get("X-Request-ID"),
            )
        return body

    def get_json(self, path: str, *, params: dict[str, str] | None = None) -> Any:
        """A 2xx answer's JSON body of any shape (the OpenAPI description); raises CliFailure otherwise."""
        return self._send("GET", path, params=params)[1]
