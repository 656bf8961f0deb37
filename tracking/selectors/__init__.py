"""The reads of tracking's events, one module per job: clicks (which count, which the rules marked), events (the
live events list), performance (the per-day and per-partner report), sources (click sources), status (a program's
tracking state and its test events)."""
