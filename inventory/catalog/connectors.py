"""Catalog data: KV-connector metrics (reference C.1), present only with `--kv-transfer-config`.

Names the reference abbreviates with an ellipsis (the CPU-tier read/write
usage gauges, three of the Mooncake counters) are left out rather than guessed.
"""

from __future__ import annotations

from inventory.catalog.model import (
    ENGINE_LABELS,
    CatalogEntry,
    MetricName,
    MetricType,
    Unit,
    entry,
)

N = MetricName

NIXL = "--kv-transfer-config with the NIXL connector"
OFFLOAD = "--kv-transfer-config with the offloading connector"
MOONCAKE = "--kv-transfer-config with the Mooncake store connector"
HF3FS = "--kv-transfer-config with the 3FS connector"
FLAT = "2026-06-10"
SPLIT = "split into load/store names on 2026-06-10"


def _kv(
    key: str,
    *names: MetricName | str,
    type: MetricType,
    unit: Unit,
    requires: str,
    meaning: str,
    extra: tuple[str, ...] = (),
) -> CatalogEntry:
    return entry(
        key,
        *names,
        source_kind="engine",
        type=type,
        unit=unit,
        category="engine",
        meaning=meaning,
        labels=ENGINE_LABELS + extra,
        requires=requires,
    )


def _deprecated(name: str, direction: str) -> MetricName:
    # The deprecated names are still emitted for the CPU spec at the pin, so no `until`
    # would be honest; they stay fallbacks because one series mixes both directions.
    return N(
        name,
        since="2026-01-27",
        change=SPLIT,
        note=f'filter transfer_type="{direction}" to get this direction only',
    )


