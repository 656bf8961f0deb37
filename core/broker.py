"""The Redis broker transport, with a guard against a kombu bug that stops a worker when Redis drops
(kombu 5.7.0, the latest release; celery 5.7.0, redis-py 8.1.0).

When Redis goes away, celery's consumer closes the broken connection twice: `collect()`, then `close()`. If the
task channel is still waiting for its BRPOP reply, kombu's `Channel.close()` first reads that reply, which raises,
and the channel stays open; closing the next channel (the remote-control one) fails as well, and `collect()` then
detaches the transport from its connection (`transport.client = None`). The `close()` that follows closes the task
channel for real and restores its unacknowledged messages. That needs a new connection pool, whose parameters
kombu reads from `transport.client`: AttributeError("'NoneType' object has no attribute 'hostname'"). It is not a
connection error, so celery's reconnect loop does not catch it: "Unrecoverable error", and the worker exits.
Whether it happens depends on which socket the event loop reads first when Redis goes away; it happened in about one
outage in four while the worker held messages (running, prefetched or waiting for their countdown).

Two small changes in the transport:
- a channel whose transport was detached raises a connection error when it needs a connection, so every caller's
  connection-error handling applies and the worker reconnects as it does after any other outage;
- messages whose restore failed because Redis was down are restored by the next channel the process opens, once
  Redis answers again. kombu would otherwise leave them in its unacked set until the visibility timeout (an hour)
  brings them back. Restoring a message is one Redis transaction that does nothing when the message was
  acknowledged or restored meanwhile (by this worker or another), so none is queued twice. As after any restore,
  a task that was running when Redis went away runs again (tasks are acknowledged late; core/tasks.py).
"""

import logging
from typing import Any, cast

from celery import beat
from celery.worker.consumer import consumer as celery_consumer
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

from .logging import outage_log

# What kombu's Redis transport takes for a lost connection.
CONNECTION_ERRORS = kombu_redis.get_redis_error_classes().connection_errors
# Delivery tags of messages this process failed to restore because the broker was unreachable.
_unrestored_tags: set[str] = set()


class QoS(kombu_redis.QoS):
    def restore_unacked(self, client: Any = None) -> None:
        tags = set(self._delivered or ())
        try:
            super().restore_unacked(client)
        except CONNECTION_ERRORS:
            _unrestored_tags.update(tags)
            raise


class Channel(kombu_redis.Channel):
    QoS = QoS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # pings Redis: it answers
        self._restore_unrestored()

    def _restore_unrestored(self) -> None:
        qos = cast(QoS, self.qos)
        for tag in list(_unrestored_tags):
            try:
                qos.restore_by_tag(tag)
            except CONNECTION_ERRORS:
                return  # Redis went away again: the next channel tries
            _unrestored_tags.discard(tag)

    # kombu-stubs leave the private method out.
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise RedisConnectionError("the broker connection of this channel is closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]
        return params


class RedisTransport(kombu_redis.Transport):
    Channel = Channel


# --- Reconnecting ------------------------------------------------------------------------------------------------
# celery's consumer reconnects with kombu's default backoff: 2 s more between tries each time, up to 30 s, so a
# worker whose Redis was away for a minute comes back up to half a minute after it; and it logs every try. The
# worker's consumer (CELERY_WORKER_CONSUMER) tries every RECONNECT_SECONDS instead, and says it once a minute.
RECONNECT_SECONDS = 1.0
logger = logging.getLogger("svc.worker")


class Consumer(celery_consumer.Consumer):
    def ensure_connected(self, conn: Any) -> Any:
        ensure = conn.ensure_connection

        def ensure_connection(errback: Any = None, max_retries: Any = None, **options: Any) -> Any:
            def unreachable(error: BaseException, interval: float) -> None:
                outage_log(logger, "worker.broker_unreachable", error)

            options.update(interval_start=RECONNECT_SECONDS, interval_step=0, interval_max=RECONNECT_SECONDS)
            return ensure(unreachable, max_retries, **options)

        conn.ensure_connection = ensure_connection
        return super().ensure_connected(conn)


class Scheduler(beat.PersistentScheduler):
    """Beat's scheduler (CELERY_BEAT_SCHEDULER), which logs a send the broker refused once a minute, not every
    tick with a traceback: the next tick sends the task again, and the sweeps catch up on whatever waited."""

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        try:
            self.apply_async(entry, producer=producer, advance=False)
        except Exception as error:
            outage_log(logger, "beat.send_failed", error, task=entry.task)
