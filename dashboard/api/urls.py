from django.urls import path

from .views import (
    TrackingEventsListApi,
    TrackingExplainGetApi,
    TrackingLogsListApi,
    TrackingPerformanceGetApi,
    TrackingReadinessGetApi,
    TrackingStatusGetApi,
    TrackingTestEventsCheckApi,
    TrackingTestEventSendApi,
    TrackingVerificationRunApi,
)

# Path ids are matched as text so that any id, even a malformed one, gets the JSON 404 of the envelope
# (after the sign-in check) rather than Django's HTML page.
urlpatterns = [
    path("api/tracking/status/<id:program_id>", TrackingStatusGetApi.as_view(), name="tracking-status"),
    path("api/tracking/events/<id:program_id>", TrackingEventsListApi.as_view(), name="tracking-events"),
    path("api/tracking/performance/<id:program_id>", TrackingPerformanceGetApi.as_view(), name="tracking-performance"),
    path("api/tracking/readiness/<id:program_id>", TrackingReadinessGetApi.as_view(), name="tracking-readiness"),
    path("api/tracking/explain/<id:program_id>", TrackingExplainGetApi.as_view(), name="tracking-explain"),
    path("api/tracking/logs/<id:program_id>", TrackingLogsListApi.as_view(), name="tracking-logs"),
    path(
        "api/tracking/run-verification/<id:program_id>",
        TrackingVerificationRunApi.as_view(),
        name="tracking-run-verification",
    ),
    path("api/tracking/test", TrackingTestEventSendApi.as_view(), name="tracking-test"),
    path("api/tracking/check-test-events", TrackingTestEventsCheckApi.as_view(), name="tracking-check-test-events"),
]
