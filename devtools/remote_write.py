"""Feeding a test Prometheus by remote write, the way its own scrape loop would have
written a fleet's history: for the query-truth differential tests.

    with running_remote_write_prometheus(tmp_path) as url:  # devtools.prometheus
        feed_history(url, History(replicas=2, scenario="replica-down", hours=0.2))

The protocol is remote write 1.0: a `WriteRequest` protobuf (hand-encoded below:
WriteRequest{repeated TimeSeries timeseries = 1}, TimeSeries{repeated Label labels = 1;
repeated Sample samples = 2}, Label{string name = 1; string value = 2}, Sample{double
value = 1; int64 timestamp = 2}), snappy block compression (cramjam), POSTed to
/api/v1/write of a Prometheus started with `--web.enable-remote-write-receiver`.

What the scrape loop writes, and so what `scrape_loop_writes` yields per scrape step: each
scraped sample with the target's labels added (an exposed label that clashes with one is
kept as `exported_<name>`, as with honor_labels false; empty label values dropped), `up`
1 or 0, and stale markers (the NaN with bits 0x7ff0000000000002) for every series of a
target at its first failed scrape after a success, and for a series missing from a
successful scrape that the previous one had.

Prometheus 2.42 appends remote-written samples to its head block, and what it takes was
checked on the Debian package: per series, samples must come in time order (an older
sample of a series is dropped, silently when it is in the same request as the newer
one); a sample older than an hour before the newest one the head holds (half the 2 h
block range) is refused with 400 "out of bounds", as is a second sample at a time a
series already has ("duplicate sample for timestamp"). A fresh Prometheus takes a history
of any age, fed oldest first. So each scrape step goes out as its own request, oldest
first, and `feed_scrapes` then checks Prometheus' own count of appended samples against
what it sent. Feed a fresh Prometheus; a history that ends near now (fleetsim's default
end) also leaves room for tests that write at the current time.

This is the only POST in the tree, and it only goes to a Prometheus a test started:
FleetScope itself only ever sends GET.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import cramjam
import httpx

STALE_NAN_BITS = 0x7FF0000000000002
STALE_NAN_BYTES = struct.pack("<Q", STALE_NAN_BITS)
STALE_NAN: float = struct.unpack("<d", STALE_NAN_BYTES)[0]
REMOTE_WRITE_HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
    "User-Agent": "fleetscope-devtools-remote-write",
}

Labels = tuple[tuple[str, str], ...]


def is_stale(value: float) -> bool:
    """Whether `value` is Prometheus' stale marker (a NaN with one exact bit pattern)."""
    return struct.pack("<d", value) == STALE_NAN_BYTES


@dataclass(frozen=True)
class TimeSeries:
    """One series and its samples: labels sorted by name with `__name__` among them,
    samples as (value, unix milliseconds) in time order."""

    labels: Labels
    samples: tuple[tuple[float, int], ...]


# The protobuf wire format, as much of it as WriteRequest needs.


def _varint(number: int) -> bytes:
    number &= 0xFFFFFFFFFFFFFFFF  # int64 as protobuf sends it: two's complement
    out = bytearray()
    while True:
        low = number & 0x7F
        number >>= 7
        if number:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_label(name: str, value: str) -> bytes:
    return _field(1, name.encode()) + _field(2, value.encode())


def encode_sample(value: float, timestamp_ms: int) -> bytes:
    # double value = 1 (wire type 1, little-endian), int64 timestamp = 2 (wire type 0)
    return b"\x09" + struct.pack("<d", value) + b"\x10" + _varint(timestamp_ms)


def encode_timeseries(series: TimeSeries) -> bytes:
    labels = b"".join(_field(1, encode_label(name, value)) for name, value in series.labels)
    samples = b"".join(_field(2, encode_sample(v, t)) for v, t in series.samples)
    return labels + samples


def encode_write_request(series: Iterable[TimeSeries]) -> bytes:
    return b"".join(_field(1, encode_timeseries(one)) for one in series)


class RemoteWriteError(RuntimeError):
    """Prometheus refused a write; the message has its status and answer."""


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def remote_write(base_url: str, series: Sequence[TimeSeries], *, timeout: float = 10.0) -> None:
    """POST one WriteRequest of `series` to the test Prometheus at `base_url` (on loopback:
    a test's own, see devtools.prometheus.running_remote_write_prometheus)."""
    host = urlsplit(base_url).hostname
    if host not in LOOPBACK_HOSTS:
        raise ValueError(
            f"remote write goes only to a test Prometheus on loopback, not {base_url[:100]!r}"
        )
    body = bytes(cramjam.snappy.compress_raw(encode_write_request(series)))
    response = httpx.post(
        f"{base_url.rstrip('/')}/api/v1/write",
        content=body,
        headers=REMOTE_WRITE_HEADERS,
        timeout=timeout,
    )
    if not 200 <= response.status_code < 300:
        raise RemoteWriteError(
            f"remote write to {base_url} refused: HTTP {response.status_code}: "
            f"{response.text[:300].strip()}"
        )


