"""Reads that explain: attribution explained, readiness, the integration diagnosis and the report rollups."""
