"""Agent routes for commissions: views.py (views and urlpatterns), serializers.py (what they read and answer)."""
