"""A redis-server of the test's own, for outages: killed (SIGKILL) and started again on the same port, as a crashed
or restarted Redis is. Every write is on disk before Redis answers it (appendfsync always), as a broker's queue must
be: a kill loses no message that Redis acknowledged."""

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.worker import wait_for


class RedisServer:
    def __init__(self, directory: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.client = redis.Redis(port=self.port, socket_timeout=2)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
        )
        assert wait_for(self._answers, timeout=10), "redis-server did not start"

    def _answers(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.ConnectionError:
            return False

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()
