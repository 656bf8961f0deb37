from django.urls import path

from .lean import track_click, track_sale
from .reports import ProgramClickSourcesGetApi
from .tracker import TrackerConfigGetApi, TrackerDiscountGetApi, VisitTrackApi, tracker_script_get
from .views import LeadTrackApi, RefundTrackApi

urlpatterns = [
    path("api/v1/track/click", track_click, name="track-click"),
    path("api/v1/track/lead", LeadTrackApi.as_view(), name="track-lead"),
    path("api/v1/track/sale", track_sale, name="track-sale"),
    path("api/v1/track/refund", RefundTrackApi.as_view(), name="track-refund"),
    path("api/v1/track/visit", VisitTrackApi.as_view(), name="track-visit"),
    path("api/v1/track/config", TrackerConfigGetApi.as_view(), name="track-config"),
    path("api/v1/track/discount", TrackerDiscountGetApi.as_view(), name="track-discount"),
    path("js/svc-tracker.js", tracker_script_get, name="tracker-script"),
    path("api/v1/programs/me/analytics/sources", ProgramClickSourcesGetApi.as_view(), name="program-click-sources"),
]
