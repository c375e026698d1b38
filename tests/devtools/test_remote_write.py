"""The remote-write feeder: its wire format, what it writes for each scrape, and a real
Prometheus (Debian's 2.42) answering from what it fed, stale markers included."""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Iterator
from typing import Any

import cramjam
import httpx
import pytest

from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import (
    REMOTE_WRITE_HEADERS,
    STALE_NAN,
    RemoteWriteError,
    TimeSeries,
    encode_sample,
    encode_write_request,
    feed_scrapes,
    is_stale,
    remote_write,
    scrape_loop_writes,
)
from fleetsim.families import Family, format_value
from fleetsim.history import History
from fleetsim.targets import Target

# The wire format, read back by a decoder written separately from the encoder.


def fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one protobuf message."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result

    while pos < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1:
            yield number, wire, data[pos : pos + 8]
            pos += 8
        elif wire == 2:
            size = varint()
            yield number, wire, data[pos : pos + size]
            pos += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")


def decoded(request: bytes) -> list[tuple[list[tuple[str, str]], list[tuple[bytes, int]]]]:
    out = []
    for number, wire, series in fields(request):
        assert (number, wire) == (1, 2)
        labels, samples = [], []
        for inner, inner_wire, payload in fields(series):
            if inner == 1:
                assert inner_wire == 2
                label = {n: v.decode() for n, _, v in fields(payload)}
                labels.append((label[1], label[2]))
            else:
                assert (inner, inner_wire) == (2, 2)
                sample = {n: (w, v) for n, w, v in fields(payload)}
                assert sample[1][0] == 1 and sample[2][0] == 0
                ts = sample[2][1]
                samples.append((sample[1][1], ts - (1 << 64) if ts >= 1 << 63 else ts))
        out.append((labels, samples))
    return out


def test_a_write_request_has_the_remote_write_1_0_layout() -> None:
    series = [
        TimeSeries((("__name__", "up"), ("instance", "a:1"), ("job", "vllm")), ((1.0, 1000),)),
        TimeSeries((("__name__", "x"),), ((2.5, 1_700_000_000_123), (STALE_NAN, -5))),
    ]
    request = encode_write_request(series)
    assert decoded(request) == [
        (
            [("__name__", "up"), ("instance", "a:1"), ("job", "vllm")],
            [(struct.pack("<d", 1.0), 1000)],
        ),
        (
            [("__name__", "x")],
            [
                (struct.pack("<d", 2.5), 1_700_000_000_123),
                (struct.pack("<Q", 0x7FF0000000000002), -5),
            ],
        ),
    ]
    # A known encoding, byte for byte: Sample{value: 1.0, timestamp: 1000}.
    assert encode_sample(1.0, 1000) == bytes.fromhex("09000000000000f03f10e807")


def test_the_stale_marker_keeps_its_bit_pattern() -> None:
    assert math.isnan(STALE_NAN) and is_stale(STALE_NAN)
    assert not is_stale(math.nan) and not is_stale(1.0)
    assert struct.pack("<d", STALE_NAN) == struct.pack("<Q", 0x7FF0000000000002)


def test_it_writes_only_to_a_prometheus_on_loopback() -> None:
    series = [TimeSeries((("__name__", "x"),), ((1.0, 1),))]
    with pytest.raises(ValueError, match="only to a test Prometheus on loopback"):
        remote_write("http://prometheus.example.com:9090", series)


# What the scrape loop writes.


def family(name: str, *samples: tuple[str, tuple[tuple[str, str], ...], float]) -> Family:
    fam = Family(name, "gauge", "")
    fam.samples.extend(samples)
    return fam


T = Target("http://127.0.0.1:18000/metrics", "vllm", {"job": "vllm", "pod": "p"}, 0)


def by_name(series: list[TimeSeries]) -> dict[tuple[str, ...], float]:
    return {
        tuple(f"{k}={v}" for k, v in s.labels): s.samples[0][0] for s in series if len(s.samples)
    }


