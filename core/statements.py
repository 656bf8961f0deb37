"""core's hand-written statements that name no model: the health probe, the integrity runner's statements over a
check's rows, and those of the rate-limit counter file (SQLite, outside Django's databases). core/sql.py builds
the hot paths' INSERTs and SELECTs from the models; these two modules are core's only SQL
(tests/core/test_sql_homes.py). Each statement says, in the comment above it, why it is not the ORM; the callers
run them."""

# Not the ORM: the probe asks the database itself, no table (core.views.healthz).
HEALTH_PROBE = "SELECT 1"

# Column names every integrity check's rows carry (a QuerySet's are annotated by the runner; Sql selects them).
REF, PROGRAM = "integrity_ref", "integrity_program"


# Not the ORM: a check's rows come as SQL (its own, or its QuerySet's compiled), and the ORM selects from no SQL.
def offending_sql(inner: str) -> tuple[str, str, str]:
    """The integrity runner's statements over a check's offending rows (`inner`, SQL selecting REF and PROGRAM,
    with its parameters first): how many there are; the first refs (LIMIT %s); how many rows each program has,
    most first (LIMIT %s)."""
    return (
        f"SELECT COUNT(*) FROM ({inner}) AS offending",
        f"SELECT {REF} FROM ({inner}) AS offending ORDER BY {REF} LIMIT %s",
        f"SELECT {PROGRAM}, COUNT(*) FROM ({inner}) AS offending WHERE {PROGRAM} IS NOT NULL "
        f"GROUP BY {PROGRAM} ORDER BY 2 DESC LIMIT %s",
    )


# Not the ORM: the rate-limit counters are a SQLite file of their own (core.counter_cache), which no Django
# database reaches; each statement is one atomic step for every process of the instance.
class CounterFile:
    """The counter file's statements: one table of keys, values and expiry times (? placeholders: sqlite3)."""

    SCHEMA = "CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value, expires REAL NOT NULL) WITHOUT ROWID"
    SETUP = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=OFF", SCHEMA)
    CULL = "DELETE FROM cache WHERE expires <= ?"
    LIVE = "SELECT 1 FROM cache WHERE key = ? AND expires > ?"
    ADD = (
        "INSERT INTO cache (key, value, expires) VALUES (?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires "
        "WHERE cache.expires <= ?"
    )
    GET = "SELECT value FROM cache WHERE key = ? AND expires > ?"
    SET = (
        "INSERT INTO cache (key, value, expires) VALUES (?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires"
    )
    TOUCH = "UPDATE cache SET expires = ? WHERE key = ? AND expires > ?"
    INCR = (
        "UPDATE cache SET value = value + ? WHERE key = ? AND expires > ? AND typeof(value) = 'integer' RETURNING value"
    )
    COUNT_ONE = (
        "INSERT INTO cache (key, value, expires) VALUES (?, 1, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = CASE WHEN cache.expires <= ? OR typeof(cache.value) <> 'integer' THEN 1 ELSE cache.value + 1 END, "
        "expires = CASE WHEN cache.expires <= ? THEN excluded.expires ELSE cache.expires END "
        "RETURNING value"
    )
    DELETE = "DELETE FROM cache WHERE key = ?"
    CLEAR = "DELETE FROM cache"
