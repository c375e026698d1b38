"""The websocket clients, each a page keeping the overview's socket open, in a process
of their own."""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import sys
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field

from benchmarks.loadrun.child import say
from benchmarks.loadrun.publisher import push_stamp

PING_SECONDS = 60.0  # static/js/fleet_overview/live_updates.js
PUSH_GRACE_SECONDS = 10.0  # how long after the last publish a push may still arrive


def socket_clients() -> None:
    """The websocket clients, in a process of their own so that their work (inflating
    every push) does not hold up the page viewers' event loop. Reads the set-up (URL,
    origin, cookies) as one JSON line and answers when every client is connected; then
    reads the stamps of the measured period's pushes, waits for them (at most
    PUSH_GRACE_SECONDS), closes, and answers what each client received and the errors."""
    asyncio.run(_socket_clients())


@dataclass
class Sockets:
    """What every websocket client of the process shares."""

    url: str
    origin: str
    deflate: bool  # offer permessage-deflate, as browsers do
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    handshakes: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


async def _socket_clients() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    setup = json.loads(await reader.readline())
    shared = Sockets(setup["url"], setup["origin"], setup["deflate"])
    cookies: list[str] = setup["cookies"]
    received: list[set[str]] = [set() for _ in cookies]
    connected = [asyncio.Event() for _ in cookies]
    tasks = [
        asyncio.create_task(socket_client(shared, cookie, received[i], connected[i]))
        for i, cookie in enumerate(cookies)
    ]
    await asyncio.gather(*(c.wait() for c in connected))
    say({"connected": len(shared.handshakes)})
    wanted = set(json.loads(await reader.readline()))
    deadline = time.monotonic() + PUSH_GRACE_SECONDS
    while time.monotonic() < deadline and any(not wanted <= r for r in received):
        await asyncio.sleep(0.1)
    shared.closing.set()
    await asyncio.gather(*tasks)
    say({"received": [sorted(r) for r in received], "handshakes": shared.handshakes,
         "errors": dict(shared.errors)})  # fmt: skip


async def socket_client(
    shared: Sockets, cookie: str, received: set[str], connected: asyncio.Event
) -> None:
    """One page's socket: a ping every PING_SECONDS, the stamp of every push kept in
    `received`; a close before `shared.closing` is an error."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake
    from websockets.typing import Origin

    started = time.monotonic()
    try:
        ws = await connect(
            shared.url, origin=Origin(shared.origin), max_size=None, proxy=None,
            additional_headers={"Cookie": f"sessionid={cookie}"}, open_timeout=30,
            compression="deflate" if shared.deflate else None,
        )  # fmt: skip
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        shared.errors[f"websocket handshake {type(exc).__name__}"] += 1
        connected.set()
        return
    shared.handshakes.append(time.monotonic() - started)
    connected.set()

    async def ping() -> None:
        await asyncio.sleep(random.uniform(0, PING_SECONDS))
        while True:
            await ws.send("ping")
            await asyncio.sleep(PING_SECONDS)

    async def listen() -> None:
        async for message in ws:
            text = message if isinstance(message, str) else gzip.decompress(message).decode()
            if (stamp := push_stamp(text)) is not None:
                received.add(stamp)

    tasks = [asyncio.create_task(ping()), asyncio.create_task(listen())]
    stop = asyncio.create_task(shared.closing.wait())
    await asyncio.wait([*tasks, stop], return_when=asyncio.FIRST_COMPLETED)
    if not shared.closing.is_set():
        shared.errors[f"websocket closed {ws.close_code}"] += 1
    for task in (*tasks, stop):
        task.cancel()
    await asyncio.gather(*tasks, stop, return_exceptions=True)
    with suppress(ConnectionClosed):
        await ws.close()  # the page closed, as a browser says so