def test_stale_markers_follow_the_scrape_loop() -> None:
    a = ("", (("model_name", "m"),), 1.0)
    b = ("", (("model_name", "n"),), 2.0)
    clash = ("", (("job", "inner"), ("empty", "")), 3.0)
    steps = list(
        scrape_loop_writes(
            [
                (100.0, [(T, [family("g", a, b), family("c", clash)])]),
                (115.0, [(T, [family("g", a)])]),  # n and c disappear
                (130.0, [(T, None)]),  # down: everything it had goes stale
                (145.0, [(T, None)]),  # still down: no new markers
                (160.0, [(T, [family("g", b)])]),
            ]
        )
    )
    assert [at for at, _ in steps] == [100_000, 115_000, 130_000, 145_000, 160_000]
    added = ("instance=127.0.0.1:18000", "job=vllm", "pod=p")
    up = ("__name__=up", *added)
    g_m = ("__name__=g", "instance=127.0.0.1:18000", "job=vllm", "model_name=m", "pod=p")
    g_n = ("__name__=g", "instance=127.0.0.1:18000", "job=vllm", "model_name=n", "pod=p")
    c = ("__name__=c", "exported_job=inner", "instance=127.0.0.1:18000", "job=vllm", "pod=p")
    first, second, down, still, back = (by_name(series) for _, series in steps)
    assert first == {up: 1.0, g_m: 1.0, g_n: 2.0, c: 3.0}
    assert second.keys() == {up, g_m, g_n, c}
    assert is_stale(second[g_n]) and is_stale(second[c]) and second[g_m] == 1.0
    assert down.keys() == {up, g_m} and down[up] == 0.0 and is_stale(down[g_m])
    assert still == {up: 0.0}
    assert back == {up: 1.0, g_n: 2.0}
    assert all(s.labels == tuple(sorted(s.labels)) for _, series in steps for s in series)


# A real Prometheus fed by remote write.


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_remote_write_prometheus(tmp_path_factory.mktemp("remote-write")) as url:
        yield url


@pytest.mark.prometheus
def test_a_refused_write_says_why(prometheus: str) -> None:
    # More than an hour older than the newest sample the head holds: out of its bounds.
    now = round(time.time() * 1000)
    remote_write(prometheus, [TimeSeries((("__name__", "bounds_x"),), ((1.0, now),))])
    old = TimeSeries((("__name__", "bounds_y"),), ((1.0, now - 2 * 3600_000),))
    with pytest.raises(RemoteWriteError, match="HTTP 400: out of bounds"):
        remote_write(prometheus, [old])


@pytest.mark.prometheus
def test_a_sample_prometheus_drops_without_an_error_fails_the_feed(prometheus: str) -> None:
    # Two exposed series that are one series once the empty label is gone: both in one
    # request at one time, and Prometheus keeps one of them without saying so.
    elsewhere = Target("http://127.0.0.1:9/metrics", "vllm", {"job": "elsewhere"}, None)
    twice = family("dup_x", ("", (("a", ""),), 1.0), ("", (), 2.0))
    with pytest.raises(RemoteWriteError, match="appended 2 of the 3 samples sent"):
        feed_scrapes(prometheus, [(time.time() - 60.0, [(elsewhere, [twice])])])


@pytest.mark.prometheus
def test_the_receiver_takes_snappy_protobuf_only(prometheus: str) -> None:
    now = round(time.time() * 1000)
    body = encode_write_request([TimeSeries((("__name__", "plain_x"),), ((1.0, now),))])
    plain = httpx.post(f"{prometheus}/api/v1/write", content=body, headers=REMOTE_WRITE_HEADERS)
    assert plain.status_code == 400  # not snappy-compressed
    snappy = bytes(cramjam.snappy.compress_raw(body))
    sent = httpx.post(f"{prometheus}/api/v1/write", content=snappy, headers=REMOTE_WRITE_HEADERS)
    assert sent.status_code == 204
    assert query(prometheus, "query", query="plain_x", time=now / 1000)[0]["value"][1] == "1"


Truth = dict[tuple[tuple[str, str], ...], dict[float, float]]


def query(prometheus: str, path: str, **params: Any) -> list[dict[str, Any]]:
    answer = httpx.get(f"{prometheus}/api/v1/{path}", params=params, timeout=30).json()
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


