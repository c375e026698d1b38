"""The GPU join: which DCGM GPU serves which vLLM replica, by its documented precedence."""

from __future__ import annotations

import pytest

from fleetsim.fleet import FleetModel
from fleetsim.targets import Slot, make_target
from inventory.gpus import (
    UNMATCHED,
    Engine,
    Gpu,
    gpu_join,
    gpus_from_series,
    parse_explicit,
)

NS = "llm-serving"


def engine(instance: str, **labels: str) -> Engine:
    return Engine(instance, labels)


def gpu(index: str, *, exporter: str = "d:9400", host: str = "node-a", pod: str = "") -> Gpu:
    return Gpu(exporter, index, f"GPU-{exporter}-{index}", host, ((NS, pod),) if pod else ())


def test_explicit_label_beats_pod_which_beats_node() -> None:
    engines = [
        engine("e1:8000", pod="p1", namespace=NS, node="node-a", gpus="d:9400/1"),
        engine("e2:8000", pod="p2", namespace=NS, node="node-b"),
        engine("e3:8000", node="node-c"),
    ]
    gpus = [
        gpu("0", pod="p2"),  # pod mapping: e2
        gpu("1", pod="p2"),  # pod says e2, but e1's explicit label claims it
        gpu("0", exporter="c:9400", host="node-c"),  # no pod mapping on c: node decides
    ]
    joined = gpu_join(engines, gpus)
    found = {(a.gpu.exporter, a.gpu.index): (a.replica, a.rule) for a in joined.assignments}
    assert found == {
        ("d:9400", "0"): ("e2:8000", "pod"),
        ("d:9400", "1"): ("e1:8000", "explicit"),
        ("c:9400", "0"): ("e3:8000", "node"),
    }
    assert joined.gpus_of({"e2:8000"}) == {"d:9400": frozenset({"0"})}
    assert joined.replica_name("d:9400", "1") == "p1 (e1:8000)"
    assert joined.replica_name("c:9400", "0") == "e3:8000"
    assert joined.unmatched == () and joined.problems == ()


def test_gpus_no_rule_ties_to_one_replica_are_listed_unmatched_with_why() -> None:
    engines = [
        engine("a:8000", node="shared", gpus="x:9400/0"),
        engine("b:8000", node="shared", gpus="x:9400"),
        engine("c:8000", pod="p", namespace=NS),
        engine("c2:8000", pod="p", namespace=NS),
    ]
    gpus = [
        gpu("0", exporter="x:9400"),  # claimed explicitly twice
        gpu("1", exporter="y:9400", host="shared"),  # its node runs two replicas
        gpu("0", exporter="z:9400", pod="p"),  # two engine endpoints have pod p
        gpu("1", exporter="z:9400"),  # exporter maps pods, this GPU has none: idle
        gpu("0", exporter="w:9400", pod="gone"),  # no such pod
        Gpu("v:9400", "0", pods=((NS, "p"), (NS, "q"))),  # shared by two pods (MIG)
        gpu("0", exporter="u:9400", host=""),  # nothing to join on
    ]
    joined = gpu_join(engines, gpus)
    why = {(a.gpu.exporter, a.gpu.index): a.why for a in joined.unmatched}
    assert why == {
        ("x:9400", "0"): "claimed by a:8000, b:8000 (gpus)",
        ("y:9400", "1"): "node shared runs 2 engine endpoints",
        ("z:9400", "0"): f"pod {NS}/p has engine endpoints c:8000, c2:8000",
        ("z:9400", "1"): "no pod uses it (its exporter maps pods)",
        ("w:9400", "0"): f"no engine endpoint has pod {NS}/gone",
        ("v:9400", "0"): f"its series name several pods: {NS}/p, {NS}/q",
        ("u:9400", "0"): "its series carry no pod and no host name",
    }
    assert all(a.replica is None and a.rule is None for a in joined.assignments)
    assert joined.replica_name("x:9400", "0") == UNMATCHED
    assert joined.replica_name("x:9400", "7") is None  # not a GPU the exporters show


