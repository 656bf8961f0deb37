import logging

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView

logger = logging.getLogger("svc.health")


@never_cache
def healthz(request):
    """200 when the process is up and the database answers a query."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        logger.exception("healthz.database_unreachable")
        return JsonResponse({"status": "error", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


class ErrorReferenceView(TemplateView):
    template_name = "docs/errors.html"