@pytest.fixture(scope="module")
def fed(prometheus: str) -> tuple[list[Any], dict[str, Any]]:
    """A short history ending now (what Prometheus' head accepts), replica 1 going down for
    three minutes, remote-written as the scrape loop would have."""
    history = History(
        replicas=2, scenario="replica-down", hours=0.2, at=240.0, duration=180.0, targets=[1]
    )
    steps = list(history.scrapes())
    report = feed_scrapes(prometheus, steps)
    assert report.steps == len(steps) and report.stale_markers > 0
    return steps, {"start": history.start, "step": history.step}


def truth_of(steps: list[Any], instance: str) -> Truth:
    """Every series the instance served (as Prometheus keys it) -> {unix: value}."""
    out: Truth = {}
    for unix, scrapes in steps:
        for target, families in scrapes:
            if target.instance != instance:
                continue
            added = {"instance": target.instance, **target.labels}
            out.setdefault(key({"__name__": "up", **added}), {})[unix] = (
                0.0 if families is None else 1.0
            )
            for fam in families or ():
                for suffix, labels, value in fam.samples:
                    named = {"__name__": fam.name + suffix, **dict(labels), **added}
                    series = key({k: v for k, v in named.items() if v})
                    out.setdefault(series, {})[unix] = float(format_value(value))
    return out


def down_times(steps: list[Any], instance: str) -> list[float]:
    return [
        unix
        for unix, scrapes in steps
        for target, families in scrapes
        if target.instance == instance and families is None
    ]


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.prometheus
@pytest.mark.parametrize("instance", ["127.0.0.1:18001", "127.0.0.1:18000", "127.0.0.1:19001"])
def test_prometheus_answers_every_point_as_the_history_has_it(
    prometheus: str, fed: tuple[list[Any], dict[str, Any]], instance: str
) -> None:
    steps, grid = fed
    expected = truth_of(steps, instance)
    start, end = steps[0][0], steps[-1][0]
    answer = query(
        prometheus, "query_range", query=f'{{instance="{instance}"}}', start=start, end=end,
        step=grid["step"],
    )  # fmt: skip
    got: Truth = {
        key(series["metric"]): {float(t): float(v) for t, v in series["values"]}
        for series in answer
    }
    assert got.keys() == expected.keys()
    for series, points in expected.items():
        # Each point as served; none where it was not served: no 5-minute hold after the
        # replica went down or a series went away.
        assert got[series].keys() == points.keys(), series
        assert all(same(got[series][t], v) for t, v in points.items()), series


@pytest.mark.prometheus
def test_the_down_replica_is_stale_at_once_not_held_for_five_minutes(
    prometheus: str, fed: tuple[list[Any], dict[str, Any]]
) -> None:
    steps, grid = fed
    instance = "127.0.0.1:18001"
    down = down_times(steps, instance)
    assert down and len(down) * grid["step"] < 300.0 + grid["step"]
    first_down, back = down[0], down[-1] + grid["step"]
    selector = f'vllm:num_requests_running{{instance="{instance}"}}'
    before = query(prometheus, "query", query=selector, time=first_down - grid["step"])
    assert len(before) == 1
    expected = truth_of(steps, instance)
    running = next(s for s in expected if dict(s)["__name__"] == "vllm:num_requests_running")
    assert float(before[0]["value"][1]) == expected[running][first_down - grid["step"]]
    for at in (first_down, first_down + 1, first_down + 60, down[-1]):
        assert query(prometheus, "query", query=selector, time=at) == [], at
    up = query(prometheus, "query", query=f'up{{instance="{instance}"}}', time=first_down + 1)
    assert [float(s["value"][1]) for s in up] == [0.0]
    after = query(prometheus, "query", query=selector, time=back)
    assert len(after) == 1
    # The other replica never stopped answering.
    other = query(
        prometheus, "query", query='vllm:num_requests_running{instance="127.0.0.1:18000"}',
        time=first_down + 60,
    )  # fmt: skip
    assert len(other) == 1
