"""Settings read from the environment. Defaults run locally with nothing installed:
SQLite, local-memory cache, Celery tasks run in-process."""

import os
import secrets
from pathlib import Path
from typing import Any

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from core.api import ratelimit

from .env import BASE_DIR, dev_secret_key, env, env_bool, env_float, env_int

# Before any app loads: mypy checks ModelAdmin[Program], Paginator[Row] and the like, which Django's classes only
# accept at run time once patched.
django_stubs_ext.monkeypatch()

DEBUG = env_bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    # Development only: one key per checkout, kept in a git-ignored file, so every worker of `make run` signs
    # sessions alike and they survive a restart.
    SECRET_KEY = dev_secret_key(Path(env.str("SECRET_KEY_FILE", default=str(BASE_DIR / ".secret_key"))))
# Earlier keys, comma-separated, while rotating SECRET_KEY: what they signed still verifies, and webhook secrets
# encrypted under them still decrypt (webhooks.signing).
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is required when DEBUG is off")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Public address of this service, used in links we hand out (docs_url, Link headers, login URLs).
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "corsheaders",
    "drf_spectacular",
    "django_ratelimit",
    "core.apps.CoreConfig",
    "programs",
    "tracking.apps.TrackingConfig",
    "commissions",
    "cli_api",
    "dashboard",
    "agent_api",
    "webhooks",
    "fraud",
    "portal",
    "payouts",
    "imports",
    "insight",
    "groups",
    "tiers",
    "billing",
]

