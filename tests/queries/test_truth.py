"""Query truth on simulated fleets as production sees them.

Each case simulates a short fleetsim history once and loads it twice: into the embedded
store through `import_history` (the live write path) and into a real Prometheus by remote
write, as its scrape loop would have written it (stale markers when a replica stops
answering or a series goes away). Then:

- every panel's specs and the replica table's run on both backends and must agree point
  by point (values, gaps, bucket bounds and status), not just in their medians;
- both are held to the simulator's own ground truth: gauges and counter rates exactly as
  the replicas served them, and each replica's TTFT p99 inside the bucket the query
  reports, the true p99 taken from the requests themselves as they completed.

Cases: the current dialect with a replica going down and back; vLLM 0.8's dialect with
a restart (a counter reset); a fleet mid-upgrade (current, v0 and v1-0.8 replicas) with
KV pressure on the v0 replica.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from dashboard.panels import PANELS
from dashboard.replicas import REPLICA_SPECS, replica_table
from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import feed_scrapes
from fleetsim.history import History
from fleetsim.request import Request
from inventory.history import history_import
from inventory.models import Fleet
from queries import (
    Backend,
    Gauge,
    Quantile,
    QueryResult,
    Rate,
    Scope,
    Spec,
    Window,
    run_queries,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]

STEP = 15.0
# Fixed, so every run simulates the same seconds: a multiple of the step, a day ago.
END = math.floor((1_764_000_000) / STEP) * STEP


@dataclass(frozen=True)
class Case:
    name: str
    options: dict[str, Any]


CASES = (
    Case("down-and-back", dict(replicas=3, scenario="replica-down", at=300.0, duration=240.0,
                              targets=[1], seed=11)),
    Case("restart-v1-0.8", dict(replicas=3, dialect="v1-0.8", scenario="cold-restart",
                               at=420.0, duration=300.0, targets=[2], seed=12)),
    Case("mid-upgrade", dict(replicas=4, dialect_of={1: "v0", 2: "v1-0.8"},
                            scenario="kv-pressure", at=360.0, duration=480.0, targets=[1],
                            seed=13)),
)  # fmt: skip


class Recorded(History):
    """A History that keeps every scrape step and every completed request as it goes."""

    recorded: list[Any]  # the scrape steps, as they were simulated
    requests: list[tuple[int, float, float]]  # (replica, first token at sim. time, TTFT)
    # At each scrape (unix), each replica's engine clock (simulated seconds): an engine step
    # that straddles the scrape instant has run to its end, and the histogram saw its
    # first tokens, so a request belongs to the scrapes whose clock reached its first token.
    clocks: dict[float, dict[int, float]]

    def __init__(self, **options: Any) -> None:
        super().__init__(hours=0.3, step=STEP, end=END, **options)
        self.recorded, self.requests, self.clocks = [], [], {}
        self.model.request_observers.append(self._observe)

    def _observe(self, req: Request, t: float, outcome: str) -> None:
        if req.t_first >= 0 and req.replica is not None:
            self.requests.append((req.replica, req.t_first, req.t_first - req.t_arrival))

    def scrapes(self) -> Iterator[tuple[float, list[Any]]]:
        for unix, scrapes in super().scrapes():
            self.recorded.append((unix, scrapes))
            self.clocks[unix] = {
                i: max((e.clock for e in replica.engines), default=-math.inf)
                for i, replica in enumerate(self.model.replicas)
            }
            yield unix, scrapes
        # Requests still running at the end had their first token counted too.
        for replica in self.model.replicas:
            for engine in replica.engines:
                for req in engine.in_flight():
                    self._observe(req, self.model.now, "running")


@dataclass
class Loaded:
    history: Recorded
    fleet: Fleet
    prometheus: str
    window: Window


@pytest.fixture(scope="module", params=CASES, ids=lambda case: case.name)
def loaded(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    django_db_setup: None,
    django_db_blocker: Any,
) -> Iterator[Loaded]:
    case: Case = request.param
    base = tmp_path_factory.mktemp(case.name)
    history = Recorded(**case.options)
    history.write_openmetrics(base / "history.om")
    with django_db_blocker.unblock():
        fleet = history_import(fleet_slug=case.name, path=base / "history.om").fleet
    window = Window(*(_at(history.start + 360.0), _at(END)), STEP)
    with running_remote_write_prometheus(base) as url:
        feed_scrapes(url, history.recorded)
        yield Loaded(history, fleet, url, window)
    with django_db_blocker.unblock():
        fleet.delete()


def _at(unix: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(unix, UTC)


def _specs() -> dict[str, Spec]:
    specs = {f"{p.id}/{trace}": spec for p in PANELS for trace, spec in p.traces.items()}
    specs.update({f"table/{name}": spec for name, spec in REPLICA_SPECS.items()})
    return specs


def _both(loaded: Loaded, specs: dict[str, Spec]) -> tuple[dict[str, QueryResult], ...]:
    scope = Scope(loaded.fleet)
    local = run_queries(specs, scope=scope, window=loaded.window, backend="local")
    with override_settings(PROMETHEUS_URL=loaded.prometheus):
        remote = run_queries(specs, scope=scope, window=loaded.window, backend="prometheus")
    return local, remote


def _floats(values: Any) -> list[float]:
    return [math.nan if v is None else float(v) for v in values or ()]


def test_both_backends_agree_point_by_point_on_every_panel_and_the_table(
    loaded: Loaded,
) -> None:
    local, remote = _both(loaded, _specs())
    for name in local:
        ours, theirs = local[name], remote[name]
        assert ours.status == theirs.status, (name, ours.warnings, theirs.warnings)
        assert [s.labels for s in ours.series] == [s.labels for s in theirs.series], name
        for a, b in zip(ours.series, theirs.series, strict=True):
            for side in ("values", "lower", "upper"):
                assert _floats(getattr(a, side)) == pytest.approx(
                    _floats(getattr(b, side)), rel=1e-6, abs=1e-9, nan_ok=True
                ), (name, side, a.labels)


def _served(loaded: Loaded, instance: str, name: str) -> dict[float, float]:
    """What the replica served for `name` (summed over its engines) at each scrape."""
    found: dict[float, float] = {}
    for unix, scrapes in loaded.history.recorded:
        for target, families in scrapes:
            if target.instance != instance or families is None:
                continue
            values = [v for f in families for s, _, v in f.samples if f.name + s == name]
            if values:
                found[unix] = sum(values) if "cache_usage" not in name else max(values)
    return found


def _clean_windows(loaded: Loaded, instance: str, counter: str) -> set[float]:
    """The steps whose 60 s rate window the replica served at every scrape without a
    counter reset: where a rate is exact. Elsewhere (a replica just back, a restart)
    Prometheus' extrapolation is the semantics both backends share, not the truth."""
    counts = _served(loaded, instance, counter)
    clean = set()
    for t in counts:
        window = [t - 60 + k * STEP for k in range(5)]
        if all(s in counts for s in window) and all(
            counts[b] >= counts[a] for a, b in zip(window, window[1:], strict=False)
        ):
            clean.add(t)
    return clean