# What Prometheus' scrape loop would have written.


class SimFamily(Protocol):
    """A fleetsim family: name, and samples as (suffix, labels, value)."""

    @property
    def name(self) -> str: ...

    @property
    def samples(self) -> Sequence[tuple[str, Labels, float]]: ...


class SimTarget(Protocol):
    @property
    def instance(self) -> str: ...

    @property
    def labels(self) -> dict[str, str]: ...


Scrapes = Iterable[tuple[float, Sequence[tuple[SimTarget, Sequence[SimFamily] | None]]]]


def target_labels(target: SimTarget) -> dict[str, str]:
    """The labels Prometheus adds to every sample of a target: instance and its file_sd
    labels (job among them)."""
    return {"instance": target.instance, **target.labels}


def series_labels(name: str, exposed: Labels, added: dict[str, str]) -> Labels:
    labels = {"__name__": name}
    for key, value in exposed:
        if key in added:
            key = f"exported_{key}"  # honor_labels: false
        if value:
            labels[key] = value
    labels.update((key, value) for key, value in added.items() if value)
    return tuple(sorted(labels.items()))


@dataclass(frozen=True)
class FeedReport:
    steps: int
    samples: int
    stale_markers: int
    start_ms: int
    end_ms: int


def scrape_loop_writes(scrapes: Scrapes) -> Iterator[tuple[int, list[TimeSeries]]]:
    """(unix ms, the series appended at that scrape step, one sample each) per step."""
    last_seen: dict[str, set[Labels]] = {}  # instance -> series of its last good scrape
    for unix, step in scrapes:
        at = round(unix * 1000)
        out: list[TimeSeries] = []
        for target, families in step:
            added = target_labels(target)
            previous = last_seen.get(target.instance, set())
            up = 0.0 if families is None else 1.0
            out.append(TimeSeries(series_labels("up", (), added), ((up, at),)))
            if families is None:
                # The first failed scrape after a success: every series goes stale.
                out.extend(TimeSeries(labels, ((STALE_NAN, at),)) for labels in sorted(previous))
                last_seen[target.instance] = set()
                continue
            seen: set[Labels] = set()
            for family in families:
                for suffix, exposed, value in family.samples:
                    labels = series_labels(family.name + suffix, exposed, added)
                    seen.add(labels)
                    out.append(TimeSeries(labels, ((float(value), at),)))
            out.extend(TimeSeries(labels, ((STALE_NAN, at),)) for labels in sorted(previous - seen))
            last_seen[target.instance] = seen
        yield at, out


def appended_samples(base_url: str) -> float:
    """How many samples Prometheus' head has appended, from its own metrics (a line
    match: Prometheus' Go metrics are more than the strict parser accepts)."""
    text = httpx.get(f"{base_url.rstrip('/')}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("prometheus_tsdb_head_samples_appended_total")
    )


def feed_scrapes(base_url: str, scrapes: Scrapes, *, timeout: float = 10.0) -> FeedReport:
    """Remote-write every scrape step, oldest first, one request per step; RemoteWriteError
    when Prometheus refused a request or kept fewer samples than it was sent."""
    before = appended_samples(base_url)
    steps = samples = stale = 0
    start = end = 0
    for at, series in scrape_loop_writes(scrapes):
        remote_write(base_url, series, timeout=timeout)
        if not steps:
            start = at
        end = at
        steps += 1
        samples += len(series)
        stale += sum(is_stale(s.samples[0][0]) for s in series)
    kept = appended_samples(base_url) - before
    if kept != samples:
        raise RemoteWriteError(
            f"Prometheus at {base_url} appended {kept:.0f} of the {samples} samples sent "
            "(out of order or duplicate ones are dropped without an error)"
        )
    return FeedReport(steps, samples, stale, start, end)


class HistoryLike(Protocol):
    def scrapes(self) -> Scrapes: ...


def feed_history(base_url: str, history: HistoryLike, *, timeout: float = 10.0) -> FeedReport:
    """A fleetsim `History`, written into the test Prometheus as its scrape loop would have."""
    return feed_scrapes(base_url, history.scrapes(), timeout=timeout)
