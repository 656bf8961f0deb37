"""Agent route for tracked events: views.py (view and urlpatterns), serializers.py (what it reads and answers)."""
