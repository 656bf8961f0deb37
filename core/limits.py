"""Documented limits on a request's size, enforced by core.middleware.RequestLimitsMiddleware with a JSON answer in
the route's envelope. gunicorn's own limits (config/gunicorn.conf.py) sit above these, so gunicorn's HTML error page
is only the last fence. The body limit is Django's DATA_UPLOAD_MAX_MEMORY_SIZE (config/settings.py)."""

# Path and query string as sent, in bytes: 414 above it.
MAX_URL_BYTES = 8192
# 431 above any of these. Field bytes count the name and the value.
MAX_HEADER_FIELDS = 100
MAX_HEADER_FIELD_BYTES = 8192
MAX_HEADER_BYTES = 65536
