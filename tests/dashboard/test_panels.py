"""The overview's panel declarations, and the newer panels drawn from hand-made scrapes."""

from __future__ import annotations

import pytest

from dashboard.overview import OverviewRequest, overview_compute, overview_json
from dashboard.panels import NVLINK_UNIT, PANELS_BY_ID, Group, Panel
from inventory.catalog import CATALOG
from inventory.models import Fleet
from queries import Gauge, Quantile, Rate, Spec, Window, spec_keys
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram

M = {"model_name": "llama", "engine": "0"}
NVLINK = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
ENGINE_TYPES = {
    "vllm:request_prompt_tokens": "histogram",
    "vllm:request_generation_tokens": "histogram",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:request_prefill_time_seconds": "histogram",
    "vllm:request_decode_time_seconds": "histogram",
    "vllm:iteration_tokens_total": "histogram",
    "vllm:prompt_tokens_by_source": "counter",
    "vllm:num_requests_waiting_by_reason": "gauge",
    "process_resident_memory_bytes": "gauge",
}
NEW_PANELS = {
    "traffic.prompt_len": "heatmap",
    "traffic.output_len": "heatmap",
    "queue.reasons": "stacked",
    "latency.ttft_heatmap": "heatmap",
    "latency.e2e_heatmap": "heatmap",
    "latency.phases": "stacked",
    "engine.sources": "stacked",
    "engine.iteration": "line",
    "engine.spec_decode": "line",
    "engine.spec_length": "line",
    "gpu.nvlink": "line",
    "platform.memory": "line",
}


def test_the_new_panels_are_declared_with_their_kind() -> None:
    assert {id: PANELS_BY_ID[id].kind for id in NEW_PANELS} == NEW_PANELS
    assert PANELS_BY_ID["traffic.requests"].kind == "line"


def test_the_phase_split_stacks_queue_then_prefill_then_decode() -> None:
    phases = PANELS_BY_ID["latency.phases"]
    assert list(phases.traces) == ["queue", "prefill", "decode"]
    assert [spec_keys(spec)[0] for spec in phases.traces.values()] == [
        "queue_time",
        "prefill_time",
        "decode_time",
    ]


def test_a_heatmap_panel_takes_exactly_one_bucket_rate() -> None:
    def heatmap(traces: dict[str, Spec]) -> Panel:
        return Panel("x", Group.TRAFFIC, "x", "tokens", traces, kind="heatmap")

    heatmap({"per bucket": Rate("prompt_len", by=("le",))})
    with pytest.raises(ValueError, match="one Rate"):
        heatmap({"p50": Quantile("prompt_len", 0.5)})
    with pytest.raises(ValueError, match="one Rate"):
        heatmap({"per bucket": Rate("prompt_len")})
    with pytest.raises(ValueError, match="kind must be one of"):
        Panel("x", Group.TRAFFIC, "x", "tokens", {}, kind="pie")  # type: ignore[arg-type]  # bad kind on purpose


def engine_scrape(i: int) -> list:
    """Scrape number i: six requests finish every 15 s, in fixed buckets."""
    n = 6 * i
    return [
        *histogram("vllm:request_prompt_tokens", M, {"1": 0, "10": 2 * i, "100": 5 * i, "+Inf": n}),
        *histogram("vllm:request_generation_tokens", M, {"100": 3 * i, "+Inf": n}),
        *histogram("vllm:time_to_first_token_seconds", M, {"0.1": 3 * i, "1": n, "+Inf": n}),
        *histogram("vllm:e2e_request_latency_seconds", M, {"10": n, "+Inf": n}),
        *histogram("vllm:request_queue_time_seconds", M, {"1": n, "+Inf": n}, 0.5 * n),
        *histogram("vllm:request_prefill_time_seconds", M, {"1": n, "+Inf": n}, 0.25 * n),
        *histogram("vllm:request_decode_time_seconds", M, {"10": n, "+Inf": n}, 2.0 * n),
        *histogram("vllm:iteration_tokens_total", M, {"8": 10 * i, "16": 20 * i, "+Inf": 20 * i}),
        ("vllm:prompt_tokens_by_source_total", {**M, "source": "local_compute"}, 300.0 * i),
        ("vllm:prompt_tokens_by_source_total", {**M, "source": "local_cache_hit"}, 150.0 * i),
        ("vllm:num_requests_waiting_by_reason", {**M, "reason": "capacity"}, 3.0),
        ("vllm:num_requests_waiting_by_reason", {**M, "reason": "deferred"}, 1.0),
        ("process_resident_memory_bytes", {}, 2.0e9),
    ]


