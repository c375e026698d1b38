"""Redis failures for tests, never the machine's shared Redis.

A stopped Redis is a loopback port nothing listens on (the `closed_port` fixture). A Redis
that accepts connections and never answers cannot be made from a real one on demand, so
`silent_redis` is a socket server that accepts and stays silent. A Redis that goes away
while in use is a real `redis-server` of the test's own, on a free port, stopped mid-test.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis

from devtools.waiting import wait_until
from fleetscope.lib.redis_settings import RedisTimeouts

# Short Redis timeouts for the tests, and the slack a promised bound gets on a shared machine.
TIMEOUTS = RedisTimeouts(connect_seconds=1.0, read_seconds=1.0)
MARGIN = 5.0


@dataclass
class SilentRedis:
    port: int
    accepted: list[socket.socket] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@contextmanager
def silent_redis() -> Iterator[SilentRedis]:
    """Accepts every connection, reads nothing, answers nothing, until the test ends."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    server = SilentRedis(listener.getsockname()[1])

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener was closed: the test is over
            server.accepted.append(conn)

    threading.Thread(target=accept, name="silent-redis", daemon=True).start()
    try:
        yield server
    finally:
        listener.close()
        for conn in server.accepted:
            conn.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class OwnRedis:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@contextmanager
def own_redis_server() -> Iterator[OwnRedis]:
    """A redis-server of this test's own: no persistence, loopback only."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    own = OwnRedis(process, port)
    try:
        client = redis.Redis(port=port, socket_timeout=1, socket_connect_timeout=1)

        def answers() -> bool | None:
            try:
                return bool(client.ping()) or None
            except redis.RedisError:
                return None

        wait_until(answers, timeout=15, what=f"redis-server on port {port}")
        client.close()
        yield own
    finally:
        own.stop()
