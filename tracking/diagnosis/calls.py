"""Mistakes read from the request log (programs.ApiCall)."""
