from django.conf import settings
from django.http import HttpRequest


def public_url(request: HttpRequest | None, path: str) -> str:
    """Absolute URL of one of our pages, for links handed to API callers."""
    if settings.PUBLIC_BASE_URL:
        return settings.PUBLIC_BASE_URL + path
    if request is not None:
        return request.build_absolute_uri(path)
    return path