def hand_made_fleet() -> Fleet:
    fleet = fleet_named()
    scrapes = range(9)  # 0 s .. 120 s
    endpoint_with_scrapes(
        fleet, "a:1", [(15 * i, engine_scrape(i)) for i in scrapes], types=ENGINE_TYPES
    )
    endpoint_with_scrapes(
        fleet,
        "d:9400",
        [(15 * i, [(NVLINK, {"gpu": "0"}, 1500.0 * i)]) for i in scrapes],
        types={NVLINK: "counter"},
        kind="dcgm",
    )
    return fleet


@pytest.mark.django_db
def test_the_new_panels_are_drawn_from_the_embedded_store_with_exact_numbers() -> None:
    fleet = hand_made_fleet()
    window = Window(at(60), at(120), 30)
    payload = overview_compute(OverviewRequest(fleet, window, "local"))
    by_id = {p["id"]: p for p in payload["panels"]}

    for id in set(NEW_PANELS) - {"engine.spec_decode", "engine.spec_length"}:
        assert by_id[id]["status"] == "ok", (id, by_id[id]["notes"])
        assert by_id[id]["figure"]["data"], id

    (prompt,) = by_id["traffic.prompt_len"]["figure"]["data"]
    assert prompt["type"] == "heatmap"
    assert prompt["y"] == ["≤1", "≤10", "≤100", "+Inf"]
    # 6 requests per 15 s: 0, 2, 3 and 1 of them in the four buckets, per second.
    assert [row[-1] for row in prompt["z"]] == pytest.approx([0, 2 / 15, 3 / 15, 1 / 15])

    phases = by_id["latency.phases"]["figure"]["data"]
    assert [t["name"] for t in phases] == ["queue", "prefill", "decode"]
    assert {t["stackgroup"] for t in phases} == {"run0"}
    assert [t["y"] for t in phases] == [[0.5] * 3, [0.25] * 3, [2.0] * 3]

    sources = by_id["engine.sources"]["figure"]["data"]
    assert [(t["name"], t["y"][-1]) for t in sources] == [
        ("source=local_cache_hit", pytest.approx(10.0)),
        ("source=local_compute", pytest.approx(20.0)),
    ]
    reasons = by_id["queue.reasons"]["figure"]["data"]
    assert [(t["name"], t["y"]) for t in reasons] == [
        ("reason=capacity", [3.0] * 3),
        ("reason=deferred", [1.0] * 3),
    ]
    (nvlink,) = by_id["gpu.nvlink"]["figure"]["data"]
    assert nvlink["y"] == pytest.approx([100.0] * 3)
    (rss,) = by_id["platform.memory"]["figure"]["data"]
    assert (rss["name"], rss["y"]) == ("instance=a:1", [2.0e9] * 3)
    assert overview_json(payload)  # strict JSON: would raise on a NaN


@pytest.mark.django_db
def test_speculative_decoding_panels_say_the_fleet_has_no_speculative_config() -> None:
    payload = overview_compute(OverviewRequest(hand_made_fleet(), Window(at(60), at(120), 30),
                                               "local"))  # fmt: skip
    by_id = {p["id"]: p for p in payload["panels"]}
    for id in ("engine.spec_decode", "engine.spec_length"):
        # Not a failure: grey "not configured" on the page, with what would enable it.
        assert (by_id[id]["status"], by_id[id]["figure"]) == ("not-configured", None)
        assert by_id[id]["reasons"] == ["flag-gated"]
        assert by_id[id]["requires"] == [CATALOG["spec_decode_accepted_tokens"].requires]
        assert by_id[id]["requires"] == ["a speculative-decoding config"]
        assert by_id[id]["notes"] == [
            "spec_decode_accepted_tokens: flag-gated: needs a speculative-decoding config"
        ]


GPU_PANELS = ("gpu.util", "gpu.memory", "gpu.power", "gpu.clocks", "gpu.pipes", "gpu.errors",
              "gpu.nvlink")  # fmt: skip


def test_the_nvlink_axis_says_the_counter_has_no_documented_unit() -> None:
    # The reference (vllm-metrics.md 9.1) calls it an "all-lane NVLink bandwidth counter"
    # and gives no unit: no bytes, no KiB, and no vague "counter units" either.
    unit = PANELS_BY_ID["gpu.nvlink"].unit
    assert unit == NVLINK_UNIT == "counter/s (DCGM gives no unit)"
    assert not any(word in unit.lower() for word in ("byte", "kib", "mib", "bit/"))


def test_the_xid_panel_is_drawn_as_codes_not_amounts() -> None:
    errors = PANELS_BY_ID["gpu.errors"]
    assert (errors.kind, errors.unit) == ("codes", "XID code")
    assert [spec_keys(spec) for spec in errors.traces.values()] == [("gpu_xid",)]


