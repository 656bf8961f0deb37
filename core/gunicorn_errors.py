"""gunicorn answers a request it cannot parse (a NUL in a header, a request line or headers past its own limits,
a malformed chunk) before the application sees it, with an HTML page. Installed from config/gunicorn.conf.py,
this writes those answers in the platform envelope instead, so no client of the API ever has to read HTML.
The request was never routed, so the error carries the generic code of its status."""

import json
import socket

from gunicorn import util

from core import errors
from core.api.envelopes import TYPED_DEFAULT_CODES

_NAMES = {error.status: error.name for error in errors.ApiError.__subclasses__()}


def write_json_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn.util.write_error's signature and framing, with a JSON body."""
    error = {
        "status": status_int,
        "name": _NAMES.get(status_int, "BadRequestError" if status_int < 500 else "InternalServerError"),
        "message": mesg or reason,
        "details": {},
        "code": TYPED_DEFAULT_CODES.get(status_int, "invalid_request" if status_int < 500 else "internal_error"),
    }
    body = json.dumps({"data": None, "error": error}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def install_json_error_pages() -> None:
    # The workers call util.write_error through the module, so replacing it in the master reaches every worker.
    util.write_error = write_json_error
