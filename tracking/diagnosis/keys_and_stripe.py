"""Mistakes about keys, the browser tracker, attribution without leads and Stripe."""
