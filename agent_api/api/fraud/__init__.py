"""Agent routes for a program's fraud rules and what they found: views.py (views and urlpatterns), serializers.py
(what they read and answer)."""
