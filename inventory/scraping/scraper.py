"""Safe scraping of /metrics endpoints: one GET, bounded in time, bytes, samples and labels.

Each target gets one total deadline (DNS + connect + headers + body). The body
cap counts decompressed bytes, so a gzip bomb stops at the cap. The address is
checked against the outbound policy after DNS resolution and the connection
goes to that checked address, so a name that re-resolves to a forbidden
address between registration and scrape (DNS rebinding) is still refused.
Errors are specific and never echo the remote body.

The deadline and the sample limit also cover parsing: the parser stops at the first
sample past the limit and once the deadline has passed. A scrape's label caches are
kept only when it succeeds, caches of URLs no longer scraped are dropped
(`drop_caches`, `retain`), and a failed outcome holds neither the body nor the
frames that read it (its error carries no traceback).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from inventory.exposition import (
    ExpositionError,
    Family,
    LabelCache,
    ParseBudget,
    ParseDeadlineExceeded,
    SampleLimitExceeded,
    parse,
)
from inventory.scraping.outbound import scrape_session
from inventory.scraping.policy import BlockedByPolicy, OutboundPolicy, policy_refusal
from inventory.snapshot import InventorySnapshot, inventory_snapshot
from inventory.store import EncodedFrame, LayoutMemo, frame_encode

ACCEPT = "text/plain; version=0.0.4; q=1.0, */*; q=0.1"
METRICS_CONTENT_TYPES = ("text/plain", "application/openmetrics-text")


@dataclass(frozen=True)
class ScrapeLimits:
    """Per-target limits; Prometheus has the same knobs but leaves them off by default."""

    timeout_seconds: float = 10.0
    body_bytes: int = 16 * 1024 * 1024
    samples: int = 200_000
    labels_per_series: int = 64
    label_name_bytes: int = 256
    label_value_bytes: int = 4096


class ErrorKind(StrEnum):
    BLOCKED = "blocked"
    DNS = "dns"
    REFUSED = "refused"
    TIMEOUT = "timeout"
    TLS = "tls"
    CONNECTION = "connection"
    REDIRECT = "redirect"
    HTTP_STATUS = "http_status"
    NOT_METRICS = "not_metrics"
    TOO_LARGE = "too_large"
    TOO_MANY_SAMPLES = "too_many_samples"
    LABEL_LIMIT = "label_limit"
    PARSE_ERROR = "parse_error"


class ScrapeFailed(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def released(self) -> ScrapeFailed:
        """This error without its traceback and chained exceptions: kept in an outcome,
        they would hold the frames that read the body (and the body) alive."""
        self.__traceback__ = None
        self.__context__ = None
        self.__cause__ = None
        return self

    def __reduce__(self) -> tuple[type[ScrapeFailed], tuple[ErrorKind, str]]:
        # Outcomes cross process boundaries (scraping.pool); keep both fields.
        return (ScrapeFailed, (self.kind, self.message))


@dataclass
class ScrapeOutcome:
    """What one scrape produced, compact and picklable: encoded values, or the reason.

    Parsed families are dropped right after the scrape. Only when the series
    layout differs from what this scraper last reported for the URL does the
    outcome carry the encoded layout and the inventory snapshot built from the
    families, so a cycle of many endpoints holds little memory and crosses
    process boundaries cheaply.
    """

    url: str
    started_at: datetime
    duration_seconds: float = 0.0
    body_bytes: int = 0
    sample_count: int = 0
    error: ScrapeFailed | None = None
    frame: EncodedFrame | None = None
    inventory: InventorySnapshot | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


Resolver = Callable[[str, int], Sequence[str]]


@dataclass
class Scraper:
    """Scrapes many targets concurrently with one shared client per cycle."""

    policy: OutboundPolicy
    limits: ScrapeLimits = field(default_factory=ScrapeLimits)
    concurrency: int = 64
    resolver: Resolver | None = None
    # The deadline's clock while parsing (the fetch runs under asyncio's own).
    clock: Callable[[], float] = time.monotonic
    # Label text parsed on earlier cycles, per URL: the parser's warm path. Only
    # successful scrapes leave an entry (a failed one drops its URL's).
    label_caches: dict[str, LabelCache] = field(default_factory=dict)
    # Label sets already checked against the limits, per URL. Holding the objects
    # keeps their ids from being reused, so an id seen here is the same set.
    checked_labels: dict[str, dict[int, Mapping[str, str]]] = field(default_factory=dict)
    layouts: LayoutMemo = field(default_factory=LayoutMemo)
    # URLs with a layout in `layouts` (the memo cannot list them).
    _laid_out: set[str] = field(default_factory=set, init=False, repr=False)

    def forget_layouts(self, urls: Iterable[str]) -> None:
        """Report these URLs' layouts again next time (the receiver lost them)."""
        for url in urls:
            self.layouts.forget(url)
            self._laid_out.discard(url)

    def cached_urls(self) -> set[str]:
        """The URLs this scraper holds anything for."""
        return set(self.label_caches) | set(self.checked_labels) | self._laid_out

    def drop_caches(self, urls: Iterable[str]) -> None:
        """Forget everything kept for these URLs (disabled or deleted endpoints)."""
        for url in urls:
            self.label_caches.pop(url, None)
            self.checked_labels.pop(url, None)
        self.forget_layouts(urls)

    def retain(self, urls: Iterable[str]) -> None:
        """Drop the caches of every URL but these (the ones still scraped)."""
        self.drop_caches(self.cached_urls().difference(urls))

    async def scrape_many(self, urls: Sequence[str]) -> list[ScrapeOutcome]:
        gate = asyncio.Semaphore(self.concurrency)
        async with scrape_session(
            timeout_seconds=self.limits.timeout_seconds, max_connections=self.concurrency
        ) as session:

            async def one(url: str) -> ScrapeOutcome:
                async with gate:
                    return await self.scrape(session, url)

            return list(await asyncio.gather(*(one(url) for url in urls)))

    async def scrape(self, session: aiohttp.ClientSession, url: str) -> ScrapeOutcome:
        outcome = ScrapeOutcome(url=url, started_at=datetime.now(UTC))
        started = time.perf_counter()
        # One deadline for fetch and parse: asyncio's for the fetch, this for the parse.
        deadline = self.clock() + self.limits.timeout_seconds
        parsing = False
        try:
            async with asyncio.timeout(self.limits.timeout_seconds):
                body, content_type = await self._fetch(session, url)
            outcome.body_bytes = len(body)
            parsing = True
            known = self.label_caches.get(url)
            cache = LabelCache() if known is None else known
            families = self._parse(body, content_type, cache, deadline)
            del body
            checked = self.checked_labels.get(url, {})
            outcome.sample_count = check_limits(families, self.limits, checked)
            self._compact(outcome, families)
            del families
            # Kept only now: a failed scrape leaves no cache behind.
            self.label_caches[url] = cache
            self.checked_labels[url] = checked
            self._laid_out.add(url)
        except ScrapeFailed as exc:
            outcome.error = exc.released()
        except TimeoutError:
            outcome.error = ScrapeFailed(
                ErrorKind.TIMEOUT, f"no complete response within {self.limits.timeout_seconds:g}s"
            )
        if outcome.error is not None and parsing:
            # The parse may have filled the URL's caches with what failed: drop them.
            self.label_caches.pop(url, None)
            self.checked_labels.pop(url, None)
        outcome.duration_seconds = time.perf_counter() - started
        return outcome

    async def _fetch(self, session: aiohttp.ClientSession, url: str) -> tuple[bytes, str]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = await self._checked_address(host, port)
        netloc = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        # Connect to the address just checked, naming the host for HTTP and TLS.
        target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        try:
            async with session.get(
                target,
                headers={"Host": parts.netloc, "Accept": ACCEPT, "Accept-Encoding": "gzip"},
                allow_redirects=False,
                server_hostname=host if parts.scheme == "https" else None,
            ) as response:
                _check_response_head(response.status, response.headers)
                body = await _read_capped(response, self.limits.body_bytes)
                return body, response.headers.get("Content-Type", "")
        except aiohttp.ClientError as exc:
            raise _client_failure(exc) from None
        except ssl.SSLError:
            raise ScrapeFailed(ErrorKind.TLS, "TLS handshake failed") from None

    async def _checked_address(self, host: str, port: int) -> str:
        try:
            literal = self.policy.check_literal(host)
        except BlockedByPolicy as exc:
            raise ScrapeFailed(ErrorKind.BLOCKED, policy_refusal(exc)) from None
        if literal is not None:
            return literal
        try:
            if self.resolver is not None:
                addresses = list(self.resolver(host, port))
            else:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM
                )
                addresses = [str(info[4][0]) for info in infos]
        except OSError:
            # Fail closed: no address, no request.
            raise ScrapeFailed(ErrorKind.DNS, f"cannot resolve host {host!r}") from None
        if not addresses:
            raise ScrapeFailed(ErrorKind.DNS, f"host {host!r} has no addresses")
        try:
            for address in addresses:
                self.policy.check_address(address, host)
        except BlockedByPolicy as exc:
            raise ScrapeFailed(ErrorKind.BLOCKED, policy_refusal(exc)) from None
        return addresses[0]

    def _compact(self, outcome: ScrapeOutcome, families: list[Family]) -> None:
        outcome.frame = frame_encode(outcome.url, families, self.layouts)
        if outcome.frame.layout_blob is not None:
            outcome.inventory = inventory_snapshot(families)

    def _parse(
        self, body: bytes, content_type: str, cache: LabelCache, deadline: float
    ) -> list[Family]:
        openmetrics = content_type.startswith("application/openmetrics-text")
        budget = ParseBudget(max_samples=self.limits.samples, deadline=deadline, clock=self.clock)
        try:
            return parse(body, openmetrics=openmetrics, cache=cache, budget=budget)
        except SampleLimitExceeded:
            raise ScrapeFailed(
                ErrorKind.TOO_MANY_SAMPLES,
                f"more than {self.limits.samples} samples (sample limit)",
            ) from None
        except ParseDeadlineExceeded:
            raise ScrapeFailed(
                ErrorKind.TIMEOUT,
                f"no complete scrape within {self.limits.timeout_seconds:g}s "
                "(the deadline passed while parsing)",
            ) from None
        except ExpositionError as exc:
            raise ScrapeFailed(
                ErrorKind.PARSE_ERROR, f"parse error at line {exc.line}: {exc.message}"
            ) from None


