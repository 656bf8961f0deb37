"""Agent routes for programs: views.py (views and urlpatterns), serializers.py (what they answer)."""