MIDDLEWARE = [
    "core.middleware.RequestIdMiddleware",
    # Before anything reads the request: oversized or unstorable input gets a JSON 4xx (core/limits.py).
    "core.middleware.RequestLimitsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    # The click and sale routes skip the signed-in middleware below (tracking/api/lean.py).
    "tracking.api.lean.LeanRoutesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: the same 404 with DEBUG on or off (JSON under /api/, the dashboard's page elsewhere).
    "core.not_found.NotFoundMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("CONN_MAX_AGE", 60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The same backend, with a health check that polls the socket instead of sending SELECT 1 (core/db).
    DATABASES["default"]["ENGINE"] = "core.db.postgresql"
# Read on every database, so a typo fails at start-up even where it would not apply.
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", default=True)
if DATABASES["default"]["ENGINE"] == "core.db.postgresql" and DB_PREPARED_STATEMENTS:
    # Server-side binding plus a prepare threshold: psycopg prepares a statement after it ran twice on a
    # connection, so PostgreSQL stops re-planning the hot path's queries (about a third of their time).
    # Turn off behind a transaction-pooling PgBouncer, which cannot keep prepared statements.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"server_side_binding": True, "prepare_threshold": 2})
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # `make run` serves SQLite with several gunicorn workers. A transaction that starts reading and then writes
    # cannot wait for another writer (SQLite answers "database is locked" at once), so every transaction takes
    # the write lock when it begins and waits up to `timeout` seconds for it; WAL lets reads go on meanwhile.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL"}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, Celery ---------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
RATELIMIT_SHARED = env_bool("RATELIMIT_SHARED", default=False)
if RATELIMIT_SHARED and not REDIS_URL:
    raise ImproperlyConfigured("RATELIMIT_SHARED=true needs REDIS_URL")
# The spec counts rate limits per API server instance, and one server is one instance whatever its number of
# processes. config/gunicorn.conf.py gives all workers of a server one INSTANCE_ID; a gunicorn started without it
# still has one master, whose pid its workers share. Any other process (runserver) is an instance of its own.
INSTANCE_ID = env.str("INSTANCE_ID", default="")
if not INSTANCE_ID and os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/"):
    INSTANCE_ID = f"gunicorn-{os.getppid()}"


# Every Redis client has timeouts: an unreachable Redis must cost a request milliseconds, not the OS's connect
# timeout, and a Redis that accepts and never answers no more than these. After a failure a process skips Redis for
# REDIS_FAILURE_SKIP_SECONDS (core/redis_guard.py): the caches answer from its memory, tasks wait for the sweeps.
REDIS_SOCKET_TIMEOUT_SECONDS = env_float("REDIS_SOCKET_TIMEOUT_SECONDS", 0.5)
REDIS_FAILURE_SKIP_SECONDS = env_float("REDIS_FAILURE_SKIP_SECONDS", 5.0)
REDIS_CACHE_OPTIONS = {
    "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
    "socket_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
}


def _ratelimit_cache() -> dict[str, Any]:
    if REDIS_URL:
        # Atomic INCR in Redis: under the instance's prefix, or under one prefix for all (RATELIMIT_SHARED=true).
        instance = "shared" if RATELIMIT_SHARED else INSTANCE_ID or f"process-{secrets.token_hex(8)}"
        return {
            "BACKEND": "core.counter_cache.RedisCounterCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": f"ratelimit:{instance}",
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
    if INSTANCE_ID:
        # No Redis: the instance's processes count in one SQLite file (see core/counter_cache.py).
        from core.counter_cache import instance_counter_file

        return {"BACKEND": "core.counter_cache.SQLiteCounterCache", "LOCATION": str(instance_counter_file(INSTANCE_ID))}
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ratelimit"}


CACHES = {
    "default": (
        {"BACKEND": "core.counter_cache.FallbackRedisCache", "LOCATION": REDIS_URL, "OPTIONS": REDIS_CACHE_OPTIONS}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "default"}
    ),
    "ratelimit": _ratelimit_cache(),
}

CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_IGNORE_RESULT = True
# Tests give their worker a queue of its own so no stray worker takes its tasks.
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_QUEUE", default="celery")
# Webhook fan-out and delivery tasks go to a queue of their own (webhooks.queue.task_route), so the beat jobs on the
# default queue (the reconciler, refund notices, rollups) never wait behind a webhook backlog. Workers consume both:
# `celery worker -Q celery,webhooks`. Unset, it is named after the default queue: "webhooks" beside "celery",
# "<queue>-webhooks" beside any other (so each test worker's queue has its own webhook queue).
WEBHOOK_QUEUE = env.str(
    "CELERY_WEBHOOK_QUEUE",
    default="webhooks" if CELERY_TASK_DEFAULT_QUEUE == "celery" else f"{CELERY_TASK_DEFAULT_QUEUE}-webhooks",
)
CELERY_TASK_ROUTES = ["webhooks.queue.task_route"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The prefork pool, with time limits that stop only the task they were set for, never an idle process after a
# broker reconnect (core/worker_limits.py).
CELERY_WORKER_POOL = "core.worker_limits:TaskPool"
CELERY_TASK_TIME_LIMIT = 120
CELERY_TASK_SOFT_TIME_LIMIT = 100
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker (and beat) waits for the broker however long an outage lasts: celery's default gives up after 100 tries
# (about 50 minutes) and the worker exits. Only consumers read it; a request's publish is bound by max_retries below.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
if CELERY_BROKER_URL.startswith("redis://"):
    # kombu's Redis transport, guarded so that a worker holding messages survives Redis dropping (see core/broker.py).
    CELERY_BROKER_TRANSPORT = "core.broker:RedisTransport"
# A worker reconnects every second while the broker is away, and beat logs a refused send once a minute
# (core/broker.py).
CELERY_WORKER_CONSUMER = "core.broker:Consumer"
CELERY_BEAT_SCHEDULER = "core.broker:Scheduler"
# A broker outage must not hang a request that enqueues a notification, refused (one try) or hanging (the
# socket timeouts; the worker's BRPOP waits 1 s, well inside them).
BROKER_SOCKET_TIMEOUT_SECONDS = env_float("BROKER_SOCKET_TIMEOUT_SECONDS", 2.0)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "socket_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
    "socket_connect_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
}
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BEAT_SCHEDULE = {
    "approve-due-commissions": {"task": "commissions.approve_due", "schedule": 300.0},
    "purge-cli-login-sessions": {"task": "cli_api.purge_login_sessions", "schedule": 3600.0},
    # Refund notifications a broker outage or a failed task left in the outbox.
    "deliver-pending-notifications": {"task": "commissions.deliver_pending_notifications", "schedule": 60.0},
    # Sales whose request died between storing the sale and settling its commission.
    "reconcile-commissions": {"task": "commissions.reconcile", "schedule": 60.0},
    # Idempotency-Key records of agent writes are kept a day (agent_api.services.IDEMPOTENCY_RETENTION).
    "purge-agent-idempotency-records": {"task": "agent_api.purge_idempotency_records", "schedule": 3600.0},
    "purge-request-log": {"task": "programs.purge_request_log", "schedule": 3600.0},
}

# --- Rollups (tracking.rollups) ------------------------------------------------------------------
# Seconds between rollup runs: how stale a report may be about changes to events already counted (a settled
# lead, a refund, a void). New events are always counted at once (the reads add them live).
ROLLUP_INTERVAL_SECONDS = env_int("ROLLUP_INTERVAL_SECONDS", 60, minimum=1)
# An event is folded in only once it is this old, so that a transaction still open is not passed by.
ROLLUP_SETTLE_SECONDS = env_int("ROLLUP_SETTLE_SECONDS", 30)
# Raw clicks older than this many days are dropped daily (0: kept forever); the rollups keep their totals.
RAW_CLICK_RETENTION_DAYS = env_int("RAW_CLICK_RETENTION_DAYS", 0)
# Stripe payouts whose transfer was never sent or never recorded (a lost task, a crash): settled or sent again.
CELERY_BEAT_SCHEDULE["reconcile-payouts"] = {"task": "payouts.reconcile", "schedule": 300.0}
# Programs whose payout minimum is marked automatic are paid without an owner confirming, once a day.
CELERY_BEAT_SCHEDULE["scheduled-payout-runs"] = {"task": "payouts.scheduled_runs", "schedule": 86400.0}
# Import uploads never confirmed lose their files after a week (imports.engine.unconfirmed_uploads_prune).
CELERY_BEAT_SCHEDULE["prune-import-uploads"] = {"task": "imports.prune_uploads", "schedule": 86400.0}
# Every invariant of the money records, daily; the result is on readiness and in the admin (docs/integrity.md).
CELERY_BEAT_SCHEDULE["verify-integrity"] = {"task": "core.verify_integrity", "schedule": 86400.0}
# Tier rules and milestone bonuses (tiers.moves, tiers.milestones): judged hourly, once per partner and period.
CELERY_BEAT_SCHEDULE["groups-apply-tiers"] = {"task": "groups.apply_tiers", "schedule": 3600.0}
CELERY_BEAT_SCHEDULE["groups-award-bonuses"] = {"task": "groups.award_bonuses", "schedule": 3600.0}
# Billing events whose processing task was lost (a broker outage when they arrived): queued again.
CELERY_BEAT_SCHEDULE["billing-sweep-events"] = {"task": "billing.sweep_events", "schedule": 60.0}
CELERY_BEAT_SCHEDULE["update-rollups"] = {
    "task": "tracking.update_rollups",
    "schedule": float(ROLLUP_INTERVAL_SECONDS),
}
if RAW_CLICK_RETENTION_DAYS:
    CELERY_BEAT_SCHEDULE["prune-raw-clicks"] = {"task": "tracking.prune_clicks", "schedule": 86400.0}

# --- Outbound webhooks (webhooks; docs/webhooks.md) -----------------------------------------------
# Seconds a receiver has to answer one delivery attempt.
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 15, minimum=1)
# Seconds between a delivery's attempts after each failure (jittered by a fifth): 5 s, 5 min, 30 min, 2 h, 5 h,
# 10 h, 14 h, 20 h, 24 h, about three days in all. After the last, the delivery has failed.
WEBHOOK_RETRY_SCHEDULE = env.list(
    "WEBHOOK_RETRY_SCHEDULE", cast=int, default=[5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
)
# The longest wait a receiver's Retry-After may ask for.
WEBHOOK_RETRY_AFTER_MAX_SECONDS = env_int("WEBHOOK_RETRY_AFTER_MAX_SECONDS", 86400, minimum=1)
# An endpoint whose every attempt has failed for this long is disabled, and the workspace's owners are told.
WEBHOOK_DISABLE_AFTER_HOURS = env_int("WEBHOOK_DISABLE_AFTER_HOURS", 72, minimum=1)
# How long a rotated-out secret still signs (a second signature), so receivers can switch.
WEBHOOK_ROTATION_OVERLAP_HOURS = env_int("WEBHOOK_ROTATION_OVERLAP_HOURS", 24, minimum=0)
# Self-hosted networks: let endpoints be private, loopback or link-local addresses.
WEBHOOK_ALLOW_PRIVATE_URLS = env_bool("WEBHOOK_ALLOW_PRIVATE_URLS", default=False)
# Seconds between sweeps: they fan out the events no endpoint was known to want when they were written (in
# batches) and those a broker outage held back, and send the retries that are due.
WEBHOOK_SWEEP_SECONDS = env_int("WEBHOOK_SWEEP_SECONDS", 2, minimum=1)
# The most delivery messages the webhook queue holds: a sweep (or a fan-out) queues due deliveries only into the
# room left below it, so a backlog waits in the database, not in the broker.
WEBHOOK_QUEUE_MAX = env_int("WEBHOOK_QUEUE_MAX", 1000, minimum=1)
# The longest a queued delivery is claimed (after its countdown): as long as the queue ahead takes to drain at 5 a
# second, at least WEBHOOK_RECEIVED_CLAIM_SECONDS. No sweep queues it again meanwhile. A message the broker lost in
# transit is queued again once its claim runs out (a Redis that comes back empty ends every claim at once:
# webhooks/dispatch.py).
WEBHOOK_QUEUE_CLAIM_SECONDS = env_int("WEBHOOK_QUEUE_CLAIM_SECONDS", 300, minimum=1)
# Once a worker has received the message, the claim runs this long past when it is due: a worker killed holding
# messages (prefetched, or waiting for a countdown) leaves them to the sweep this soon.
WEBHOOK_RECEIVED_CLAIM_SECONDS = env_int("WEBHOOK_RECEIVED_CLAIM_SECONDS", 30, minimum=1)
# Seconds a server process keeps whether a program has an enabled endpoint (0: asks every time). An event of a
# program with one is fanned out at once; the others wait for the sweep. Endpoint changes clear the answer in the
# process that made them; other processes may send a new endpoint's first events up to this long plus a sweep late.
WEBHOOK_ENDPOINT_CACHE_SECONDS = env_int("WEBHOOK_ENDPOINT_CACHE_SECONDS", 5)
# How long each process keeps a program's fraud rules (fraud.config); a change reaches other processes within it.
FRAUD_RULES_CACHE_SECONDS = env_int("FRAUD_RULES_CACHE_SECONDS", 5)
# Days events, deliveries and their log are kept (svc listen, the delivery log, resends).
WEBHOOK_EVENT_RETENTION_DAYS = env_int("WEBHOOK_EVENT_RETENTION_DAYS", 30, minimum=1)
CELERY_BEAT_SCHEDULE["webhooks-sweep"] = {"task": "webhooks.sweep", "schedule": float(WEBHOOK_SWEEP_SECONDS)}
CELERY_BEAT_SCHEDULE["webhooks-prune-events"] = {"task": "webhooks.prune_events", "schedule": 3600.0}
# EMAIL_URL (smtp+tls://user:password@smtp.example.com:587) sets the backend and its server; unset: printed.
if env.str("EMAIL_URL", default=""):
    vars().update(env.email_url("EMAIL_URL"))
else:
    EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="svc@localhost")

