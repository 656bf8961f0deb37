"""A TCP proxy in front of a server of the test's (Redis), to give the service the two kinds of outage a network
gives: refused (nothing listens: every connect fails at once) and hanging (connections are accepted, and neither
they nor those already open ever answer again, as with a host that drops packets). `forward()` ends either."""

import select
import socket
import threading
from contextlib import suppress

from tests.gunicorn import free_port

FORWARD, REFUSE, HANG = "forward", "refuse", "hang"


class FaultProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.mode = FORWARD
        self._listener: socket.socket | None = None
        self._pairs: list[tuple[socket.socket, socket.socket | None]] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def start(self) -> None:
        self._listen()
        threading.Thread(target=self._pump, daemon=True).start()

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(256)
        listener.setblocking(False)
        self._listener = listener

    def refuse(self) -> None:
        """Nothing listens and every open connection is closed: a stopped Redis."""
        with self._lock:
            self.mode = REFUSE
            if self._listener is not None:
                self._listener.close()
                self._listener = None
            self._close_all()

    def hang(self) -> None:
        """Connections are accepted and nothing is answered, on new ones or on those already open."""
        with self._lock:
            if self._listener is None:
                self._listen()
            self.mode = HANG

    def forward(self) -> None:
        """Back to normal. Connections that hung are closed (as the clients' timeouts would have them), so what
        they held is not answered late."""
        with self._lock:
            if self._listener is None:
                self._listen()
            if self.mode == HANG:
                self._close_all()
            self.mode = FORWARD

    def _close_all(self) -> None:
        """Closes every connection (the caller holds the lock)."""
        for pair in self._pairs:
            for end in pair:
                if end is not None:
                    with suppress(OSError):
                        end.close()
        self._pairs = []

    def stop(self) -> None:
        self._stopped.set()
        self.refuse()

    def _pump(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                listener = self._listener
                pairs = list(self._pairs)
            sockets = [end for pair in pairs for end in pair if end is not None]
            readable = [listener, *sockets] if listener is not None else sockets
            if not readable:
                self._stopped.wait(0.05)
                continue
            try:
                ready, _, _ = select.select(readable, [], [], 0.05)
            except (OSError, ValueError):
                continue  # a socket closed by refuse() or forward() meanwhile
            for sock in ready:
                if sock is listener:
                    self._accept(listener)
                else:
                    self._relay(sock)

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream: socket.socket | None = None
        if self.mode == FORWARD:
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
            except OSError:
                client.close()
                return
        with self._lock:
            self._pairs.append((client, upstream))

    def _relay(self, sock: socket.socket) -> None:
        with self._lock:
            pair = next((pair for pair in self._pairs if sock in pair), None)
        if pair is None:
            return
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if self.mode == HANG:
            if not data:
                self._drop(pair)
            return  # swallowed: nothing is ever answered
        other = pair[1] if sock is pair[0] else pair[0]
        if not data or other is None:
            self._drop(pair)
            return
        try:
            other.sendall(data)
        except OSError:
            self._drop(pair)

    def _drop(self, pair: tuple[socket.socket, socket.socket | None]) -> None:
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)
        for end in pair:
            if end is not None:
                with suppress(OSError):
                    end.close()
