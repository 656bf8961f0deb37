"""Agent routes for outbound webhooks: views.py (views and urlpatterns), serializers.py (what they read and
answer)."""
