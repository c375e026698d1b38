"""Serving the fleet over HTTP: one loopback port per endpoint, GET /metrics only.

One thread accepts connections for every endpoint (so 16 replicas cost one idle
thread, not 34); each request is answered in its own short-lived thread.
"""

from __future__ import annotations

import gzip
import os
import selectors
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

# Loopback unless a container deployment asks for another bind address (docker-compose.yml).
HOST = os.environ.get("FLEETSIM_BIND", "127.0.0.1")
Render = Callable[[], tuple[bytes, str]]  # (body, content type)


class PortInUseError(OSError):
    pass


class MetricsHandler(BaseHTTPRequestHandler):
    server: MetricsServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self._reply(404, b"Not Found\n", "text/plain; charset=utf-8")
            return
        body, content_type = self.server.render()
        headers = {}
        if "gzip" in self.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, compresslevel=5)
            headers["Content-Encoding"] = "gzip"
        self._reply(200, body, content_type, headers)

    def _not_allowed(self) -> None:
        self._reply(405, b"Method Not Allowed\n", "text/plain; charset=utf-8", {"Allow": "GET"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed

    def _reply(
        self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # scrapes are frequent and uninteresting


class MetricsServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, render: Render) -> None:
        self.render = render
        self._connections: set[Any] = set()
        self._connections_lock = threading.Lock()
        try:
            super().__init__((HOST, port), MetricsHandler)
        except OSError as exc:
            raise PortInUseError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from exc

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the scraper hung up, or we cut the connection when the replica died
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        """Cut kept-alive connections too: a dead server answers nobody, not only new callers."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                continue  # already closed by its handler


def text_render(build: Callable[[], bytes]) -> Render:
    return lambda: (build(), CONTENT_TYPE_PLAIN_0_0_4)


class Listener:
    """Accepts connections for many servers from one thread; servers can come and go."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="fleetsim-accept", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, server: MetricsServer) -> None:
        server.timeout = 0.5  # never block the accept loop on a socket that went away
        self._selector.register(server.socket, selectors.EVENT_READ, server)
        self._wake()

    def remove(self, server: MetricsServer) -> None:
        self._selector.unregister(server.socket)
        self._wake()
        server.server_close()
        server.drop_connections()

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            return  # already stopped

    def _loop(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(timeout=None):
                server = key.data
                if server is None:
                    self._wake_r.recv(4096)
                elif server.socket.fileno() >= 0:  # not closed by a replica going down
                    try:
                        server.handle_request()
                    except (OSError, ValueError) as exc:  # closed while we were selecting
                        print(f"fleetsim: accept on {server.port} failed: {exc}", file=sys.stderr)