def test_kv_usage_and_preemption_rates_are_exactly_what_the_replicas_served(
    loaded: Loaded,
) -> None:
    specs: dict[str, Spec] = {
        "kv": Gauge("kv_usage", agg="max", by=("instance",)),
        "preemptions": Rate("preemptions", by=("instance",), window_seconds=60),
    }
    steps = loaded.window.timestamps()
    for results in _both(loaded, specs):
        kv = {s.labels["instance"]: s for s in results["kv"].series}
        preempt = {s.labels["instance"]: s for s in results["preemptions"].series}
        for target in loaded.history.targets:
            if target.kind != "vllm":
                continue
            names = [n for n in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
                     if _served(loaded, target.instance, n)]  # fmt: skip
            assert names, f"{target.instance} served no KV usage"
            served = _served(loaded, target.instance, names[0])
            shown = dict(zip(steps, kv[target.instance].values, strict=True))
            for t, value in shown.items():
                if t in served and value is not None:
                    assert value == pytest.approx(served[t], abs=1e-12), (target.instance, t)
            counter = next(
                n for n in ("vllm:num_preemptions_total", "vllm:num_preemptions")
                if _served(loaded, target.instance, n)
            )  # fmt: skip
            counts = _served(loaded, target.instance, counter)
            rates = dict(zip(steps, preempt[target.instance].values, strict=True))
            clean = _clean_windows(loaded, target.instance, counter)
            for t, rate in rates.items():
                if rate is not None and t in clean:
                    delta = counts[t] - counts[t - 60]
                    assert rate == pytest.approx(delta / 60, abs=1e-12), (target.instance, t)


