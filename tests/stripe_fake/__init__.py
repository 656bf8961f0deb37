"""A local Stripe API for the tests (server.py), its pytest fixture (fixtures.py) and Connect webhook events
(events.py)."""
