"""Autoscalers: a KEDA ScaledObject's Prometheus trigger, an HPA external metric joined
to the prometheus-adapter rule that serves it, an HPA metric no rule serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from blindspots.promql import parse_selectors
from blindspots.sources import autoscalers_from_texts, autoscalers_from_yaml
from blindspots.types import Matcher

FIXTURES = Path(__file__).parent.parent / "fixtures"
KEDA = FIXTURES / "keda-scaledobject.yaml"
HPA = FIXTURES / "hpa-external.yaml"
ADAPTER = FIXTURES / "prometheus-adapter.yaml"


def test_a_keda_prometheus_trigger_is_an_item_with_its_server() -> None:
    items, errors = autoscalers_from_yaml(KEDA.read_text(), str(KEDA))
    assert errors == []
    [item] = items  # the cpu trigger has no PromQL
    assert item.kind == "autoscaler"
    assert item.name == "llama-engine"
    assert item.where == "ScaledObject inference/llama-engine, trigger 2 (queue)"
    assert item.expr == 'sum(vllm:num_requests_waiting{model_name="llama"})'
    assert item.datasource == "http://prometheus.monitoring:9090"


def test_an_hpa_external_metric_is_joined_to_the_adapter_rule_serving_it() -> None:
    items, errors = autoscalers_from_texts(
        [(HPA.read_text(), str(HPA)), (ADAPTER.read_text(), str(ADAPTER))]
    )
    [item] = items
    assert item.name == "mistral-engine"
    assert item.where == (
        "HorizontalPodAutoscaler inference/mistral-engine, metric 2 (external "
        f"vllm_num_requests_waiting) via prometheus-adapter externalRules[1] in {ADAPTER}"
    )
    [selector] = parse_selectors(item.expr)
    assert selector.metric == "vllm:num_requests_waiting"
    assert selector.matchers == (Matcher("model_name", "=", "mistral"),)
    assert selector.functions == ("sum",)
    [unserved] = errors
    assert unserved.where.endswith("metric 3 (external vllm_gpu_cache_usage)")
    assert unserved.reason == (
        "external metric vllm_gpu_cache_usage: no prometheus-adapter rule serves it"
    )


def test_an_hpa_without_any_adapter_rules_says_its_query_is_unknown() -> None:
    items, errors = autoscalers_from_yaml(HPA.read_text(), str(HPA))
    assert items == []
    assert len(errors) == 2
    assert "no prometheus-adapter rules given" in errors[0].reason


def test_a_renamed_series_with_an_exact_series_query_and_a_configmap_are_joined() -> None:
    config = ADAPTER.read_text().replace("\n", "\n    ")
    text = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: adapter-config, namespace: monitoring}}
data:
  config.yaml: |
    {config}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: running}}
spec:
  metrics:
    - type: External
      external:
        metric:
          name: vllm_running
          selector:
            matchExpressions:
              - {{key: model_name, operator: In, values: [llama, mistral]}}
"""
    items, errors = autoscalers_from_yaml(text, "all.yaml")
    assert errors == []
    [item] = items
    assert "rules[1]" in item.where
    [selector] = parse_selectors(item.expr)
    assert selector.metric == "vllm:num_requests_running"
    assert selector.matchers == (Matcher("model_name", "=~", "llama|mistral"),)


def test_a_multi_document_stream_and_a_kind_list_are_read() -> None:
    text = (
        KEDA.read_text()
        + "\n---\n"
        + (
            "apiVersion: v1\nkind: List\nitems:\n"
            "  - apiVersion: keda.sh/v1alpha1\n    kind: ScaledObject\n"
            "    metadata: {name: second}\n"
            "    spec:\n      triggers:\n        - type: prometheus\n"
            "          metadata: {serverAddress: 'http://p:9090', query: 'sum(up'}\n"
            "        - type: prometheus\n          metadata: {serverAddress: 'http://p:9090'}\n"
        )
    )
    items, errors = autoscalers_from_yaml(text, "many.yaml")
    assert [i.name for i in items] == ["llama-engine"]
    assert sorted((e.name, e.reason.split(" at ")[0]) for e in errors) == [
        ("second", "the trigger has no `query`"),
        ("second", "unclosed left parenthesis"),
    ]


@pytest.mark.parametrize("text", ["kind: [unclosed", "a: b\n  c: d\n"])
def test_malformed_yaml_is_one_error_of_the_file(text: str) -> None:
    items, [error] = autoscalers_from_yaml(text, "broken.yaml")
    assert items == []
    assert (error.kind, error.where) == ("file", "broken.yaml")
    assert error.reason.startswith("malformed YAML")
