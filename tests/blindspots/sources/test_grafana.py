"""Grafana dashboards: panels at the top, in open and collapsed rows, in the old `rows`
schema and in library panels; the datasource named; template variables with their values;
a Loki panel and bad PromQL reported per panel; 10,000 panels read in one pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from blindspots.promql import parse_selectors
from blindspots.sources import panels_from_dashboard
from blindspots.types import Matcher

FIXTURES = Path(__file__).parent.parent / "fixtures"
DASHBOARD = FIXTURES / "vllm-dashboard.json"


def read(data: Any = None) -> tuple[list[Any], list[Any]]:
    text = DASHBOARD.read_text() if data is None else json.dumps(data)
    return panels_from_dashboard(text, "dash.json")


def test_each_panel_query_is_an_item_placed_in_its_dashboard_row_and_panel() -> None:
    items, _ = read()
    assert [i.where for i in items] == [
        "dashboard vLLM fleet > panel Requests running (id 1), query A",
        "dashboard vLLM fleet > row Latency > panel E2E latency p99 (id 11), query A",
        "dashboard vLLM fleet > row Latency > panel E2E latency p99 (id 11), query B, hidden",
        "dashboard vLLM fleet > row KV cache > panel KV cache usage (id 21), query A",
    ]
    assert {i.kind for i in items} == {"panel"}
    assert items[1].name == "E2E latency p99"


def test_a_collapsed_row_keeps_its_panels_queries() -> None:
    items, _ = read()
    [cache] = [i for i in items if "row KV cache" in i.where]
    [selector] = parse_selectors(cache.expr, cache.variables)
    assert selector.metric == "vllm:gpu_cache_usage_perc"
    assert selector.matchers == (Matcher("instance", "=~", ".*", from_variable=True),)


def test_the_datasource_is_named_as_the_dashboard_names_it() -> None:
    items, _ = read()
    assert [i.datasource for i in items] == ["${DS_PROMETHEUS}", "${ds}", "${ds}", "prom-main"]


def test_template_variables_carry_their_possible_values() -> None:
    items, _ = read()
    variables = items[0].variables
    assert variables["model"] == ("llama", "mistral")
    assert variables["instance"] == ()  # includeAll: any value
    assert variables["quantile"] == ("0.5", "0.9", "0.99")
    assert variables["window"] == ("1m", "5m", "10m")
    [selector] = parse_selectors(items[1].expr, items[1].variables)
    assert selector.functions == ("rate", "sum", "histogram_quantile")
    assert selector.matchers == (
        Matcher("model_name", "=~", "(llama|mistral)", from_variable=True),
    )


def test_a_loki_panel_and_bad_promql_are_errors_of_their_panel() -> None:
    _, errors = read()
    assert [(e.kind, e.name, e.where, e.reason) for e in errors] == [
        (
            "panel",
            "Engine logs",
            "dashboard vLLM fleet > row KV cache > panel Engine logs (id 22)",
            "datasource loki: not PromQL",
        ),
        (
            "panel",
            "Broken panel",
            "dashboard vLLM fleet > row KV cache > panel Broken panel (id 23), query A",
            "unclosed left parenthesis at line 1, column 4 (near '(')",
        ),
    ]


def panel(number: int, expr: str, **extra: Any) -> dict[str, Any]:
    return {"id": number, "type": "timeseries", "title": f"p{number}", **extra,
            "targets": [{"refId": "A", "expr": expr}]}  # fmt: skip


def test_the_provisioning_wrapper_open_rows_and_the_old_rows_schema_are_read() -> None:
    data = {
        "dashboard": {
            "title": "old",
            "rows": [{"title": "Engines", "panels": [panel(1, "up")]}],
            "panels": [
                {"type": "row", "title": "Open", "collapsed": False, "panels": []},
                panel(2, "vllm:num_requests_running"),
            ],
        },
        "overwrite": True,
    }
    items, errors = read(data)
    assert errors == []
    assert [i.where for i in items] == [
        "dashboard old > row Engines > panel p1 (id 1), query A",
        "dashboard old > row Open > panel p2 (id 2), query A",
    ]


def test_a_library_panel_is_read_from_its_model_or_reported_without_one() -> None:
    data = {
        "title": "lib",
        "panels": [
            {"id": 1, "title": "shared", "libraryPanel": {"uid": "u1", "name": "Queue",
             "model": panel(1, "sum(vllm:num_requests_waiting)")}},
            {"id": 2, "title": "linked", "libraryPanel": {"uid": "u2", "name": "Cache"}},
        ],
    }  # fmt: skip
    items, errors = read(data)
    assert [i.expr for i in items] == ["sum(vllm:num_requests_waiting)"]
    [error] = errors
    assert error.reason == "library panel Cache: its queries are not in the dashboard JSON"


def test_a_mixed_panel_reads_each_targets_own_datasource() -> None:
    mixed = {
        "id": 1,
        "title": "mixed",
        "datasource": {"type": "datasource", "uid": "-- Mixed --"},
        "targets": [
            {"refId": "A", "expr": "up", "datasource": {"type": "prometheus", "uid": "p"}},
            {"refId": "B", "expr": '{app="x"}', "datasource": {"type": "loki", "uid": "l"}},
            {"refId": "C", "expr": "up", "datasource": "Thanos"},
        ],
    }
    items, errors = read({"title": "m", "panels": [mixed]})
    assert [(i.where[-7:], i.datasource) for i in items] == [
        ("query A", "p"),
        ("query C", "Thanos"),
    ]
    [error] = errors
    assert error.where.endswith("query B") and error.reason == "datasource loki: not PromQL"


def test_malformed_json_and_a_json_that_is_no_dashboard_are_one_error() -> None:
    _, [malformed] = panels_from_dashboard('{"title": "x", "panels": [', "x.json")
    assert malformed.kind == "file" and malformed.reason.startswith("malformed JSON")
    assert "line 1" in malformed.reason
    _, [other] = panels_from_dashboard('{"groups": []}', "y.json")
    assert other.reason == "not a Grafana dashboard: no panels"


def test_ten_thousand_panels_are_all_read() -> None:
    rows = [
        {"type": "row", "title": f"row {r}", "collapsed": True, "panels": [
            panel(r * 100 + i, f'sum(rate(vllm:request_success_total{{model_name="m{r}-{i}"}}'
                  "[$__rate_interval]))")
            for i in range(100)
        ]}
        for r in range(100)
    ]  # fmt: skip
    items, errors = read({"title": "huge", "panels": rows})
    assert errors == []
    assert len(items) == 10_000
    assert items[-1].where == "dashboard huge > row row 99 > panel p9999 (id 9999), query A"
