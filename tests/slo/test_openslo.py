"""OpenSLO v1: an export imports back field for field; a bad file imports nothing."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from inventory.models import Fleet
from slo.models import Objective, Slo
from slo.openslo import MAX_BYTES, MAX_DOCUMENTS, OpenSloError, slo_export_text, slo_import_text
from slo.services import ObjectiveInput, slo_create, slo_from_preset
from tests.slo.conftest import engine_instances

pytestmark = pytest.mark.django_db

SLO_FIELDS = (
    "slug", "name", "description", "model_name", "instances", "window_days", "owner",
    "runbook_url", "bad_finish_reasons", "min_requests_to_page", "min_bad_events",
)  # fmt: skip


def snapshot(fleet: Fleet) -> dict[str, Any]:
    """Every stored field of the fleet's SLOs and objectives, by slug."""
    return {
        slo.slug: (
            {name: getattr(slo, name) for name in SLO_FIELDS},
            sorted((o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()),
        )
        for slo in Slo.objects.filter(fleet=fleet)
    }


def latency_document(name: str = "chat-latency", **spec: Any) -> dict[str, Any]:
    """An OpenSLO SLO as another tool would write it: no fleetscope.io labels."""
    query = (
        "histogram_quantile(0.99, sum by (le) "
        '(rate(vllm:time_to_first_token_seconds_bucket{model_name="x"}[5m])))'
    )
    objective = {"displayName": "fast first token", "op": "lte", "value": 0.25, "target": 0.995}
    return {
        "apiVersion": "openslo/v1",
        "kind": "SLO",
        "metadata": {"name": name, "displayName": "Chat latency"},
        "spec": {
            "service": "prod",
            "indicator": {
                "metadata": {"name": "ttft-p99"},
                "spec": {
                    "thresholdMetric": {
                        "metricSource": {"type": "Prometheus", "spec": {"query": query}}
                    }
                },
            },
            "timeWindow": [{"duration": "4w", "isRolling": True}],
            "budgetingMethod": "Occurrences",
            "objectives": [objective],
        }
        | spec,
    }


def dump(*documents: Any) -> str:
    return yaml.safe_dump_all(documents, sort_keys=False)


def refused(text: str, **options: Any) -> str:
    with pytest.raises(OpenSloError) as caught:
        slo_import_text(text, **options)
    assert not Slo.objects.exists()
    assert not Objective.objects.exists()
    return str(caught.value)


def test_export_then_import_gives_back_every_field(fleet: Fleet) -> None:
    first, _ = engine_instances(fleet)
    slo_create(
        fleet=fleet,
        name="Chat: latency & success",
        objectives=[
            ObjectiveInput("ttft", 0.2, 0.999),
            ObjectiveInput("itl", 0.05, 0.99),
            ObjectiveInput("tpot", 0.03, 0.95),
            ObjectiveInput("e2e", 12.5, 0.9),
            ObjectiveInput("success", None, 0.9995),
        ],
        window_days=30,
        model_name="meta-llama/Llama-3.1-8B-Instruct",
        instances=[first],
        owner="inference-team",
        runbook_url="https://runbooks.example.com/chat?x=1",
        bad_finish_reasons=["abort", "error", "repetition"],
        description="Streams read by people.\nSecond line.",
        min_requests_to_page=250,
        min_bad_events=0,
    )
    slo_from_preset(fleet, "rag")
    before = snapshot(fleet)
    text = slo_export_text(fleet=fleet)
    Slo.objects.all().delete()
    created = slo_import_text(text)
    assert len(created) == 2
    assert snapshot(fleet) == before
    assert slo_export_text(fleet=fleet) == text


def test_export_writes_one_openslo_document_per_slo(fleet: Fleet) -> None:
    slo_from_preset(fleet, "chat")
    slo_from_preset(fleet, "batch")
    batch, chat = yaml.safe_load_all(slo_export_text(fleet=fleet))
    assert (chat["apiVersion"], chat["kind"], chat["metadata"]["name"]) == (
        "openslo/v1",
        "SLO",
        "chat",
    )
    spec = chat["spec"]
    assert spec["service"] == "prod"
    assert spec["budgetingMethod"] == "Occurrences"
    assert spec["timeWindow"] == [{"duration": "28d", "isRolling": True}]
    ttft, itl = spec["objectives"]
    assert (ttft["op"], ttft["value"], ttft["target"]) == ("lte", 0.2, 0.99)
    assert ttft["indicator"]["metadata"]["labels"] == {"fleetscope.io/kind": "ttft"}
    source = ttft["indicator"]["spec"]["thresholdMetric"]["metricSource"]
    assert source == {
        "type": "Prometheus",
        "spec": {"query": "vllm:time_to_first_token_seconds_bucket"},
    }
    assert itl["indicator"]["metadata"]["name"] == "chat-itl"
    # A single objective's indicator sits at spec.indicator, where most tools look.
    (success,) = batch["spec"]["objectives"]
    assert success == {"displayName": "success ratio", "target": 0.99}
    ratio = batch["spec"]["indicator"]["spec"]["ratioMetric"]
    assert (
        ratio["total"]["metricSource"]["spec"]["query"]
        == "sum(rate(vllm:request_success_total[5m]))"
    )
    assert batch["metadata"]["annotations"]["fleetscope.io/bad-finish-reasons"] == "abort,error"


def test_a_plain_openslo_threshold_on_a_latency_histogram_imports(fleet: Fleet) -> None:
    (slo,) = slo_import_text(dump(latency_document()))
    assert (slo.fleet, slo.slug, slo.name, slo.window_days) == (
        fleet,
        "chat-latency",
        "Chat latency",
        28,
    )
    assert slo.bad_finish_reasons == ["abort", "error"]
    assert [(o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()] == [
        ("ttft", 0.25, 0.995)
    ]


def test_a_plain_openslo_good_over_total_ratio_on_request_success_imports(fleet: Fleet) -> None:
    def source(query: str) -> dict[str, Any]:
        return {"metricSource": {"type": "prometheus", "spec": {"query": query}}}

    indicator = {
        "metadata": {"name": "ok"},
        "spec": {
            "ratioMetric": {
                "counter": True,
                "good": source('sum(rate(vllm:request_success_total{finished_reason="stop"}[1m]))'),
                "total": source("sum(rate(vllm:request_success_total[1m]))"),
            }
        },
    }
    document = latency_document(indicator=indicator, objectives=[{"targetPercent": 99.5}])
    (slo,) = slo_import_text(dump(document))
    assert [(o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()] == [
        ("success", None, 0.995)
    ]


def test_import_into_a_named_fleet_ignores_spec_service(fleet: Fleet, old_fleet: Fleet) -> None:
    (slo,) = slo_import_text(dump(latency_document()), fleet=old_fleet)
    assert slo.fleet == old_fleet


def test_a_second_bad_document_imports_nothing(fleet: Fleet) -> None:
    raw = latency_document("second")
    raw["spec"]["indicator"]["spec"] = {
        "ratioMetric": {"counter": True, "rawType": "success", "raw": {"metricSource": {}}}
    }
    message = refused(dump(latency_document(), raw))
    assert message == (
        "document 2 (second): spec.indicator: unsupported SLI kind 'RatioMetric with raw source'"
    )


def test_an_unsupported_sli_on_an_objective_names_the_objective(fleet: Fleet) -> None:
    slo_from_preset(fleet, "chat")
    text = slo_export_text(fleet=fleet).replace(
        "vllm:inter_token_latency_seconds_bucket", "vllm:num_requests_running"
    )
    text = text.replace("fleetscope.io/kind: itl", "team: a")
    Slo.objects.all().delete()
    assert refused(text) == (
        "document 1 (chat): spec.objectives[1].indicator: unsupported SLI kind "
        "'thresholdMetric on vllm:num_requests_running'"
    )


def test_malformed_yaml_names_the_document_and_line(fleet: Fleet) -> None:
    text = dump(latency_document()) + "---\nkind: SLO\nmetadata: {name: [unclosed\n"
    message = refused(text)
    assert message.startswith("document 2: not valid YAML at line ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "Service"}, "kind: 'Service' documents are not imported; only kind: SLO"),
        (
            {"apiVersion": "openslo/v1alpha"},
            "apiVersion: 'openslo/v1alpha' is not read; FleetScope reads openslo/v1",
        ),
        ({"spec": None}, "spec: missing"),
    ],
)
def test_import_rejects_a_document_of_another_kind(
    fleet: Fleet, change: dict[str, Any], message: str
) -> None:
    assert refused(dump(latency_document() | change)) == f"document 1 (chat-latency): {message}"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"service": "nowhere"}, "spec.service: no fleet 'nowhere'"),
        (
            {"budgetingMethod": "Timeslices"},
            "spec.budgetingMethod: 'Timeslices' is not supported; FleetScope counts Occurrences",
        ),
        ({"budgetingMethod": None}, "spec.budgetingMethod: missing"),
        (
            {"timeWindow": [{"duration": "1M", "isRolling": False}]},
            "spec.timeWindow[0].isRolling: FleetScope keeps rolling windows only",
        ),
        (
            {"timeWindow": [{"duration": "14d", "isRolling": True}]},
            "spec.timeWindow[0].duration: 14 is not a window FleetScope keeps; use 7, 28, 30 days",
        ),
        (
            {"objectives": [{"op": "lte", "value": 0.25, "target": 1.0}]},
            "spec.objectives[0].target: a target of 100% leaves no error budget; "
            "use at most 99.999%",
        ),
        (
            {"objectives": [{"op": "lte", "value": 0, "target": 0.9}]},
            "spec.objectives[0].value: must be more than 0 seconds, not 0",
        ),
        (
            {"objectives": [{"op": "gte", "value": 0.2, "target": 0.9}]},
            "spec.objectives[0].op: 'gte': latency objectives count values <= value; use lte",
        ),
        ({"objectives": [{"op": "lte", "value": 0.2}]}, "spec.objectives[0].target: missing"),
        (
            {"objectives": [{"op": "lte", "value": 0.2, "target": 0.9}] * 2},
            "spec.objectives[1].indicator: objectives[0] is already a ttft "
            "objective; an SLO holds at most one objective of each kind",
        ),
        ({"indicator": None}, "spec.objectives[0].indicator: missing (and no spec.indicator)"),
    ],
)
def test_import_rejects_a_bad_field_naming_it(
    fleet: Fleet, spec: dict[str, Any], message: str
) -> None:
    assert refused(dump(latency_document(**spec))) == f"document 1 (chat-latency): {message}"


