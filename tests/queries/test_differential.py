"""Both backends, one definition: the same specs over the same live fleetsim data.

A real Prometheus (the Debian package) scrapes a running fleetsim fleet every
second while FleetScope's own `fleet_scrape` fills the embedded store on the
same cadence (each cycle starts right after Prometheus' next scrape). Then every
spec runs on both backends over one window.

Tolerance: the two scrapers never sample at the same instant (up to one 1 s
interval apart) and the simulated fleet runs at `SPEED` x real time, so a
single point can differ by roughly one scrape's worth of change over an 8 s
rate window (~1/8). Comparing the *median* of each series over the window
damps that jitter; medians must agree within 15 % (measured: busy rates,
quantiles and fractions within ~7 %). Small numbers get an absolute slack too
(see ABSOLUTE_SLACK). Which series exist (their label sets) must agree exactly,
zero-rate series included.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from django.test import override_settings

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from fleetsim.targets import file_sd
from inventory.models import Fleet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from queries import (
    FractionBelow,
    Gauge,
    Increase,
    Mean,
    Quantile,
    QueryResult,
    Rate,
    Ratio,
    Scope,
    Spec,
    Window,
    run_queries,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]

SPEED = 4.0
RATE_WINDOW = 8.0
COMPARE_SECONDS = 10
CYCLES = int(RATE_WINDOW + COMPARE_SECONDS + 4)
TOLERANCE = 0.15
# Absolute slack where 15 % of a small number is less than the sampling grain:
# - rare events (aborts at ~0.5/s) are a handful per window; one request counted on either
#   side of each window edge is 2 events, i.e. 2 / RATE_WINDOW per second;
# - gauges are instantaneous: KV usage (a 0-1 fraction near 0.05 at this load) moves by a
#   point or two between two scrapes a second apart.
ABSOLUTE_SLACK = {"finished": 2 / RATE_WINDOW, "kv": 0.02}

SPECS: dict[str, Spec] = {
    "tokens": Rate("generation_tokens", by=("model_name",), window_seconds=RATE_WINDOW),
    "prompt": Increase("prompt_tokens", by=("instance",), window_seconds=RATE_WINDOW),
    "finished": Rate("request_success", by=("finished_reason",), window_seconds=RATE_WINDOW),
    "ttft_p90": Quantile("ttft", 0.9, by=("model_name",), window_seconds=RATE_WINDOW),
    "ttft_mean": Mean("ttft", window_seconds=RATE_WINDOW),
    "ttft_under_1s": FractionBelow("ttft", 1.0, window_seconds=RATE_WINDOW),
    "itl_p50": Quantile("itl", 0.5, window_seconds=RATE_WINDOW),
    "running": Gauge("running", agg="sum", by=("engine",)),
    "kv": Gauge("kv_usage", agg="avg", by=("instance",)),
    "stop_share": Ratio(
        Rate("request_success", match={"finished_reason": "stop"}, window_seconds=RATE_WINDOW),
        Rate("request_success", window_seconds=RATE_WINDOW),
    ),
}


def last_scrape(prometheus: str, instance: str) -> float | None:
    body = httpx.get(
        f"{prometheus}/api/v1/query", params={"query": f'timestamp(up{{instance="{instance}"}})'}
    ).json()
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else None


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[tuple[Fleet, str]]:
    """A 2-replica, data-parallel-2 fleet scraped by Prometheus and by FleetScope."""
    with start_fleet(replicas=2, dp=2, seed=11, speed=SPEED) as sim:
        engines = [t for t in sim.targets if t.kind == "vllm"]
        fleet = register(sim)
        config = file_sd_config(tmp_path, file_sd(engines), interval="1s")
        with running_prometheus(config, tmp_path / "data") as prometheus:
            instance = engines[0].instance
            seen = wait_until(lambda: last_scrape(prometheus, instance), what="a first scrape")
            for _ in range(CYCLES):

                def scraped_again(s: float = seen) -> float | None:
                    t = last_scrape(prometheus, instance)
                    return t if t and t > s else None

                seen = wait_until(scraped_again, timeout=10, what="prometheus to scrape again")
                report = fleet_scrape(fleet_id=fleet.pk)
                assert report.failed == 0
            yield fleet, prometheus


def register(sim: SimFleet) -> Fleet:
    specs = [TargetSpec(t.url, "vllm", {}) for t in sim.targets if t.kind == "vllm"]
    return targets_import(fleet_slug="differential", specs=specs).fleet


def medians(result: QueryResult, stamps: set[float]) -> dict[tuple, float]:
    return {
        tuple(sorted(s.labels.items())): statistics.median(
            v for t, v in zip(s.timestamps, s.values, strict=True) if t in stamps and v is not None
        )
        for s in result.series
    }


def common_stamps(local: QueryResult, remote: QueryResult) -> set[float]:
    def present(result: QueryResult) -> set[float]:
        return {
            t
            for s in result.series
            for t, v in zip(s.timestamps, s.values, strict=True)
            if v is not None
        }

    return present(local) & present(remote)


def test_both_backends_agree_on_which_series_exist_and_on_their_values(
    scraped: tuple[Fleet, str],
) -> None:
    fleet, prometheus = scraped
    end = datetime.fromtimestamp(int(time.time()) - 1, tz=UTC)
    window = Window(end - timedelta(seconds=COMPARE_SECONDS), end, 1)
    scope = Scope(fleet)
    with override_settings(PROMETHEUS_URL=prometheus, PROMETHEUS_TIMEOUT_SECONDS=10.0):
        remote = run_queries(SPECS, scope=scope, window=window, backend="prometheus")
    local = run_queries(SPECS, scope=scope, window=window, backend="local")
    disagreements = []
    for name in SPECS:
        mine, theirs = local[name], remote[name]
        assert (name, mine.status) == (name, "ok"), mine.message
        assert (name, theirs.status) == (name, "ok"), theirs.message
        assert mine.resolved_name == theirs.resolved_name
        assert {tuple(sorted(s.labels.items())) for s in mine.series} == {
            tuple(sorted(s.labels.items())) for s in theirs.series
        }, name
        stamps = common_stamps(mine, theirs)
        assert len(stamps) >= COMPARE_SECONDS // 2, f"{name}: too few common points"
        ours, prom = medians(mine, stamps), medians(theirs, stamps)
        for labels, value in prom.items():
            allowed = max(TOLERANCE * abs(value), ABSOLUTE_SLACK.get(name, 1e-9))
            if abs(ours[labels] - value) > allowed:
                disagreements.append(f"{name}{dict(labels)}: local {ours[labels]:.4g}, "
                                     f"prometheus {value:.4g}")  # fmt: skip
    assert not disagreements, "\n".join(disagreements)
    # Same live Prometheus (one fleet start per test is the expensive part): a hostile
    # model name stays inside its quotes instead of widening the selector to `up`.
    hostile = Scope(fleet, model_name='"} or up{x="')
    with override_settings(PROMETHEUS_URL=prometheus, PROMETHEUS_TIMEOUT_SECONDS=10.0):
        widened = run_queries(
            {"running": Gauge("running")}, scope=hostile, window=window, backend="prometheus"
        )["running"]
    assert (widened.status, widened.reason) == ("unavailable", "no-data")
