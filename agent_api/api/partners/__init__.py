"""Agent routes for partners: views.py (views and urlpatterns), serializers.py (what they read and answer)."""
