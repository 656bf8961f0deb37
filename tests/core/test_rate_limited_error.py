"""The typed 429 (core.errors.RateLimitedError.retry_after), built once for the rate limits and the CLI
test-event cap."""

from core.api.envelopes import render_error
from core.errors import RateLimitedError


def test_it_carries_retry_after_in_the_header_and_the_typed_body():
    error = RateLimitedError.retry_after("Slow down", seconds=12, headers={"X-RateLimit-Limit": "60"})
    assert error.status == 429
    assert error.headers == {"Retry-After": "12", "X-RateLimit-Limit": "60"}
    assert error.envelope == "typed"
    assert render_error(error, error.envelope) == {
        "error": {"code": "rate_limited", "message": "Slow down", "status": 429, "retry_after_seconds": 12}
    }


def test_without_extra_headers_only_retry_after_is_set():
    assert RateLimitedError.retry_after("Wait", seconds=1).headers == {"Retry-After": "1"}