def test_each_replicas_ttft_p99_lies_inside_the_bucket_the_query_reports(
    loaded: Loaded,
) -> None:
    spec = Quantile("ttft", 0.99, by=("instance",), window_seconds=60)
    by_index = {
        t.replica: t.instance
        for t in loaded.history.targets
        if t.replica is not None and t.kind == "vllm"
    }
    requests = np.array(loaded.history.requests, dtype=float)
    checked = 0
    for results in _both(loaded, {"p99": spec}):
        for series in results["p99"].series:
            replica = next(i for i, inst in by_index.items() if inst == series.labels["instance"])
            mine = requests[requests[:, 0] == replica]
            clean = _clean_windows(
                loaded, series.labels["instance"], "vllm:time_to_first_token_seconds_count"
            )
            assert series.lower is not None and series.upper is not None
            clocks = loaded.history.clocks
            for t, lower, upper in zip(series.timestamps, series.lower, series.upper, strict=True):
                if t not in clocks or t - 60 not in clocks:
                    continue
                since, until = clocks[t - 60][replica], clocks[t][replica]
                inside = mine[(mine[:, 1] > since) & (mine[:, 1] <= until)][:, 2]
                if lower is None or not len(inside) or t not in clean:
                    continue
                truth = float(np.quantile(inside, 0.99, method="inverted_cdf"))
                top = math.inf if upper is None else upper
                assert lower <= truth <= top, (series.labels, t, lower, truth, upper)
                checked += 1
    assert checked > 0


def test_the_fleet_ttft_p99_lies_inside_its_bucket_on_the_edges_every_replica_has(
    loaded: Loaded,
) -> None:
    engines = [
        t.replica for t in loaded.history.targets if t.replica is not None and t.kind == "vllm"
    ]
    counts = [
        _clean_windows(loaded, t.instance, "vllm:time_to_first_token_seconds_count")
        for t in loaded.history.targets
        if t.kind == "vllm"
    ]
    clean = set.intersection(*counts)
    requests = np.array(loaded.history.requests, dtype=float)
    clocks = loaded.history.clocks
    checked = 0
    spec = Quantile("ttft", 0.99, window_seconds=60)
    for results in _both(loaded, {"p99": spec}):
        [series] = results["p99"].series
        assert series.lower is not None and series.upper is not None
        for t, lower, upper in zip(series.timestamps, series.lower, series.upper, strict=True):
            if lower is None or t not in clean:
                continue
            inside = np.concatenate([
                requests[(requests[:, 0] == i) & (requests[:, 1] > clocks[t - 60][i])
                         & (requests[:, 1] <= clocks[t][i])][:, 2]
                for i in engines
            ])  # fmt: skip
            truth = float(np.quantile(inside, 0.99, method="inverted_cdf"))
            assert lower <= truth <= (math.inf if upper is None else upper), (t, lower, truth)
            checked += 1
    assert checked > 0


def test_the_replica_table_covers_every_replica_and_flags_the_kv_incident(
    loaded: Loaded,
) -> None:
    during = _at(loaded.history.start + 780.0)
    kv_incident = loaded.history.manifest["incident"] == "kv-pressure"
    incident = next(t for t in loaded.history.targets if t.kind == "vllm" and t.replica == 1)
    backends: tuple[Backend, ...] = ("local", "prometheus")
    for backend in backends:
        with override_settings(PROMETHEUS_URL=loaded.prometheus):
            table = replica_table(loaded.fleet, end=during, backend=backend)
        rows = {row["instance"]: row for row in table["rows"]}
        # Every replica answering has every figure, whatever vLLM it runs.
        for row in rows.values():
            if row["state"] == "up":
                missing = [
                    c for c, v in row["values"].items() if v is None and c not in row["above"]
                ]
                assert not missing, (backend, row["instance"], missing)
        if kv_incident:  # the KV incident sits on replica 1, which runs v0
            assert rows[incident.instance]["values"]["kv"] > 0.9
            assert rows[incident.instance]["flags"].get("kv") == "high", (backend, rows)
