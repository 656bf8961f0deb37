"""Django's PostgreSQL backend with a health check that costs no round trip.

CONN_HEALTH_CHECKS makes Django check a reused connection once per request; the stock check runs `SELECT 1`, one
round trip on every request, which on the click path cost as much as the link lookup. A server that ends an idle
session (a restart, pg_terminate_backend, idle_session_timeout) sends its FATAL message and closes the socket, so
the socket turns readable while the connection is idle: a zero-timeout poll sees it without asking the server. Only
then is the stock `SELECT 1` run, which fails and makes Django reconnect. An idle connection whose socket is quiet
answers as before."""

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper
from psycopg import pq


def _socket_quiet(fileno: int) -> bool:
    poller = select.poll()
    poller.register(fileno, select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP)
    return not poller.poll(0)


class DatabaseWrapper(PostgresDatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        if connection.info.transaction_status != pq.TransactionStatus.IDLE:
            return super().is_usable()  # mid-transaction or unknown: let the server say
        try:
            quiet = _socket_quiet(connection.pgconn.socket)
        except (OSError, ValueError):
            return False
        return quiet or super().is_usable()
