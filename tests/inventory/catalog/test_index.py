from __future__ import annotations

import dataclasses
import re
from functools import cache
from pathlib import Path

import pytest

from inventory.catalog import index as catalog
from inventory.catalog.index import (
    CATALOG,
    ENGINE_ONLY_NAMES,
    RENAMED_PAIRS,
    ROUTER_ONLY_NAMES,
    V0_NAMES,
    entries_for_name,
    entry_for_name,
    replacement_for,
    resolve,
    resolve_all,
)

REPO = Path(__file__).resolve().parents[3]
REFERENCE = REPO.parent / "shared" / "reference" / "vllm-metrics.md"
CATALOG_MODULES = sorted((REPO / "inventory" / "catalog").glob("*.py"))
METRIC_TOKEN = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

BRIEF_KEYS = (
    "ttft itl request_tpot e2e queue_time prefill_time decode_time inference_time "
    "prompt_len output_len running waiting waiting_by_reason kv_usage preemptions "
    "prefix_queries prefix_hits prompt_tokens generation_tokens prompt_tokens_by_source "
    "request_success iteration_tokens cache_config lora_info spec_decode_drafts "
    "spec_decode_draft_tokens spec_decode_accepted_tokens spec_decode_accepted_per_pos "
    "http_requests http_duration process_cpu process_rss gpu_util gpu_fb_used gpu_fb_free "
    "gpu_power gpu_sm_clock gpu_mem_clock gpu_temp gpu_gr_engine_active gpu_dram_active "
    "gpu_tensor_active gpu_xid gpu_nvlink_bandwidth frontend_time"
)
ITL = "vllm:inter_token_latency_seconds"
OLD_TPOT = "vllm:time_per_output_token_seconds"


@cache
def reference_text() -> str:
    assert REFERENCE.is_file(), f"the vLLM metrics reference is missing at {REFERENCE}"
    return REFERENCE.read_text(encoding="utf-8")


def backticked_names(text: str) -> set[str]:
    """Name-shaped tokens inside `code` spans, without prefixes such as `http_*`."""
    spans = re.findall(r"`([^`]+)`", text)
    tokens = {token for span in spans for token in METRIC_TOKEN.findall(span)}
    return {token for token in tokens if not token.endswith("_")}


def reference_section(start: str, end: str) -> str:
    text = reference_text()
    return text[text.index(start) : text.index(end)]


def all_catalog_names() -> set[str]:
    return {metric.name for entry in CATALOG.values() for metric in entry.names + entry.confusable}


GATEWAY_CONVENTION = REPO / "fleetsim" / "README.md"


def gateway_convention_text() -> str:
    """FleetScope's own gateway names: vLLM has no tenant label, so these are documented
    beside the simulator that exports them, not in the vLLM reference."""
    text = GATEWAY_CONVENTION.read_text(encoding="utf-8")
    start = text.index("## FleetScope's gateway convention")
    return text[start : text.index("\n## ", start + 1)]


def test_every_catalog_name_occurs_in_the_reference() -> None:
    # The gateway's and the prober's names are FleetScope's own convention (fleetsim README).
    gateway = {
        n for e in CATALOG.values() if e.source_kind in ("gateway", "prober") for n in e.names
    }
    invented = {n.name for n in gateway} - backticked_names(gateway_convention_text())
    assert not invented, f"gateway names not in {GATEWAY_CONVENTION}: {sorted(invented)}"
    others = all_catalog_names() - {n.name for n in gateway}
    invented = others - backticked_names(reference_text())
    assert not invented, f"names not in {REFERENCE.name}: {sorted(invented)}"


@pytest.mark.parametrize(
    ("section", "start", "end", "prefixes"),
    [
        ("table A", "## 3. Table A", "## 4. Table B", ("vllm:",)),
        ("table B", "## 4. Table B", "## 5. Table C", ("vllm:",)),
        ("table C.2", "### C.2", "### C.3", ("vllm:", "http_", "process_", "python_")),
        ("DCGM defaults", "### 9.1", "Commented out by default", ("DCGM_FI_DEV_", "DCGM_FI_PROF_")),
    ],
)
def test_catalog_covers_every_family_named_in_a_reference_table(
    section: str, start: str, end: str, prefixes: tuple[str, ...]
) -> None:
    named = {n for n in backticked_names(reference_section(start, end)) if n.startswith(prefixes)}
    missing = {n for n in named if entry_for_name(n) is None}
    assert named, f"no names found in {section}: has the reference moved?"
    assert not missing, f"{section} names missing from the catalog: {sorted(missing)}"


def test_the_brief_s_keys_are_all_there() -> None:
    assert not set(BRIEF_KEYS.split()) - set(CATALOG)


