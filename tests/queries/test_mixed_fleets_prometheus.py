"""Both backends on one hand-made fleet mid-upgrade: the same scrapes go into the embedded
store and, as OpenMetrics backfilled by promtool, into a real Prometheus; every spec must
give the same points, bucket bounds and status on both (exactly, up to float noise)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

import pytest
from django.test import override_settings

from devtools.prometheus import backfilled_prometheus
from inventory.models import Fleet, ScrapeRun, ScrapeStatus
from queries import Gauge, Quantile, QueryResult, Rate, Scope, Spec, Window, run_queries
from tests.queries.storefill import Sample, at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]

TTFT = "vllm:time_to_first_token_seconds"
TYPES = {
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:gpu_cache_usage_perc": "gauge",
    "vllm:prefix_cache_queries": "counter",
    "vllm:gpu_prefix_cache_queries": "counter",
    TTFT: "histogram",
}
STEPS = range(0, 1201, 15)
WINDOW = Window(at(300), at(1200), 15)
SPECS: dict[str, Spec] = {
    "kv": Gauge("kv_usage", agg="max", by=("instance",)),
    "prefix": Rate("prefix_queries", by=("instance",), window_seconds=60),
    "prefix_fleet": Rate("prefix_queries", window_seconds=60),
    "ttft_p50": Quantile("ttft", 0.5, window_seconds=60),
    "ttft_p99": Quantile("ttft", 0.99, window_seconds=60),
    "ttft_p99_by_replica": Quantile("ttft", 0.99, by=("instance",), window_seconds=60),
}


def _replica(instance: str) -> list[tuple[float, list[Sample]]]:
    """new:1 runs current vLLM; old:1 an older one (old KV name, TTFT buckets up to 10 s,
    stuck past them in an incident); both:1 writes the prefix counter under both names."""
    m = {"model_name": "llama", "engine": "0"}
    scrapes = []
    for s in STEPS:
        n = float(s)
        samples: list[Sample] = []
        if instance == "new:1":
            samples.append(("vllm:kv_cache_usage_perc", m, 0.25 + (s % 60) / 600))
            samples.append(("vllm:prefix_cache_queries_total", m, 7.0 * n))
            grid = {"1": 0.5 * n, "10": 0.9 * n, "20": 0.95 * n, "40": n, "+Inf": n}
        elif instance == "old:1":
            samples.append(("vllm:gpu_cache_usage_perc", m, 0.998 if s > 600 else 0.4))
            samples.append(("vllm:gpu_prefix_cache_queries_total", m, 3.0 * n))
            slow = max(0.0, n - 600)  # from 600 s on, every request takes over 10 s
            grid = {"1": 0.5 * (n - slow), "10": n - slow, "+Inf": n}
        else:
            samples.append(("vllm:kv_cache_usage_perc", m, 0.5))
            samples.append(("vllm:prefix_cache_queries_total", m, 5.0 * n))
            samples.append(("vllm:gpu_prefix_cache_queries_total", m, 5.0 * n))
            grid = {"1": 0.2 * n, "10": 0.8 * n, "20": n, "40": n, "+Inf": n}
        samples += histogram(TTFT, m, grid, total=2.0 * n)
        scrapes.append((float(s), samples))
    return scrapes


INSTANCES = ("new:1", "old:1", "both:1")


def _openmetrics(replicas: Mapping[str, list[tuple[float, list[Sample]]]]) -> str:
    """The scrapes as Prometheus would have stored them: whole families, instance and job
    added, timestamps in seconds."""
    by_family: dict[str, list[str]] = {}
    for instance, scrapes in replicas.items():
        for offset, samples in scrapes:
            stamp = at(offset).timestamp()
            for name, labels, value in samples:
                family = _family_of(name)
                shown = {**labels, "instance": instance, "job": "vllm"}
                text = ",".join(f'{k}="{v}"' for k, v in sorted(shown.items()))
                by_family.setdefault(family, []).append(f"{name}{{{text}}} {value!r} {stamp:.3f}")
    lines: list[str] = []
    for family, texts in by_family.items():
        lines.append(f"# TYPE {family} {TYPES[family]}")
        # One series' samples in time order: sort by series, then timestamp.
        lines += sorted(
            texts, key=lambda line: (line.rsplit(" ", 2)[0], float(line.rsplit(" ", 1)[1]))
        )
    return "\n".join(lines) + "\n# EOF\n"


def _family_of(name: str) -> str:
    for suffix in ("_bucket", "_count", "_sum", "_total"):
        if name.endswith(suffix) and name.removesuffix(suffix) in TYPES:
            return name.removesuffix(suffix)
    return name


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("mixed")
    (base / "fleet.om").write_text(_openmetrics({i: _replica(i) for i in INSTANCES}))
    # The hand-made scrapes are months old: the backfilled Prometheus keeps any age.
    with backfilled_prometheus(base / "fleet.om", base) as url:
        yield url


@pytest.fixture
def fleet() -> Fleet:
    fleet = fleet_named("mixed")
    for instance in INSTANCES:
        endpoint_with_scrapes(fleet, instance, _replica(instance), types=TYPES)
    return fleet


def _both(fleet: Fleet, url: str) -> tuple[dict[str, QueryResult], dict[str, QueryResult]]:
    scope = Scope(fleet)
    local = run_queries(SPECS, scope=scope, window=WINDOW, backend="local")
    with override_settings(PROMETHEUS_URL=url):
        remote = run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")
    return local, remote


def _points(values: Sequence[float | None] | None) -> list[float]:
    return [math.nan if v is None else v for v in values or ()]


def test_both_backends_give_the_same_points_bounds_and_status(
    fleet: Fleet, backfilled: str
) -> None:
    local, remote = _both(fleet, backfilled)
    for name in SPECS:
        ours, theirs = local[name], remote[name]
        assert (ours.status, theirs.status) == ("ok", "ok"), (name, ours.warnings, theirs.warnings)
        assert [s.labels for s in ours.series] == [s.labels for s in theirs.series], name
        for a, b in zip(ours.series, theirs.series, strict=True):
            for side in ("values", "lower", "upper"):
                assert _points(getattr(a, side)) == pytest.approx(
                    _points(getattr(b, side)), rel=1e-9, abs=1e-12, nan_ok=True
                ), (name, side, a.labels)


def test_the_old_replica_is_in_the_kv_figures_of_both_backends(
    fleet: Fleet, backfilled: str
) -> None:
    for results in _both(fleet, backfilled):
        kv = {s.labels["instance"]: s.values[-1] for s in results["kv"].series}
        assert kv == {"new:1": pytest.approx(0.25), "old:1": 0.998, "both:1": 0.5}


def test_a_counter_under_both_names_is_counted_once_on_both_backends(
    fleet: Fleet, backfilled: str
) -> None:
    for results in _both(fleet, backfilled):
        rates = {s.labels["instance"]: s.values[-1] for s in results["prefix"].series}
        assert rates == {
            "new:1": pytest.approx(7.0),
            "old:1": pytest.approx(3.0),
            "both:1": pytest.approx(5.0),
        }
        assert results["prefix_fleet"].series[0].values[-1] == pytest.approx(15.0)


def test_the_incident_replicas_p99_is_a_lower_bound_on_both_backends(
    fleet: Fleet, backfilled: str
) -> None:
    for results in _both(fleet, backfilled):
        by = {s.labels["instance"]: s for s in results["ttft_p99_by_replica"].series}
        old = by["old:1"]
        assert old.values[-1] is None and (old.lower or ())[-1] == 10.0
        assert (old.upper or ())[-1] is None
        # The current replica keeps its own finer grid: p99 inside (20, 40].
        new = by["new:1"]
        assert new.lower is not None and new.upper is not None
        assert (new.lower[-1], new.upper[-1]) == (20.0, 40.0)
        # Fleet-wide, only the edges every replica has (1 and 10 s) are used.
        fleet_p99 = results["ttft_p99"].series[0]
        assert fleet_p99.values[-1] is None and (fleet_p99.lower or ())[-1] == 10.0
        assert any("le=20, 40 not on every replica" in w for w in results["ttft_p99"].warnings)


FLAKY_DOWN = 900  # the scrape at this offset failed


def _flaky() -> list[tuple[float, list[Sample]]]:
    m = {"model_name": "llama", "engine": "0"}
    return [(float(s), [("vllm:kv_cache_usage_perc", m, 0.5)]) for s in STEPS if s != FLAKY_DOWN]


@pytest.fixture(scope="module")
def flaky_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("flaky")
    text = _openmetrics({"flaky:1": _flaky()}).removesuffix("# EOF\n")
    # Prometheus' own `up`: 0 for the failed scrape, as its scrape loop records it.
    up = [
        f'up{{instance="flaky:1",job="vllm"}} {0 if s == FLAKY_DOWN else 1} {at(s).timestamp():.3f}'
        for s in STEPS
    ]
    (base / "fleet.om").write_text(text + "# TYPE up gauge\n" + "\n".join(up) + "\n# EOF\n")
    with backfilled_prometheus(base / "fleet.om", base) as url:
        yield url


def test_a_failed_scrape_makes_the_result_partial_on_both_backends(
    flaky_prometheus: str,
) -> None:
    fleet = fleet_named("flaky")
    endpoint = endpoint_with_scrapes(fleet, "flaky:1", _flaky(), types=TYPES)
    ScrapeRun.objects.create(
        endpoint=endpoint, started_at=at(FLAKY_DOWN), duration_seconds=0.01,
        status=ScrapeStatus.FAILED, error_kind="refused", error="connection refused",
    )  # fmt: skip
    specs: dict[str, Spec] = {"kv": Gauge("kv_usage", agg="max")}
    local = run_queries(specs, scope=Scope(fleet), window=WINDOW, backend="local")["kv"]
    with override_settings(PROMETHEUS_URL=flaky_prometheus):
        remote = run_queries(specs, scope=Scope(fleet), window=WINDOW, backend="prometheus")["kv"]
    note = "flaky:1: 1 failed scrape(s) in the window, shown as gaps"
    for result in (local, remote):
        assert result.status == "partial"
        assert note in result.warnings