def test_gpu_panels_draw_one_line_per_gpu_never_a_fold_of_an_exporters_gpus() -> None:
    # 4 GPUs x 80 GB summed read as one 300,000 MiB GPU: every GPU spec groups by the
    # exporter and DCGM's `gpu` index, so each line is one GPU.
    for id in GPU_PANELS:
        panel = PANELS_BY_ID[id]
        for spec in panel.traces.values():
            assert spec.by == ("instance", "gpu"), id
        assert "per GPU" in panel.title, id
    assert PANELS_BY_ID["gpu.memory"].traces["by GPU"] == Gauge(
        "gpu_fb_used", agg="max", by=("instance", "gpu")
    )


@pytest.mark.django_db
def test_gpu_legends_name_the_replica_using_each_gpu() -> None:
    fleet = hand_made_fleet()
    engine = fleet.endpoints.get(url="http://a:1/metrics")
    engine.labels = {"pod": "vllm-0", "namespace": "serving", "gpus": "d:9400/0"}
    engine.save()
    payload = overview_compute(OverviewRequest(fleet, Window(at(60), at(120), 30), "local"))
    by_id = {p["id"]: p for p in payload["panels"]}
    (nvlink,) = by_id["gpu.nvlink"]["figure"]["data"]
    assert nvlink["name"] == "gpu=0, instance=d:9400, replica=vllm-0 (a:1)"
    # The replica's own page reads the exporter holding its GPU, by the join.
    mine = overview_compute(
        OverviewRequest(fleet, Window(at(60), at(120), 30), "local", instance="a:1")
    )
    (nvlink,) = {p["id"]: p for p in mine["panels"]}["gpu.nvlink"]["figure"]["data"]
    assert (nvlink["name"], nvlink["y"]) == (
        "gpu=0, instance=d:9400, replica=vllm-0 (a:1)", pytest.approx([100.0] * 3)
    )  # fmt: skip


def test_gpu_panel_units_are_the_catalog_units() -> None:
    units = {id: PANELS_BY_ID[id].unit for id in GPU_PANELS}
    assert units == {
        "gpu.util": "percent",
        "gpu.memory": "MiB",
        "gpu.power": "watts",
        "gpu.clocks": "MHz",
        "gpu.pipes": "ratio",
        "gpu.errors": "XID code",
        "gpu.nvlink": NVLINK_UNIT,
    }
    for id in ("gpu.util", "gpu.memory", "gpu.power", "gpu.clocks", "gpu.pipes"):
        for spec in PANELS_BY_ID[id].traces.values():
            (key,) = spec_keys(spec)
            assert CATALOG[key].unit == units[id], (id, key)


@pytest.mark.django_db
def test_an_exporter_with_four_gpus_draws_each_gpu_not_their_sum() -> None:
    fleet = fleet_named()
    used = {"0": 79_000.0, "1": 78_500.0, "2": 79_250.5, "3": 12.0}
    xid = {"0": 0.0, "1": 74.0, "2": 0.0, "3": 0.0}
    endpoint_with_scrapes(
        fleet,
        "d:9400",
        [
            (
                15 * i,
                [
                    ("DCGM_FI_DEV_FB_USED", {"gpu": g, "UUID": f"GPU-{g}"}, v)
                    for g, v in used.items()
                ]
                + [("DCGM_FI_DEV_XID_ERRORS", {"gpu": g}, v) for g, v in xid.items()],
            )
            for i in range(9)
        ],
        types={"DCGM_FI_DEV_FB_USED": "gauge", "DCGM_FI_DEV_XID_ERRORS": "gauge"},
        kind="dcgm",
    )
    payload = overview_compute(OverviewRequest(fleet, Window(at(60), at(120), 30), "local"))
    by_id = {p["id"]: p for p in payload["panels"]}
    memory = by_id["gpu.memory"]["figure"]["data"]
    # No engine endpoint to join them to: each GPU's legend says so, nothing is guessed.
    assert [(t["name"], t["y"]) for t in memory] == [
        (f"gpu={g}, instance=d:9400, replica=unmatched", [v] * 3) for g, v in used.items()
    ]
    assert by_id["gpu.memory"]["unit"] == "MiB"
    errors = by_id["gpu.errors"]["figure"]["data"]
    steps, (starts,) = errors[:-1], errors[-1:]
    assert [t["y"] for t in steps] == [[v] * 3 for v in xid.values()]
    # One marker where each GPU's code starts (one code each here), in one trace.
    assert starts["mode"] == "markers"
    assert starts["y"] == list(xid.values())
    assert starts["text"] == [t["name"] for t in steps]
    assert by_id["gpu.errors"]["figure"]["layout"]["yaxis"]["tickvals"] == [0, 74]
