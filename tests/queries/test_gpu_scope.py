"""GPU panels scoped to replicas: a replica's page reads that replica's GPUs, a model filter
the GPUs of the replicas serving it, and every GPU series names the replica using it.

A simulated Kubernetes-style fleet (fleetsim: DCGM series with pod mapping, engine targets
with pod/namespace/node labels) is loaded into the embedded store and, by remote write,
into a real Prometheus; both backends must give the same GPUs, labels and values.
A hand-made exporter shared by two replicas checks that only the scope's GPUs are kept.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import override_settings

from dashboard.panels import PANELS, Group
from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import feed_scrapes
from fleetsim.history import History
from inventory.gpus import REPLICA_LABEL
from inventory.history import history_import
from inventory.models import Fleet
from queries import Gauge, QueryResult, Scope, Spec, Window, run_queries
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named

STEP = 15.0
END = math.floor(1_764_000_000 / STEP) * STEP
GPU_SPECS: dict[str, Spec] = {
    f"{p.id}/{trace}": spec
    for p in PANELS
    if p.group == Group.GPU and p.id.startswith("gpu.")
    for trace, spec in p.traces.items()
}


class Kept(History):
    """A History that keeps every scrape step, to remote-write them afterwards."""

    def __init__(self, **options: Any) -> None:
        super().__init__(hours=0.1, step=STEP, end=END, **options)
        self.recorded: list[Any] = []

    def scrapes(self) -> Iterator[tuple[float, list[Any]]]:
        for step in super().scrapes():
            self.recorded.append(step)
            yield step


@dataclass
class Loaded:
    history: Kept
    fleet: Fleet
    prometheus: str
    window: Window


@pytest.fixture(scope="module")
def loaded(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    base = tmp_path_factory.mktemp("gpu-scope")
    # Four replicas: the 70B one runs TP 4, and the 8B ones share an 8-GPU node.
    history = Kept(replicas=4, seed=5)
    history.write_openmetrics(base / "history.om")
    with django_db_blocker.unblock():
        fleet = history_import(fleet_slug="gpu-scope", path=base / "history.om").fleet
    window = Window(datetime.fromtimestamp(END - 120, UTC), datetime.fromtimestamp(END, UTC), STEP)
    with running_remote_write_prometheus(base) as url:
        feed_scrapes(url, history.recorded)
        yield Loaded(history, fleet, url, window)
    with django_db_blocker.unblock():
        fleet.delete()


def _both(loaded: Loaded, scope: Scope) -> tuple[dict[str, QueryResult], dict[str, QueryResult]]:
    local = run_queries(GPU_SPECS, scope=scope, window=loaded.window, backend="local")
    with override_settings(PROMETHEUS_URL=loaded.prometheus):
        remote = run_queries(GPU_SPECS, scope=scope, window=loaded.window, backend="prometheus")
    return local, remote


def _gpus(result: QueryResult) -> set[tuple[str, str, str]]:
    return {(s.labels["instance"], s.labels["gpu"], s.labels[REPLICA_LABEL]) for s in result.series}


def _expected(loaded: Loaded, replicas: list[int]) -> set[tuple[str, str, str]]:
    found = set()
    for i in replicas:
        replica = loaded.history.manifest["replicas"][i]
        name = f"{replica['pod']} ({replica['instances']['vllm']})"
        for slot in loaded.history.model.configs[i].gpus:
            found.add((replica["instances"]["dcgm"], str(slot.index), name))
    return found


def _agree(local: dict[str, QueryResult], remote: dict[str, QueryResult]) -> None:
    for name in GPU_SPECS:
        ours, theirs = local[name], remote[name]
        assert (ours.status, theirs.status) == ("ok", "ok"), (name, ours.message, theirs.message)
        assert [s.labels for s in ours.series] == [s.labels for s in theirs.series], name
        for a, b in zip(ours.series, theirs.series, strict=True):
            assert [math.nan if v is None else v for v in a.values] == pytest.approx(
                [math.nan if v is None else v for v in b.values], rel=1e-6, nan_ok=True
            ), (name, a.labels)


@pytest.mark.prometheus
@pytest.mark.django_db
def test_the_fleet_view_draws_one_line_per_gpu_named_by_its_replica(loaded: Loaded) -> None:
    local, remote = _both(loaded, Scope(loaded.fleet))
    _agree(local, remote)
    everyone = _expected(loaded, [0, 1, 2, 3])
    assert len(everyone) == sum(len(c.gpus) for c in loaded.history.model.configs) > 4
    for name in GPU_SPECS:
        assert _gpus(local[name]) == everyone, name


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("replica", [0, 1])
def test_a_replicas_page_reads_that_replicas_gpus_only(loaded: Loaded, replica: int) -> None:
    instance = loaded.history.manifest["replicas"][replica]["instances"]["vllm"]
    local, remote = _both(loaded, Scope(loaded.fleet, instances=(instance,)))
    _agree(local, remote)
    for name in GPU_SPECS:
        assert _gpus(local[name]) == _expected(loaded, [replica]), name


@pytest.mark.prometheus
@pytest.mark.django_db
def test_a_model_filter_reads_the_gpus_of_the_replicas_serving_it(loaded: Loaded) -> None:
    replicas = loaded.history.manifest["replicas"]
    model = replicas[0]["model_name"]
    serving = [r["index"] for r in replicas if r["model_name"] == model]
    assert 1 < len(serving) < len(replicas)
    local, remote = _both(loaded, Scope(loaded.fleet, model_name=model))
    _agree(local, remote)
    for name in GPU_SPECS:
        assert _gpus(local[name]) == _expected(loaded, serving), name


UTIL = "DCGM_FI_DEV_GPU_UTIL"
NS = "llm-serving"


def _shared_exporter_fleet() -> Fleet:
    """Two replicas on one node-wide exporter: GPU 0 is p1's, GPU 1 is p2's, GPU 2 idle."""
    fleet = fleet_named("shared-exporter")
    for instance, pod, value in (("e1:8000", "p1", 1.0), ("e2:8000", "p2", 2.0)):
        endpoint = endpoint_with_scrapes(
            fleet,
            instance,
            [
                (15 * i, [("vllm:num_requests_running", {"model_name": "m"}, value)])
                for i in range(5)
            ],
            types={"vllm:num_requests_running": "gauge"},
        )
        endpoint.labels = {"pod": pod, "namespace": NS, "node": "n1"}
        endpoint.save()
    samples = [
        (UTIL, {"gpu": "0", "Hostname": "n1", "pod": "p1", "namespace": NS}, 10.0),
        (UTIL, {"gpu": "1", "Hostname": "n1", "pod": "p2", "namespace": NS}, 20.0),
        (UTIL, {"gpu": "2", "Hostname": "n1"}, 0.0),
    ]
    endpoint_with_scrapes(
        fleet, "d:9400", [(15 * i, samples) for i in range(5)], types={UTIL: "gauge"},
        kind="dcgm",
    )  # fmt: skip
    return fleet


@pytest.mark.django_db
def test_a_shared_exporter_gives_a_replica_only_its_own_gpus() -> None:
    fleet = _shared_exporter_fleet()
    window = Window(at(30), at(60), 15)
    specs: dict[str, Spec] = {
        "per gpu": Gauge("gpu_util", agg="max", by=("instance", "gpu")),
        "per exporter": Gauge("gpu_util", agg="max", by=("instance",)),
    }

    def run(scope: Scope) -> dict[str, QueryResult]:
        return run_queries(specs, scope=scope, window=window, backend="local")

    fleet_wide = run(Scope(fleet))
    assert [(s.labels, s.values[-1]) for s in fleet_wide["per gpu"].series] == [
        ({"instance": "d:9400", "gpu": "0", REPLICA_LABEL: "p1 (e1:8000)"}, 10.0),
        ({"instance": "d:9400", "gpu": "1", REPLICA_LABEL: "p2 (e2:8000)"}, 20.0),
        ({"instance": "d:9400", "gpu": "2", REPLICA_LABEL: "unmatched"}, 0.0),
    ]
    assert [s.values[-1] for s in fleet_wide["per exporter"].series] == [20.0]

    mine = run(Scope(fleet, instances=("e2:8000",)))
    assert [(s.labels, s.values[-1]) for s in mine["per gpu"].series] == [
        ({"instance": "d:9400", "gpu": "1", REPLICA_LABEL: "p2 (e2:8000)"}, 20.0)
    ]
    # Folding the exporter's GPUs together would mix in p1's: refused, never mixed.
    refused = mine["per exporter"]
    assert (refused.status, refused.reason) == ("unavailable", "gpus-shared")
    assert "d:9400 also has GPUs of replicas outside this scope" in refused.message

    by_model = run(Scope(fleet, model_name="m"))
    assert [s.labels["gpu"] for s in by_model["per gpu"].series] == ["0", "1"]
    assert run(Scope(fleet, model_name="other"))["per gpu"].reason == "not-joined"


@pytest.mark.django_db
def test_a_replica_whose_gpus_nothing_joins_is_told_so_not_shown_an_empty_exporter() -> None:
    fleet = _shared_exporter_fleet()
    fleet.endpoints.filter(url="http://e1:8000/metrics").update(labels={"node": "n1"})
    result = run_queries(
        {"util": Gauge("gpu_util", agg="max", by=("instance", "gpu"))},
        scope=Scope(fleet, instances=("e1:8000",)),
        window=Window(at(30), at(60), 15),
        backend="local",
    )["util"]
    assert (result.status, result.reason) == ("unavailable", "not-joined")
    assert "none of the 3 GPUs of the fleet's DCGM exporters is joined" in result.message
    assert "d:9400 GPU 0: no engine endpoint has pod llm-serving/p1" in result.message
