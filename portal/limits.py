"""The portal's rate limits: POSTs counted per bucket with django-ratelimit, in the cache the API's limits use."""

from django.http import HttpRequest
from django_ratelimit.core import is_ratelimited


def post_limited(request: HttpRequest, *, group: str, key: str, rate: str) -> bool:
    """Counts this POST in `group`'s bucket for `key` (a client address, an account id, an email digest) and says
    whether the bucket is past `rate` ("10/m", "5/h")."""
    # django-ratelimit ships no types.
    limited: bool = is_ratelimited(
        request, group=group, key=lambda _group, _req: key, rate=rate, method="POST", increment=True
    )
    return limited