def test_import_refuses_an_slo_on_a_metric_the_fleet_lacks(old_fleet: Fleet) -> None:
    document = latency_document(service="legacy")
    query = document["spec"]["indicator"]["spec"]["thresholdMetric"]["metricSource"]["spec"]
    query["query"] = "vllm:request_time_per_output_token_seconds_bucket"
    assert refused(dump(document)).startswith(
        "document 1 (chat-latency): spec.objectives[0].indicator: this fleet does not expose tpot: "
    )


def test_two_documents_with_one_name_import_nothing(fleet: Fleet) -> None:
    assert refused(dump(latency_document(), latency_document())) == (
        "document 2 (chat-latency): metadata.name: fleet prod already has an SLO "
        "'chat-latency'; pick another slug"
    )


def test_an_slo_already_in_the_fleet_is_not_imported_twice(fleet: Fleet) -> None:
    slo_import_text(dump(latency_document()))
    with pytest.raises(OpenSloError, match="already has an SLO 'chat-latency'"):
        slo_import_text(dump(latency_document("other"), latency_document()))
    assert list(Slo.objects.values_list("slug", flat=True)) == ["chat-latency"]


def test_import_refuses_a_file_over_the_size_limit(fleet: Fleet) -> None:
    text = dump(latency_document()) + "#" * MAX_BYTES
    assert refused(text) == f"the file is larger than {MAX_BYTES} bytes"


def test_import_refuses_an_empty_file(fleet: Fleet) -> None:
    assert refused("---\n") == "the file holds no OpenSLO document"


def test_import_refuses_too_many_documents(fleet: Fleet) -> None:
    text = dump(latency_document()) + "---\n" * MAX_DOCUMENTS
    assert refused(text) == f"more than {MAX_DOCUMENTS} documents in one file"


def test_import_refuses_a_document_nested_too_deeply(fleet: Fleet) -> None:
    text = dump(latency_document()) + "---\n" + "[" * 100_000 + "]" * 100_000 + "\n"
    assert refused(text) == "document 2: nested too deeply"
