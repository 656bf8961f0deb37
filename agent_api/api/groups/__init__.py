"""Agent routes for partner groups, tier rules, bonuses, partner moves and coupon codes: views.py (views and
urlpatterns), serializers.py (what they read and answer)."""