# --- Request log (programs.calllog) ----------------------------------------------------------------
# Days a program API call stays in the log, and the most rows kept per program (the newest).
REQUEST_LOG_RETENTION_DAYS = env_int("REQUEST_LOG_RETENTION_DAYS", 14)
REQUEST_LOG_MAX_ROWS = env_int("REQUEST_LOG_MAX_ROWS", 10_000)
# Rows are written in batches of this many, or after this many seconds (1: each row at once).
REQUEST_LOG_BATCH = env_int("REQUEST_LOG_BATCH", 50)
REQUEST_LOG_FLUSH_SECONDS = env_float("REQUEST_LOG_FLUSH_SECONDS", 1.0)

# --- Rate limits, proxies ----------------------------------------------------------------------
RATELIMIT_USE_CACHE = "ratelimit"
RATELIMIT_ENABLE = env_bool("RATELIMIT_ENABLE", default=True)
# Multiplies every limit of the spec's table; benchmarks raise it so limiting stays on but never trips.
RATELIMIT_SCALE = env_float("RATELIMIT_SCALE", 1.0)
# Failed sign-ins per account, whatever the client address (core/sign_in_lock.py; the portal's by email, the
# dashboard's and the admin's by username): the failure that makes SIGN_IN_LOCK_FAILURES within
# SIGN_IN_LOCK_WINDOW_SECONDS locks the account for SIGN_IN_LOCK_SECONDS, the right password refused too. Unknown
# emails and usernames are counted alike. Counted per instance unless RATELIMIT_SHARED=true.
SIGN_IN_LOCK_FAILURES = env_int("SIGN_IN_LOCK_FAILURES", 10, minimum=1)
SIGN_IN_LOCK_WINDOW_SECONDS = env_int("SIGN_IN_LOCK_WINDOW_SECONDS", 900, minimum=1)
SIGN_IN_LOCK_SECONDS = env_int("SIGN_IN_LOCK_SECONDS", 900, minimum=1)
# Seconds a server process keeps a referral link's routing facts (see tracking/link_cache.py).
LINK_CACHE_SECONDS = env_int("LINK_CACHE_SECONDS", 5)
# How long a new visitor's click, whose INSERT checks the link's row, may use cached link facts, and the bound on
# cached links per process.
LINK_CACHE_VERIFIED_SECONDS = env_int("LINK_CACHE_VERIFIED_SECONDS", 600)
LINK_CACHE_MAX_ENTRIES = env_int("LINK_CACHE_MAX_ENTRIES", 100_000)
# Serves GET /bench/trivial, the baseline `make bench` compares against.
BENCH_TRIVIAL_ENDPOINT = env_bool("BENCH_TRIVIAL_ENDPOINT", default=False)
# How many reverse proxies we trust to append to X-Forwarded-For. 0: use REMOTE_ADDR only.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# First-party mode (tracking/api/first_party.py): the Domain of the svc_click_id cookie the service sets through the
# shop's proxy (e.g. example.com, so www. and the apex share it; comma-separated for several shops), used when the
# shop's host is under it. Empty: a host-only cookie.
FIRST_PARTY_COOKIE_DOMAIN = env.str("FIRST_PARTY_COOKIE_DOMAIN", default="")
SILENCED_SYSTEM_CHECKS = [
    # Local memory (a lone process, and tests) is deliberate: the spec counts per instance. The SQLite counter
    # cache and Django's own Redis cache are atomic but not on django-ratelimit's list.
    "django_ratelimit.E003",
    "django_ratelimit.W001",
]

