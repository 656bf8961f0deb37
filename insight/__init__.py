"""Reads that explain, over every app's data: attribution explained, the readiness verdict and the integration
diagnosis. No models: it records nothing, and no app below it imports it (docs/architecture.md)."""
