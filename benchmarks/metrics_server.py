"""A minimal, fast HTTP/1.1 server of pre-built /metrics payloads, for scrape benchmarks.

Run as a separate process so serving does not share the scraper's CPU time
slice: `python benchmarks/metrics_server.py PAYLOAD_DIR PORT_COUNT`. It prints
its ports as one JSON line, then serves `GET /e/<i>/metrics` with replica shape
`i % shapes` until stdin closes. Each shape has two scrapes of the same replica
(`NN-a.prom`, `NN-b.prom`, 15 simulated seconds apart); successive requests for
one path alternate between them, so values change from cycle to cycle as on a
live replica while the series stay the same.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


def _response(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: " + CONTENT_TYPE + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )


def responses(payload_dir: Path) -> list[tuple[bytes, bytes]]:
    """(scrape a, scrape b) per replica shape."""
    shapes = sorted({path.name.split("-")[0] for path in payload_dir.glob("*.prom")})
    return [
        (
            _response((payload_dir / f"{shape}-a.prom").read_bytes()),
            _response((payload_dir / f"{shape}-b.prom").read_bytes()),
        )
        for shape in shapes
    ]


class MetricsProtocol(asyncio.Protocol):
    def __init__(self, bodies: list[tuple[bytes, bytes]], served: dict[int, int]) -> None:
        self.bodies = bodies
        self.served = served
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
            turn = self.served.get(index, 0)
            self.served[index] = turn + 1
            self.transport.write(self.bodies[index % len(self.bodies)][turn % 2])
        else:
            self.transport.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        self.transport.close()


async def main(payload_dir: Path, port_count: int) -> None:
    bodies = responses(payload_dir)
    served: dict[int, int] = {}
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(
            lambda: MetricsProtocol(bodies, served), "127.0.0.1", 0, backlog=4096
        )
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
