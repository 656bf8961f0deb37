import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Load the URLconf (and with it every view, serializer and model module) now, then move everything loaded so far
# out of the garbage collector's reach: it lives as long as the process, and a full collection would otherwise walk
# it again every few hundred requests (a tenth of a sale's CPU, measured in process).
get_resolver().url_patterns  # noqa: B018
gc.freeze()
