"""A minimal, fast HTTP/1.1 server of pre-built /metrics payloads, for scrape benchmarks.

Run as a separate process so serving does not share the scraper's CPU time
slice: `python benchmarks/metrics_server.py PAYLOAD_DIR PORT_COUNT`. It prints
its ports as one JSON line, then serves `GET /e/<i>/metrics` with payload
`i % len(payloads)` until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


def responses(payload_dir: Path) -> list[bytes]:
    out = []
    for path in sorted(payload_dir.glob("*.prom")):
        body = path.read_bytes()
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: " + CONTENT_TYPE + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
        )
        out.append(head + body)
    return out


class MetricsProtocol(asyncio.Protocol):
    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if b"\r\n\r\n" not in self.buffer or self.transport is None:
            return
        request_line = self.buffer.split(b"\r\n", 1)[0]
        parts = request_line.split(b" ")
        path = parts[1] if len(parts) > 1 else b""
        segments = path.split(b"/")
        if len(segments) == 4 and segments[1] == b"e" and segments[3] == b"metrics":
            index = int(segments[2])
            self.transport.write(self.bodies[index % len(self.bodies)])
        else:
            self.transport.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        self.transport.close()


async def main(payload_dir: Path, port_count: int) -> None:
    bodies = responses(payload_dir)
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(lambda: MetricsProtocol(bodies), "127.0.0.1", 0, backlog=4096)
        for _ in range(port_count)
    ]
    ports = [server.sockets[0].getsockname()[1] for server in servers]
    print(json.dumps({"ports": ports}), flush=True)
    # Serve until the parent closes our stdin.
    await loop.run_in_executor(None, sys.stdin.read)
    for server in servers:
        server.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