def test_an_explicit_label_naming_what_no_exporter_shows_is_a_problem_not_a_guess() -> None:
    engines = [
        engine("a:8000", gpus="d:9400/0,5;nowhere:9400/0"),
        engine("b:8000", gpus="d:9400/zero"),
    ]
    joined = gpu_join(engines, [gpu("0")])
    assert [(a.replica, a.rule) for a in joined.assignments] == [("a:8000", "explicit")]
    assert joined.problems == (
        "a:8000: label gpus names GPU 5 of d:9400, which its series do not show",
        "a:8000: label gpus names nowhere:9400, which is no DCGM exporter of this fleet with GPUs",
        "b:8000: label gpus='d:9400/zero': 'd:9400/zero': GPU indices are numbers "
        "separated by commas",
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("10.0.0.5:9400/0,1", {"10.0.0.5:9400": frozenset({"0", "1"})}),
        ("a:1/0; b:2/3 ;", {"a:1": frozenset({"0"}), "b:2": frozenset({"3"})}),
        ("a:1", {"a:1": None}),
        ("a:1/0;a:1/2", {"a:1": frozenset({"0", "2"})}),
        ("a:1;a:1/2", {"a:1": None}),
    ],
)
def test_the_explicit_label_format(text: str, parsed: dict) -> None:
    assert parse_explicit(text) == parsed


@pytest.mark.parametrize("text", ["/0", "a:1/", "a:1/0,,1", "a b/0"])
def test_malformed_explicit_labels_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_explicit(text)


def test_gpus_are_read_from_series_with_either_spelling_of_host_and_pod_labels() -> None:
    series = [
        {"gpu": "1", "UUID": "GPU-b", "hostname": "n1", "pod_name": "p", "pod_namespace": NS},
        {"gpu": "0", "UUID": "GPU-a", "Hostname": "n1", "pod": "p", "namespace": NS},
        {"gpu": "0", "UUID": "GPU-a", "Hostname": "n1", "pod": "p", "namespace": NS},
        {"nvswitch": "0", "Hostname": "n1"},  # not a GPU's series
    ]
    assert gpus_from_series("d:9400", series) == [
        Gpu("d:9400", "0", "GPU-a", "n1", ((NS, "p"),)),
        Gpu("d:9400", "1", "GPU-b", "n1", ((NS, "p"),)),
    ]


def test_fleetsim_dcgm_series_join_to_their_replica_by_pod_as_a_kubernetes_fleet_would() -> None:
    # Replicas share nodes (GPUs are packed onto 8-GPU nodes), so only the pod rule can
    # tie them; the file_sd labels of the engine targets are what service discovery gives.
    fleet = FleetModel(replicas=4, seed=3)
    engines, gpus = [], []
    for i, (replica, exporter) in enumerate(zip(fleet.replicas, fleet.dcgm, strict=True)):
        vllm = make_target(fleet, Slot("vllm", i, 18000 + i), 18000 + i)
        dcgm = make_target(fleet, Slot("dcgm", i, 19000 + i), 19000 + i)
        assert {k: vllm.labels[k] for k in ("pod", "namespace", "node")} == {
            "pod": replica.cfg.pod, "namespace": NS, "node": replica.cfg.node
        }  # fmt: skip
        engines.append(Engine(vllm.instance, vllm.labels))
        series = [dict(labels) for f in exporter.families() for _, labels, _ in f.samples]
        for labels in series:
            assert {"gpu", "UUID", "device", "modelName", "Hostname"} <= labels.keys()
            assert (labels["pod"], labels["namespace"], labels["container"]) == (
                replica.cfg.pod, NS, "vllm"
            )  # fmt: skip
        gpus += gpus_from_series(dcgm.instance, series)
    joined = gpu_join(engines, gpus)
    assert joined.unmatched == ()
    for i, replica in enumerate(fleet.replicas):
        mine = [a for a in joined.assignments if a.replica == f"127.0.0.1:{18000 + i}"]
        assert {a.gpu.uuid for a in mine} == {slot.uuid for slot in replica.cfg.gpus}
        assert {a.rule for a in mine} == {"pod"}
