"""gunicorn settings for every way this project serves HTTP (`make run`, the served tests):
gunicorn -c config/gunicorn.conf.py

gunicorn reads this file once, in the master, before it forks the workers."""

import os
import secrets

from gunicorn.arbiter import Arbiter

from core import limits
from core.counter_cache import instance_counter_file, remove_counter_file
from core.gunicorn_errors import install_json_error_pages

wsgi_app = "config.wsgi:application"
# Command-line options win over these (`--bind 0.0.0.0:8000 --workers 4` in production).
bind = f"127.0.0.1:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# ACCESS_LOG="" turns the access log off (the benchmark does: writing it costs throughput).
accesslog = os.environ.get("ACCESS_LOG", "-") or None
# Both logs leave keys, tokens and emails out, in the query string above all (`?api_key=…`): core/gunicorn_logging.py.
logger_class = "core.gunicorn_logging.RedactingLogger"

# Oversized URLs and headers are answered by the application (JSON 414 and 431 in the route's envelope, see
# core/limits.py), so gunicorn's own limits sit above the application's and its HTML error page is only the last
# fence. 0 lifts the request-line limit (gunicorn allows at most 8190 otherwise, below a long URL's 414); a slow or
# endless line is still cut by the worker timeout. Header buffering is bounded by fields x field size (about 20 MB).
limit_request_line = 0
limit_request_fields = limits.MAX_HEADER_FIELDS * 3
limit_request_field_size = limits.MAX_HEADER_BYTES
# What gunicorn still refuses itself (past those limits, a NUL in a header, a malformed chunk) is JSON too.
install_json_error_pages()

# One server is one instance for the spec's rate limits, whatever its number of workers. Set here, in the master,
# the id reaches every worker through the environment, so all of them count in the same place (see CACHES in
# config/settings.py). INSTANCE_ID set by the operator wins, e.g. to keep counts across a restart.
_instance_id_generated = not os.environ.get("INSTANCE_ID")
if _instance_id_generated:
    os.environ["INSTANCE_ID"] = f"gunicorn-{secrets.token_hex(8)}"


def on_exit(server: Arbiter) -> None:
    # Embedded counters under a generated id are this run's alone: nobody reads them once it stops.
    if _instance_id_generated:
        remove_counter_file(instance_counter_file(os.environ["INSTANCE_ID"]))


def when_ready(server: Arbiter) -> None:
    # `make run` asks for the address it serves on, so `manage.py demo` prints curl lines for the real port.
    target = os.environ.get("SERVER_URL_FILE")
    if target and server.LISTENERS:
        host, port = server.LISTENERS[0].sock.getsockname()[:2]
        with open(target, "w") as handle:
            handle.write(f"http://{host}:{port}\n")


# gunicorn's runtime control socket has one default path per user, so two servers on one machine (a test server
# next to `make run`) would take it from each other; nothing here uses it.
control_socket_disable = True
