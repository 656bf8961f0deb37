"""Agent route for the key itself: views.py (view and urlpatterns), serializers.py (what it answers)."""