# --- REST framework, OpenAPI, CORS ---------------------------------------------------------
# Largest request body, in bytes: 413 above it (core.middleware.RequestLimitsMiddleware), also for chunked bodies.
# 2.5 MiB, Django's default, is far above any tracking body (a sale with a hundred line items is about 20 KB).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# The one page that takes files: the dashboard's Import page (another platform's exports, docs/import.md). Its
# uploads may reach IMPORT_UPLOAD_MAX_BYTES together; its POST body may be that plus the form's own fields.
IMPORT_UPLOAD_MAX_BYTES = env_int("IMPORT_UPLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
# The most values (JSON values, CSV fields) one import reads, all files together: a read holds each as a Python
# object, ~35-150 bytes apiece at its peak, so this bounds its memory where bytes alone do not (50 MB of "{}," is 17
# million dicts). Real exports run ~25 bytes of JSON a value: 50 MB of one is about 2 million.
IMPORT_MAX_VALUES = env_int("IMPORT_MAX_VALUES", 2_500_000, minimum=1000)
LARGE_BODY_PATHS = ((r"/programs/\d+/import", IMPORT_UPLOAD_MAX_BYTES + 1024 * 1024),)
REST_FRAMEWORK = {
    "EXCEPTION_HANDLER": "core.api.handler.api_exception_handler",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Refuses deep nesting, NaN, duplicate keys and text PostgreSQL cannot store (see the module).
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.StrictJSONParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.ApiAutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Affiliate tracking service",
    "DESCRIPTION": "Click, lead, sale and refund tracking. Amounts are integers in the smallest currency unit.",
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "GET_LIB_DOC_EXCLUDES": "core.api.schema.lib_doc_excludes",
    "ENUM_NAME_OVERRIDES": {
        "CommissionTypeEnum": "programs.models.CommissionType",
        "LeadAuthEnum": "programs.models.LeadAuth",
        # The one-value discriminators of the agent and dashboard events lists and the attribution explanation.
        "SaleKindEnum": [("sale", "sale")],
        "LeadKindEnum": [("lead", "lead")],
        "ClickKindEnum": [("click", "click")],
        # Fraud rules: one name per choice set wherever a field takes it (rule, hold_rule, flagged, flags).
        "FraudRuleEnum": "fraud.rules.Rule",
        "FraudActionEnum": "fraud.rules.Action",
        "ClickTrafficEnum": "fraud.rules.Traffic",
        "CommissionReviewActionEnum": "commissions.models.CommissionReview.Action",
        # A commission's state: the agent commission list, detail and filter share one name.
        "AgentCommissionStatusEnum": "commissions.models.CommissionStatus",
        "FlaggedClickKindEnum": [(kind, kind) for kind in ("duplicate", "bot", "prefetch", "paid_ads")],
        # A group's customer discount: the agent API's groups and the tracker's discount share the names.
        "DiscountTypeEnum": "groups.models.DiscountType",
        "DiscountDurationEnum": "groups.models.DiscountDuration",
        # A bonus's period (month, quarter, lifetime) and a tier rule's (calendar month or quarter); one currency name.
        "GroupPeriodEnum": "groups.models.Period",
        "TierPeriodEnum": "agent_api.api.groups.serializers.CALENDAR_PERIODS",
        "CurrencyEnum": "core.currency.Currency",
        # A commission earned by a sale or a milestone bonus (the agent commission list and detail).
        "CommissionKindEnum": "commissions.models.CommissionKind",
    },
}
# The tracker runs on every program's own site, so its routes answer any origin.
CORS_URLS_REGEX = r"^/(api/v1/track/|js/).*$"
CORS_ALLOW_ALL_ORIGINS = True
CORS_ALLOW_HEADERS = ["authorization", "content-type", "x-request-id"]
CORS_EXPOSE_HEADERS = ["X-Request-ID", *ratelimit.HEADER_NAMES]

# --- Auth, sessions --------------------------------------------------------------------------
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG

# --- Static, i18n ----------------------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Logging: stable event names, the request id on every line, never a key ------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.logging.RequestIdFilter"}},
    "formatters": {
        # Keys, tokens and emails never reach a log line (core.redaction).
        "plain": {
            "()": "core.logging.RedactingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # Django's own handlers (its console under DEBUG, runserver's request lines with their query string) would
        # write past the redaction; its records go through the one handler above instead.
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # httpx writes a line for every request the worker sends; each delivery's attempt is already in the
        # delivery log, and a line per webhook is the worker's busiest output under a backlog.
        "httpx": {"level": "WARNING"},
    },
}

# --- Stripe (connected accounts) ------------------------------------------------------------
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_CLIENT_ID = env.str("STRIPE_CLIENT_ID", default="")
# Payouts (docs/payouts.md): the signing secrets of the Connect endpoint (account.updated) and the Account endpoint
# (transfer.*) pointed at /api/payouts/stripe/webhook, comma-separated.
STRIPE_PAYOUTS_WEBHOOK_SECRETS = env.list("STRIPE_PAYOUTS_WEBHOOK_SECRETS", default=[])
# Where every Stripe call of the process goes: unset in production (api.stripe.com); a Stripe-compatible server for
# local development or tests (stripe-mock, tests/stripe_fake).
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="")

# Fast hashing in tests only; the test runner sets this.
if env_bool("FAST_PASSWORD_HASHER", default=False):
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# --- CLI login (svc login) ------------------------------------------------------------------
# An OIDC provider whose ID tokens the CLI login callback accepts (all three, or none). The short-lived tokens
# this service's own sign-in issues (the /cli/login confirmation page) are accepted either way; see cli_api/tokens.py.
OIDC_ISSUER = env.str("OIDC_ISSUER", default="")
OIDC_AUDIENCE = env.str("OIDC_AUDIENCE", default="")
OIDC_JWKS_URL = env.str("OIDC_JWKS_URL", default="")
if any((OIDC_ISSUER, OIDC_AUDIENCE, OIDC_JWKS_URL)) and not all((OIDC_ISSUER, OIDC_AUDIENCE, OIDC_JWKS_URL)):
    raise ImproperlyConfigured("OIDC_ISSUER, OIDC_AUDIENCE and OIDC_JWKS_URL are set together or not at all")
# Days a login token from `svc login` stays valid (it can be revoked earlier).
CLI_TOKEN_LIFETIME_DAYS = env_int("CLI_TOKEN_LIFETIME_DAYS", 30, minimum=1)