def test_catalog_keys_are_snake_case_and_entries_keep_their_own_key() -> None:
    for key, entry in CATALOG.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", key)
        assert entry.key == key


@pytest.mark.parametrize("entry", list(CATALOG.values()), ids=list(CATALOG))
def test_each_entry_is_either_a_real_metric_or_a_documented_gap(
    entry: catalog.CatalogEntry,
) -> None:
    assert entry.meaning and len(entry.meaning) <= 100
    if entry.gap:
        assert not entry.names
    else:
        assert entry.names
    names = [m.name for m in entry.names]
    assert len(names) == len(set(names))
    assert all(not n.endswith(("_bucket", "_count", "_sum", "_created")) for n in names)


def test_current_prometheus_client_counters_are_listed_with_total_as_on_the_wire() -> None:
    # dcgm-exporter is a Go exporter: its counters carry no `_total` on the wire.
    counters = [
        e.current.name
        for e in CATALOG.values()
        if e.type == "counter" and e.current and e.source_kind != "dcgm"
    ]
    assert counters
    assert [n for n in counters if not n.endswith("_total")] == []


def test_iteration_tokens_total_is_a_histogram_despite_its_suffix() -> None:
    entry = CATALOG["iteration_tokens"]
    assert (entry.type, entry.names[0].name) == ("histogram", "vllm:iteration_tokens_total")
    assert entry_for_name("vllm:iteration_tokens") is None


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("vllm:prompt_tokens_total", "prompt_tokens"),
        ("vllm:prompt_tokens", "prompt_tokens"),  # the parser's family name for the counter
        ("vllm:iteration_tokens_total", "iteration_tokens"),
        ("vllm:gpu_cache_usage_perc", "kv_usage"),
        (OLD_TPOT, "itl"),
        ("vllm:gpu_prefix_cache_queries", "prefix_queries"),
        ("vllm:num_requests_swapped", "swapped"),
        ("DCGM_FI_DEV_GPU_UTIL", "gpu_util"),
        ("http_requests_total", "http_requests"),
        ("vllm:not_a_metric", None),
    ],
)
def test_entry_for_name_finds_the_key_under_wire_and_family_spellings(
    name: str, key: str | None
) -> None:
    found = entry_for_name(name)
    assert (found.key if found else None) == key


def test_router_gauges_that_reuse_vllm_names_are_kept_apart_from_engine_metrics() -> None:
    assert [e.key for e in entries_for_name("vllm:num_requests_running")] == [
        "running",
        "router_running",
    ]
    running = entry_for_name("vllm:num_requests_running")
    assert running is not None and running.source_kind == "engine"
    router = entry_for_name("vllm:gpu_prefix_cache_hits_total", source_kind="router")
    assert router is not None
    assert (router.key, router.type, router.labels) == ("router_prefix_hits", "gauge", ("server",))
    assert "vllm:current_qps" in ROUTER_ONLY_NAMES
    assert "vllm:num_requests_running" not in ROUTER_ONLY_NAMES | ENGINE_ONLY_NAMES


def test_rename_pairs_and_v0_names_come_from_the_catalog_history() -> None:
    assert set(RENAMED_PAIRS) == {
        ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"),
        ("vllm:gpu_prefix_cache_queries_total", "vllm:prefix_cache_queries_total"),
        ("vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits_total"),
        (OLD_TPOT, ITL),
    }
    assert {"vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc"} <= V0_NAMES
    assert "vllm:time_in_queue_requests" in V0_NAMES


def test_resolve_falls_back_to_time_per_output_token_on_old_fleets() -> None:
    resolution = resolve("itl", {OLD_TPOT, "vllm:time_to_first_token_seconds"})
    assert resolution.status == "fallback"
    assert resolution.name == OLD_TPOT
    assert resolution.message == (
        f"needs {ITL}; this fleet exposes {OLD_TPOT} (renamed in 0.11): showing that instead"
    )
    assert "never a per-request average" in resolution.caveat


def test_resolve_prefers_the_current_name_when_both_are_exposed() -> None:
    resolution = resolve("itl", {OLD_TPOT, ITL})
    assert (resolution.status, resolution.name, resolution.available) == ("current", ITL, True)


def test_resolve_never_passes_old_itl_off_as_per_request_tpot() -> None:
    resolution = resolve("request_tpot", {OLD_TPOT})
    assert (resolution.status, resolution.reason) == ("unavailable", "not-exposed")
    assert f"{OLD_TPOT} is exposed but is no substitute" in resolution.message