# Hand-laid table rows: the formatter would give every keyword its own line.
# fmt: off
ENTRIES: tuple[CatalogEntry, ...] = (
    _kv("nixl_xfer_time", "vllm:nixl_xfer_time_seconds", type="histogram", unit="seconds",
        requires=NIXL, meaning="duration of a NIXL KV transfer"),
    _kv("nixl_post_time", "vllm:nixl_post_time_seconds", type="histogram", unit="seconds",
        requires=NIXL, meaning="time to post a NIXL transfer request"),
    _kv("nixl_bytes", "vllm:nixl_bytes_transferred", type="histogram", unit="bytes",
        requires=NIXL, meaning="bytes moved per NIXL transfer"),
    _kv("nixl_descriptors", "vllm:nixl_num_descriptors", type="histogram", unit="items",
        requires=NIXL, meaning="descriptors per NIXL transfer"),
    _kv("nixl_failed_transfers", "vllm:nixl_num_failed_transfers_total", type="counter",
        unit="events", requires=NIXL, meaning="NIXL transfers that failed"),
    _kv("nixl_failed_notifications", "vllm:nixl_num_failed_notifications_total",
        type="counter", unit="events", requires=NIXL, meaning="NIXL notifications that failed"),
    _kv("nixl_kv_expired", N("vllm:nixl_num_kv_expired_reqs_total", since="2026-01-19"),
        type="counter", unit="requests", requires=NIXL,
        meaning="requests whose KV expired before pickup, counted on the prefill instance"),
    _kv("kv_offload_load_bytes", N("vllm:kv_offload_load_bytes_total", since=FLAT),
        _deprecated("vllm:kv_offload_total_bytes_total", "CPU_to_GPU"),
        type="counter", unit="bytes", requires=OFFLOAD,
        meaning="bytes loaded from the offload tier into GPU memory"),
    _kv("kv_offload_store_bytes", N("vllm:kv_offload_store_bytes_total", since=FLAT),
        _deprecated("vllm:kv_offload_total_bytes_total", "GPU_to_CPU"),
        type="counter", unit="bytes", requires=OFFLOAD,
        meaning="bytes stored from GPU memory into the offload tier"),
    _kv("kv_offload_load_time", N("vllm:kv_offload_load_time_total", since=FLAT),
        _deprecated("vllm:kv_offload_total_time_total", "CPU_to_GPU"),
        type="counter", unit="seconds", requires=OFFLOAD,
        meaning="seconds spent loading KV from the offload tier"),
    _kv("kv_offload_store_time", N("vllm:kv_offload_store_time_total", since=FLAT),
        _deprecated("vllm:kv_offload_total_time_total", "GPU_to_CPU"),
        type="counter", unit="seconds", requires=OFFLOAD,
        meaning="seconds spent storing KV into the offload tier"),
    _kv("kv_offload_load_size", N("vllm:kv_offload_load_size", since=FLAT),
        _deprecated("vllm:kv_offload_size", "CPU_to_GPU"),
        type="histogram", unit="bytes", requires=OFFLOAD,
        meaning="bytes per load from the offload tier"),
    _kv("kv_offload_store_size", N("vllm:kv_offload_store_size", since=FLAT),
        _deprecated("vllm:kv_offload_size", "GPU_to_CPU"),
        type="histogram", unit="bytes", requires=OFFLOAD,
        meaning="bytes per store into the offload tier"),
    _kv("kv_offload_lookup_sync_delay", "vllm:kv_offload_lookup_sync_delay_seconds",
        type="histogram", unit="seconds", requires=OFFLOAD,
        meaning="synchronous offload-tier lookup delay"),
    _kv("kv_offload_lookup_async_delay", "vllm:kv_offload_lookup_async_delay_seconds",
        type="histogram", unit="seconds", requires=OFFLOAD,
        meaning="asynchronous offload-tier lookup delay"),
    _kv("kv_offload_allocation_failures", "vllm:kv_offload_allocation_failure_total",
        type="counter", unit="events", requires=OFFLOAD,
        meaning="store allocations the offload tier refused"),
    _kv("kv_offload_cpu_usage", N("vllm:kv_offload_cpu_cache_usage_perc", since="2026-06-20"),
        type="gauge", unit="ratio", requires=OFFLOAD,
        meaning="share of CPU KV space pinned by in-flight transfers"),
    _kv("kv_offload_cpu_allocation_size", "vllm:kv_offload_cpu_allocation_size",
        type="histogram", unit="blocks", requires=OFFLOAD,
        meaning="blocks per CPU-tier allocation"),
    _kv("kv_offload_stores_skipped", "vllm:kv_offload_stores_skipped_total",
        type="counter", unit="events", requires=OFFLOAD + " and store_threshold >= 2",
        meaning="stores skipped because the block had not been seen often enough"),
    _kv("kv_offload_tiering_sync_delay", "vllm:kv_offload_tiering_lookup_sync_delay_seconds",
        type="histogram", unit="seconds", requires=OFFLOAD,
        meaning="synchronous secondary-tier lookup delay"),
    _kv("kv_offload_tiering_async_delay", "vllm:kv_offload_tiering_lookup_async_delay_seconds",
        type="histogram", unit="seconds", requires=OFFLOAD,
        meaning="asynchronous secondary-tier lookup delay"),
    _kv("mooncake_operation_time",
        N("vllm:mooncake_store_operation_time_seconds", since="2026-05-23"),
        type="histogram", unit="seconds", requires=MOONCAKE, extra=("operation", "status"),
        meaning="duration of a Mooncake store operation"),
    _kv("mooncake_operations", N("vllm:mooncake_store_operation_total", since="2026-05-23"),
        type="counter", unit="events", requires=MOONCAKE, extra=("operation", "status"),
        meaning="Mooncake store operations"),
    _kv("hf3fs_save_duration", N("vllm:hf3fs_save_duration_seconds", since="2026-04-07"),
        type="histogram", unit="seconds", requires=HF3FS, meaning="3FS KV save duration"),
    _kv("hf3fs_load_duration", N("vllm:hf3fs_load_duration_seconds", since="2026-04-07"),
        type="histogram", unit="seconds", requires=HF3FS, meaning="3FS KV load duration"),
    _kv("hf3fs_failed_saves", "vllm:hf3fs_num_failed_save_total", type="counter",
        unit="events", requires=HF3FS, meaning="3FS KV saves that failed"),
    _kv("hf3fs_failed_loads", "vllm:hf3fs_num_failed_load_total", type="counter",
        unit="events", requires=HF3FS, meaning="3FS KV loads that failed"),
)
# fmt: on
