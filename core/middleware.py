import re
import uuid

from .logging import current_request_id

# A caller may pass its own id to correlate logs; anything odd is replaced rather than echoed.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


class RequestIdMiddleware:
    """Gives every request an id for logs. Which responses show it is the API views' decision."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = incoming if _SAFE_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        token = current_request_id.set(request.request_id)
        try:
            return self.get_response(request)
        finally:
            current_request_id.reset(token)
