from django.urls import path

from .views import ClickTrackApi, LeadTrackApi, RefundTrackApi, SaleTrackApi

urlpatterns = [
    path("api/v1/track/click", ClickTrackApi.as_view(), name="track-click"),
    path("api/v1/track/lead", LeadTrackApi.as_view(), name="track-lead"),
    path("api/v1/track/sale", SaleTrackApi.as_view(), name="track-sale"),
    path("api/v1/track/refund", RefundTrackApi.as_view(), name="track-refund"),
]
