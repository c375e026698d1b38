"""Misbehaving HTTP endpoints for scraper tests.

These stand in for failures a real vLLM replica (or fleetsim) cannot produce on
demand: HTML login pages, 200 MB bodies, gzip bombs, slow drips, redirects,
raw non-HTTP listeners. Each records the requests it received.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Responder = Callable[[BaseHTTPRequestHandler], object]  # what it returns is ignored


@dataclass
class BadServer:
    port: int
    requests: list[tuple[str, str]] = field(default_factory=list)

    def url(self, path: str = "/metrics") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def serving(respond: Responder) -> Iterator[BadServer]:
    record: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.append(("GET", self.path))
            # The scraper hangs up on purpose when a cap or the deadline trips.
            with suppress(BrokenPipeError, ConnectionResetError):
                respond(self)

        def do_POST(self) -> None:
            record.append(("POST", self.path))
            self.send_error(405)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield BadServer(server.server_address[1], record)
    finally:
        server.shutdown()
        server.server_close()


def send_body(
    handler: BaseHTTPRequestHandler,
    body: bytes,
    *,
    content_type: str = "text/plain; version=0.0.4; charset=utf-8",
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> None:
    handler.send_response(status)
    if content_type:
        handler.send_header("Content-Type", content_type)
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def json_answer(status: int, body: object) -> Responder:
    """An API answer: `body` as JSON with `status` (Prometheus' error shapes, say)."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        send_body(
            handler, json.dumps(body).encode(), content_type="application/json", status=status
        )

    return respond


def html_error_page(handler: BaseHTTPRequestHandler) -> None:
    """What a proxy in front of an API answers when the backend is gone: a 502 HTML page."""
    page = b"<html><body><script>alert(1)</script>502 Bad Gateway</body></html>"
    send_body(handler, page, content_type="text/html", status=502)


def stream_forever(handler: BaseHTTPRequestHandler, chunk: bytes, *, limit_bytes: int) -> None:
    """Chunked body of up to `limit_bytes`: enough to prove the cap, bounded so the test ends."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain; version=0.0.4")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    sent = 0
    while sent < limit_bytes:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        sent += len(chunk)
    handler.wfile.write(b"0\r\n\r\n")


def gzip_bomb(decompressed_bytes: int) -> bytes:
    """A small gzip body that inflates to `decompressed_bytes` of a valid-looking comment."""
    line = b"# " + b"x" * 1022 + b"\n"
    buffer = gzip.compress(line * (decompressed_bytes // len(line)), compresslevel=9)
    return buffer


@contextmanager
def raw_listener(greeting: bytes) -> Iterator[int]:
    """An open TCP port that speaks something other than HTTP, then closes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.sendall(greeting)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        sock.close()