def _client_failure(exc: aiohttp.ClientError) -> ScrapeFailed:
    if isinstance(exc, aiohttp.ClientSSLError | aiohttp.ClientConnectorCertificateError):
        return ScrapeFailed(ErrorKind.TLS, "TLS handshake failed")
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return ScrapeFailed(ErrorKind.REFUSED, "connection refused")
        return ScrapeFailed(ErrorKind.CONNECTION, "cannot connect")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return ScrapeFailed(ErrorKind.CONNECTION, "connection broke mid-body")
    # Disconnects and responses that are not HTTP (an SSH banner, say) land here.
    return ScrapeFailed(ErrorKind.CONNECTION, f"not a valid HTTP exchange ({type(exc).__name__})")


def _check_response_head(status: int, headers: Mapping[str, str]) -> None:
    if 300 <= status < 400:
        raise ScrapeFailed(ErrorKind.REDIRECT, f"redirect not followed (HTTP {status})")
    if status != 200:
        raise ScrapeFailed(ErrorKind.HTTP_STATUS, f"HTTP {status}")
    content_type = headers.get("Content-Type", "").strip().lower()
    if not content_type.startswith(METRICS_CONTENT_TYPES):
        shown = content_type.split(";")[0][:60] or "none"
        raise ScrapeFailed(ErrorKind.NOT_METRICS, f"not a metrics response (Content-Type: {shown})")
    encoding = headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", ""):
        raise ScrapeFailed(ErrorKind.NOT_METRICS, f"unsupported Content-Encoding {encoding[:20]!r}")


