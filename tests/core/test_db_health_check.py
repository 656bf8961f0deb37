"""The PostgreSQL backend's health check (core.db.postgresql): a quiet idle connection is judged usable without a
round trip; one the server ended is found dead and replaced before the request's first query."""

from unittest import mock

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.DATABASES["default"]["ENGINE"] != "core.db.postgresql", reason="PostgreSQL only"),
]


def _admin_url() -> str:
    database = settings.DATABASES["default"]
    user, host, port = database["USER"] or "postgres", database["HOST"] or "127.0.0.1", database["PORT"] or 5432
    return f"postgresql://{user}@{host}:{port}/postgres"


def test_a_quiet_idle_connection_is_usable_without_asking_the_server():
    connection.ensure_connection()
    with mock.patch.object(PostgresDatabaseWrapper, "is_usable", side_effect=AssertionError("SELECT 1 sent")):
        assert connection.is_usable()


def test_a_connection_the_server_ended_is_replaced_before_the_next_query():
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (old_pid,) = cursor.fetchone()
    with psycopg.connect(_admin_url(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [old_pid])
        # The server's FATAL notice reaches the socket once the backend has gone.
        admin.execute("SELECT pg_sleep(0.2)")
    assert not connection.is_usable()
    # What Django does at a request's first query with CONN_HEALTH_CHECKS on.
    connection.health_check_done = False
    connection.close_if_health_check_failed()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (new_pid,) = cursor.fetchone()
    assert new_pid != old_pid


def test_inside_a_transaction_the_server_is_asked():
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute("SELECT 1")
    try:
        with mock.patch.object(PostgresDatabaseWrapper, "is_usable", return_value=True) as stock_check:
            assert connection.is_usable()
        stock_check.assert_called_once()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ROLLBACK")