def test_resolve_warns_that_old_prefix_counters_may_count_blocks() -> None:
    # The parser names counter families without `_total`; resolve accepts that spelling.
    resolution = resolve("prefix_hits", {"vllm:gpu_prefix_cache_hits"})
    assert resolution.status == "fallback"
    assert resolution.name == "vllm:gpu_prefix_cache_hits_total"
    assert "renamed in 0.9.2" in resolution.message
    assert "counted KV blocks until 2025-05-13" in resolution.caveat


@pytest.mark.parametrize(
    ("key", "exposed", "reason", "message"),
    [
        ("lora_info", set(), "flag-gated", "flag-gated: needs --enable-lora"),
        ("frontend_time", {ITL}, "not-in-vllm", "vLLM does not expose this: frontend time"),
        ("max_num_seqs", set(), "not-in-vllm", "vLLM does not expose this: configured limits"),
        ("swapped", {ITL}, "removed", "no longer exposed: vllm:num_requests_swapped was removed"),
        ("gpu_util", {ITL}, "not-exposed", "not exposed by any endpoint (needs a dcgm-exporter"),
        ("router_qps", set(), "not-exposed", "not exposed by any endpoint (needs a production-"),
        ("waiting_by_reason", {ITL}, "not-exposed", "not exposed by any endpoint; vllm:num_"),
        ("ttft", set(), "not-exposed", "not exposed by any endpoint"),
    ],
)
def test_resolve_explains_why_a_key_is_unavailable(
    key: str, exposed: set[str], reason: str, message: str
) -> None:
    resolution = resolve(key, exposed)
    assert (resolution.status, resolution.name, resolution.reason) == ("unavailable", None, reason)
    assert resolution.message.startswith(message)


def test_resolve_uses_a_removed_name_while_an_old_fleet_still_exposes_it() -> None:
    resolution = resolve("swapped", {"vllm:num_requests_swapped"})
    assert (resolution.status, resolution.name) == ("fallback", "vllm:num_requests_swapped")
    assert "is gone from current vLLM; this fleet still exposes it" in resolution.message


def test_resolve_tells_which_direction_to_filter_on_deprecated_offload_counters() -> None:
    resolution = resolve("kv_offload_load_bytes", {"vllm:kv_offload_total_bytes_total"})
    assert resolution.status == "fallback"
    assert 'transfer_type="CPU_to_GPU"' in resolution.caveat


def test_mfu_counters_missing_on_old_servers_are_dated_not_blamed_on_a_flag() -> None:
    resolution = resolve("mfu_flops", {ITL})
    assert resolution.reason == "not-exposed"
    assert "exists only since 2026-02-23" in resolution.message


@pytest.mark.parametrize(
    ("name", "replacement"),
    [
        ("vllm:gpu_prefix_cache_hits", "vllm:prefix_cache_hits_total"),
        ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"),
        (OLD_TPOT, ITL),
        ("vllm:time_in_queue_requests", "vllm:request_queue_time_seconds"),
        (
            "vllm:kv_offload_total_bytes_total",
            "vllm:kv_offload_load_bytes_total / vllm:kv_offload_store_bytes_total",
        ),
        ("vllm:kv_cache_usage_perc", None),
        ("vllm:num_requests_swapped", None),
        ("vllm:not_a_metric", None),
    ],
)
def test_replacement_for_names_the_successor_of_an_old_name(
    name: str, replacement: str | None
) -> None:
    assert replacement_for(name) == replacement


def test_router_gauges_are_not_reported_as_deprecated_router_names() -> None:
    assert replacement_for("vllm:gpu_prefix_cache_hits_total", source_kind="router") is None


def test_resolve_rejects_keys_the_catalog_does_not_have() -> None:
    with pytest.raises(KeyError):
        resolve("tokens_per_tenant", set())


def test_resolve_all_answers_for_every_key_on_a_current_fleet() -> None:
    exposed = {e.current.name for e in CATALOG.values() if e.current and e.source_kind == "engine"}
    answers = resolve_all(exposed)
    assert list(answers) == list(CATALOG)
    assert answers["ttft"].status == "current"
    assert answers["kv_usage"].name == "vllm:kv_cache_usage_perc"


def test_catalog_and_its_entries_are_immutable() -> None:
    with pytest.raises(TypeError):
        CATALOG["ttft"] = CATALOG["itl"]  # type: ignore[index]  # the write must fail
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG["ttft"].unit = "milliseconds"  # type: ignore[misc]  # the write must fail


def test_catalog_modules_stay_free_of_django() -> None:
    assert CATALOG_MODULES
    for module in CATALOG_MODULES:
        source = module.read_text(encoding="utf-8")
        assert "import django" not in source and "from django" not in source, module.name
