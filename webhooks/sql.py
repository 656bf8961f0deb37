"""webhooks' hand-written SQL (tests/core/test_sql_homes.py): PostgreSQL's session and transaction controls the
queuing and the fan-out use. Each statement says, in the comment above it, why it is not the ORM; the callers run
them (webhooks.dispatch, webhooks.fanout)."""

# Not the ORM: it takes no advisory lock (held by the session until released, whatever its transactions do).
ADVISORY_LOCK = "SELECT pg_advisory_lock(%s)"

# Not the ORM: ADVISORY_LOCK's release.
ADVISORY_UNLOCK = "SELECT pg_advisory_unlock(%s)"

# Not the ORM: a setting of the current transaction, no row: its commit does not wait for the WAL flush.
COMMIT_UNFLUSHED = "SET LOCAL synchronous_commit TO OFF"