async def _read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes:
    """Read the body, decompressing gzip ourselves so the cap applies to decompressed bytes."""
    gzipped = response.headers.get("Content-Encoding", "").strip().lower() == "gzip"
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    chunks: list[bytes] = []
    size = 0

    def too_large() -> ScrapeFailed:
        chunks.clear()  # not held by the frame the error's traceback refers to
        return ScrapeFailed(ErrorKind.TOO_LARGE, f"body size limit exceeded ({cap} bytes)")

    async for raw in response.content.iter_chunked(256 * 1024):
        if inflater is None:
            size += len(raw)
            if size > cap:
                raise too_large()
            chunks.append(raw)
            continue
        data = raw
        while data:
            try:
                # max_length bounds memory per step: a bomb never inflates past the cap.
                out = inflater.decompress(data, cap - size + 1)
            except zlib.error:
                raise ScrapeFailed(ErrorKind.NOT_METRICS, "corrupt gzip body") from None
            size += len(out)
            if size > cap:
                raise too_large()
            chunks.append(out)
            data = inflater.unconsumed_tail
    body = b"".join(chunks)
    chunks.clear()
    if body.lstrip()[:1] == b"<":
        raise ScrapeFailed(ErrorKind.NOT_METRICS, "not a metrics response (looks like HTML)")
    return body


def check_limits(
    families: list[Family],
    limits: ScrapeLimits,
    checked: dict[int, Mapping[str, str]] | None = None,
) -> int:
    """Count samples and enforce the sample and label caps; the whole scrape fails on a breach.

    `checked` remembers label sets already found within the limits (the parser
    shares label objects across scrapes of one endpoint), so a warm scrape only
    checks what is new.
    """
    total = 0
    for family in families:
        total += len(family.samples)
        if total > limits.samples:
            raise ScrapeFailed(
                ErrorKind.TOO_MANY_SAMPLES, f"more than {limits.samples} samples (sample limit)"
            )
    seen = {} if checked is None else checked
    if len(seen) > 4 * limits.samples:
        seen.clear()  # label churn: start over rather than grow without bound
    for family in families:
        for sample in family.samples:
            labels = sample.labels
            if id(labels) in seen:
                continue
            _check_labels(family.name, labels, limits)
            seen[id(labels)] = labels
    return total


def _check_labels(family: str, labels: Mapping[str, str], limits: ScrapeLimits) -> None:
    if len(labels) > limits.labels_per_series:
        raise ScrapeFailed(
            ErrorKind.LABEL_LIMIT,
            f"{family[:80]}: {len(labels)} labels on one series (limit {limits.labels_per_series})",
        )
    for name, value in labels.items():
        if len(name.encode()) > limits.label_name_bytes:
            raise ScrapeFailed(
                ErrorKind.LABEL_LIMIT,
                f"{family[:80]}: label name over {limits.label_name_bytes} bytes",
            )
        if len(value.encode()) > limits.label_value_bytes:
            raise ScrapeFailed(
                ErrorKind.LABEL_LIMIT,
                f"{family[:80]}: label {name[:40]!r} value over {limits.label_value_bytes} bytes",
            )
