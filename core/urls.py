from django.conf import settings
from django.http import HttpRequest


def public_url(request: HttpRequest | None, path: str) -> str:
    """Absolute URL of one of our pages, for links handed to API callers."""
    base_url: str = settings.PUBLIC_BASE_URL
    if base_url:
        return base_url + path
    if request is not None:
        return request.build_absolute_uri(path)
    return path
