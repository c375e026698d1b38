"""A fleet served in-process: loopback ports, GET /metrics only, replicas that go away."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from devtools.waiting import wait_until
from fleetsim.api import Fleet, PortInUseError, start_fleet
from tests.fleetsim.conftest import samples


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with start_fleet(replicas=2, base_port=0, speed=5.0, seed=4) as running:
        yield running


def vllm_url(fleet: Fleet, replica: int = 0) -> str:
    return next(t.url for t in fleet.targets if t.kind == "vllm" and t.replica == replica)


def refused(url: str) -> bool | None:
    """True when nothing listens; None when the server answered (or hung up mid-way)."""
    try:
        httpx.get(url, timeout=5)
    except httpx.ConnectError:
        return True
    except httpx.TransportError:
        return None  # a connection accepted just as the replica died
    return None


def served(url: str) -> bool | None:
    try:
        return httpx.get(url, timeout=5).status_code == 200 or None
    except httpx.TransportError:
        return None


def test_every_target_serves_metrics_in_the_classic_text_format(fleet: Fleet) -> None:
    assert sorted(t.kind for t in fleet.targets) == [
        "dcgm", "dcgm", "gateway", "prober", "vllm", "vllm",
    ]  # fmt: skip
    for target in fleet.targets:
        assert target.url.startswith("http://127.0.0.1:")
        resp = httpx.get(target.url, timeout=10)
        assert resp.status_code == 200
        assert resp.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert list(text_string_to_metric_families(resp.text))


def test_only_get_on_the_metrics_path_is_answered(fleet: Fleet) -> None:
    url = vllm_url(fleet)
    assert httpx.get(url.replace("/metrics", "/health"), timeout=5).status_code == 404
    assert httpx.get(url.replace("/metrics", "/"), timeout=5).status_code == 404
    for method in ("POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"):
        resp = httpx.request(method, url, timeout=5)
        assert resp.status_code == 405, method
        assert resp.headers["allow"] == "GET"


def test_gzip_is_used_when_the_scraper_accepts_it(fleet: Fleet) -> None:
    url = vllm_url(fleet)
    with httpx.stream("GET", url, headers={"Accept-Encoding": "gzip"}, timeout=10) as resp:
        wire = b"".join(resp.iter_raw())
        assert resp.headers["content-encoding"] == "gzip"
    assert wire[:2] == b"\x1f\x8b"
    assert gzip.decompress(wire).startswith(b"# HELP")
    plain = httpx.get(url, headers={"Accept-Encoding": "identity"}, timeout=10)
    assert "content-encoding" not in plain.headers


def test_simulated_time_moves_with_wall_time(fleet: Fleet) -> None:
    def finished() -> float:
        text = httpx.get(vllm_url(fleet), timeout=10).text
        return sum(s.value for s in samples(text) if s.name == "vllm:request_success_total")

    first = finished()
    wait_until(lambda: finished() > first or None, timeout=30, what="requests to finish")


def test_targets_carry_the_labels_that_join_vllm_to_dcgm(fleet: Fleet) -> None:
    vllm = next(t for t in fleet.targets if t.kind == "vllm" and t.replica == 1)
    dcgm = next(t for t in fleet.targets if t.kind == "dcgm" and t.replica == 1)
    assert vllm.labels["job"] == "vllm" and dcgm.labels["job"] == "dcgm-exporter"
    text = httpx.get(dcgm.url, timeout=10).text
    pods = {s.labels["pod"] for s in samples(text) if s.name == "DCGM_FI_DEV_GPU_UTIL"}
    assert pods == {vllm.labels["pod"]}
    assert fleet.manifest["incident"] == "steady"


def test_a_downed_replica_refuses_connections_until_it_restarts() -> None:
    with start_fleet(
        replicas=2, scenario="replica-down", at=2.0, duration=40.0, base_port=0, speed=20.0, seed=5
    ) as running:
        url = vllm_url(running)
        other = vllm_url(running, 1)
        wait_until(lambda: refused(url), timeout=30, what="replica 0 to refuse connections")
        assert httpx.get(other, timeout=10).status_code == 200
        wait_until(lambda: served(url), timeout=60, what="replica 0 to come back")
        text = httpx.get(url, timeout=10).text
        assert any(s.name == "process_start_time_seconds" for s in samples(text))


def blocked_port_after_a_free_one() -> tuple[socket.socket, int]:
    """A listening socket on port P+1 while P is free: replica 0 binds P, replica 1 fails."""
    for _ in range(50):
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", 0))
        port = blocker.getsockname()[1]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port - 1))
            except OSError:
                blocker.close()
                continue
        blocker.listen()
        return blocker, port
    pytest.fail("no two adjacent free loopback ports found")


def test_a_port_in_use_fails_the_start_and_leaves_nothing_listening() -> None:
    blocker, taken = blocked_port_after_a_free_one()
    with blocker:
        before = {t.name for t in threading.enumerate()}
        with pytest.raises(PortInUseError, match=f"127.0.0.1:{taken}"):
            start_fleet(replicas=2, base_port=taken - 1)
        assert refused(f"http://127.0.0.1:{taken - 1}/metrics")  # replica 0 was bound, then closed
        assert {t.name for t in threading.enumerate()} <= before


def test_stop_closes_every_port() -> None:
    running = start_fleet(replicas=1, base_port=0)
    urls = [t.url for t in running.targets]
    running.stop()
    for url in urls:
        assert refused(url)


def test_a_mixed_fleet_serves_each_replica_in_its_own_dialect() -> None:
    with start_fleet(replicas=2, base_port=0, speed=5.0, seed=5, dialect_of={1: "v0"}) as mixed:
        assert [r["dialect"] for r in mixed.manifest["replicas"]] == ["current", "v0"]
        assert mixed.manifest["run"]["dialect_of"] == {"1": "v0"}
        current, old = (httpx.get(vllm_url(mixed, i), timeout=10).text for i in (0, 1))
    assert "vllm:kv_cache_usage_perc{" in current and "vllm:num_requests_swapped" not in current
    assert "vllm:num_requests_swapped{" in old and "vllm:kv_cache_usage_perc" not in old
