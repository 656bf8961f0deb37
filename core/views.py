import logging

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.currency import Currency
from core.statements import HEALTH_PROBE

logger = logging.getLogger("svc.health")


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the process is up and the database answers a query."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(HEALTH_PROBE)
            cursor.fetchone()
    except Exception:
        logger.exception("healthz.database_unreachable")
        return JsonResponse({"status": "error", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


class ErrorReferenceView(TemplateView):
    template_name = "docs/errors.html"
    extra_context = {"currencies": ", ".join(Currency.values)}


class TrivialApi(APIView):
    """Benchmark baseline: the cheapest DRF view this server can answer. Routed only when
    BENCH_TRIVIAL_ENDPOINT is on."""

    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes: list[type[BasePermission]] = []

    def get(self, request: Request) -> Response:
        return Response({"ok": True})
