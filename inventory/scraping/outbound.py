"""The one place outbound HTTP clients are made.

FleetScope is read-only by construction: every outbound request goes through a
client built here, and a request hook refuses any method other than GET before
a byte leaves the process. Tests add observers to the same hook.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx
import requests

READ_ONLY_METHODS = frozenset({"GET"})

# Extra request hooks (method, url), for tests that record every request FleetScope makes.
REQUEST_OBSERVERS: list[Callable[[str, str], None]] = []


class WriteAttempted(RuntimeError):
    """Code tried to send a non-GET request; that is a bug, never a runtime condition."""


def _check(method: str, url: str) -> None:
    if method.upper() not in READ_ONLY_METHODS:
        raise WriteAttempted(f"FleetScope is read-only: refused {method} {url}")
    for observer in REQUEST_OBSERVERS:
        observer(method.upper(), url)


def _httpx_hook(request: httpx.Request) -> None:
    _check(request.method, str(request.url))


async def _aiohttp_hook(
    session: aiohttp.ClientSession,
    context: SimpleNamespace,
    params: aiohttp.TraceRequestStartParams,
) -> None:
    _check(params.method, str(params.url))


def sync_client(*, timeout_seconds: float) -> httpx.Client:
    """For the few synchronous reads (Prometheus API): httpx, no redirects, no env proxies."""
    return httpx.Client(
        timeout=httpx.Timeout(timeout_seconds),
        follow_redirects=False,
        event_hooks={"request": [_httpx_hook]},
        trust_env=False,
    )


class AnswerTooLarge(requests.RequestException):
    """A body past the session's cap: read no further, keep nothing."""


class _ReadOnlySession(requests.Session):
    """requests, for prometheus-api-client: the same GET-only check before anything is sent,
    no redirects followed, no proxies or credentials from the environment, and a cap on
    the body (its callers read `response.json()`, which would take any size)."""

    def __init__(self, max_body_bytes: int) -> None:
        super().__init__()
        self.trust_env = False
        self.max_redirects = 0
        self.max_body_bytes = max_body_bytes
        self.hooks["response"].append(self._read_capped)

    def _read_capped(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        # requests calls response hooks before it reads a non-streamed body, so the body is
        # read here, chunk by chunk, and stopped at the cap.
        chunks, size = [], 0
        for chunk in response.iter_content(64 * 1024):
            size += len(chunk)
            if size > self.max_body_bytes:
                response.close()
                raise AnswerTooLarge(f"answer exceeds {self.max_body_bytes // 2**20} MiB")
            chunks.append(chunk)
        # Where requests keeps a body it has read; .content and .json() use it as it is.
        response._content = b"".join(chunks)

    def request(
        self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any
    ) -> requests.Response:
        method_text = method.decode() if isinstance(method, bytes) else method
        url_text = url.decode() if isinstance(url, bytes) else url
        _check(method_text, url_text)
        kwargs["allow_redirects"] = False
        return super().request(method_text, url_text, *args, **kwargs)


def requests_session(*, max_body_bytes: int) -> requests.Session:
    """For prometheus-api-client (its `session=`): GET only, as every client made here,
    and no body over `max_body_bytes`."""
    return _ReadOnlySession(max_body_bytes)


def scrape_session(*, timeout_seconds: float, max_connections: int) -> aiohttp.ClientSession:
    """For scrapes: aiohttp, measured about 6x cheaper per request than httpx's async client
    (benchmarks/scrape_cycle.py). Bodies stay compressed so the scraper can cap inflation."""
    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(_aiohttp_hook)
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_connections, force_close=True),
        timeout=aiohttp.ClientTimeout(total=timeout_seconds),
        auto_decompress=False,
        trust_env=False,
        trace_configs=[trace],
        # Our own Accept/Accept-Encoding only; no cookies carried between endpoints.
        skip_auto_headers=("Accept-Encoding", "User-Agent"),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
