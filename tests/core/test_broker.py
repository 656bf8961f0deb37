"""core/broker.py on a Redis of the test's own, without a worker: the sequence a Celery worker's consumer goes through
when Redis drops while it holds a message and waits for the next one (BRPOP sent, no reply read). kombu's own
transport raises AttributeError("'NoneType' object has no attribute 'hostname'") out of `close()`, which stops the
worker (tests/core/test_worker_redis_outage.py has the worker)."""

from typing import Any

from kombu import Connection, Consumer, Exchange, Queue

from core.broker import RedisTransport
from tests.redis_server import RedisServer

QUEUE = Queue("broker-test", Exchange("broker-test"), routing_key="broker-test")
# Like the worker's remote-control queue: a fanout queue deleted when its channel closes.
CONTROL = Queue("broker-test.control", Exchange("broker-test.control", type="fanout"), auto_delete=True)


def test_a_connection_lost_mid_brpop_closes_cleanly_and_its_messages_come_back_with_redis(own_redis: RedisServer):
    connection = Connection(own_redis.url, transport=RedisTransport)
    connection.Producer().publish({"n": 1}, exchange=QUEUE.exchange, routing_key="broker-test", declare=[QUEUE])
    held = []
    Consumer(connection, [QUEUE], callbacks=[lambda body, message: held.append(message)]).consume()
    connection.drain_events(timeout=5)
    assert len(held) == 1 and own_redis.client.hlen("unacked") == 1  # taken, not acknowledged
    Consumer(connection.channel(), [CONTROL], callbacks=[lambda body, message: None]).consume()
    task_channel: Any = connection.default_channel
    task_channel._brpop_start()  # waiting for the next message, as in the worker's event loop

    own_redis.kill()
    # What celery's consumer does with a connection it lost (Consumer.on_connection_error_after_connected).
    connection.collect(socket_timeout=1)
    connection.close()

    own_redis.start()
    assert own_redis.client.hlen("unacked") == 1  # Redis was away: nothing could be restored
    back = Connection(own_redis.url, transport=RedisTransport)
    message = back.SimpleQueue(QUEUE.name).get(timeout=5)  # the first channel opened put it back
    assert message.payload == {"n": 1}
    message.ack()
    assert own_redis.client.hlen("unacked") == 0
    back.close()
