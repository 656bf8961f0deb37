"""Agent routes for referral links: views.py (views and urlpatterns), serializers.py (what they read and answer)."""
