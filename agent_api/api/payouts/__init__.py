"""Agent routes for payouts: views.py (views and urlpatterns), serializers.py (what they read and answer)."""
