"""Catalog data: dcgm-exporter defaults (reference 9.1) and the production-stack router (7.4).

The router reuses several `vllm:` names for its own numbers; those entries
share a name with an engine entry and differ by `source_kind` and labels
(`server` instead of `model_name`/`engine`).
"""

from __future__ import annotations

from inventory.catalog.model import (
    CatalogEntry,
    Category,
    MetricName,
    MetricType,
    Unit,
    entry,
)

N = MetricName

# Released dcgm-exporters write `Hostname` and `UUID`; see catalog.layout for the variants.
DCGM_LABELS: tuple[str, ...] = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
PROF = "the DCGM profiling module (absent on some GPUs and drivers)"
IN_DEFAULTS_SINCE_4 = "dcgm-exporter 4.0.0 (2025-01) default; earlier only in the DCP csv"
PCIE_NOTE = "before dcgm-exporter 4.0.0 the same name was a counter of total bytes"
STALE_NAME = "copied from a vLLM name removed in 2025; stays 0 against current vLLM"


def _dcgm(
    key: str,
    name: MetricName | str,
    *,
    type: MetricType,
    unit: Unit,
    meaning: str,
    category: Category = "platform",
    extra: tuple[str, ...] = (),
    requires: str = "",
) -> CatalogEntry:
    return entry(
        key,
        name,
        source_kind="dcgm",
        type=type,
        unit=unit,
        category=category,
        meaning=meaning,
        labels=DCGM_LABELS + extra,
        requires=requires,
    )


def _router(
    key: str,
    name: MetricName | str,
    *,
    type: MetricType,
    unit: Unit,
    category: Category,
    meaning: str,
    labels: tuple[str, ...] = ("server",),
) -> CatalogEntry:
    return entry(
        key,
        name,
        source_kind="router",
        type=type,
        unit=unit,
        category=category,
        meaning=meaning,
        labels=labels,
    )


# Hand-laid table rows: the formatter would give every keyword its own line.
# fmt: off
DCGM = (
    _dcgm("gpu_sm_clock", "DCGM_FI_DEV_SM_CLOCK", type="gauge", unit="MHz",
          meaning="SM clock"),
    _dcgm("gpu_mem_clock", "DCGM_FI_DEV_MEM_CLOCK", type="gauge", unit="MHz",
          meaning="memory clock"),
    _dcgm("gpu_temp", "DCGM_FI_DEV_GPU_TEMP", type="gauge", unit="celsius",
          meaning="GPU die temperature"),
    _dcgm("gpu_mem_temp", "DCGM_FI_DEV_MEMORY_TEMP", type="gauge", unit="celsius",
          meaning="GPU memory temperature"),
    _dcgm("gpu_power", "DCGM_FI_DEV_POWER_USAGE", type="gauge", unit="watts",
          meaning="board power draw"),
    _dcgm("gpu_energy", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", type="counter",
          unit="millijoules", meaning="energy used since boot"),
    _dcgm("gpu_pcie_replay", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", type="counter", unit="events",
          category="quality", meaning="PCIe link retries, a flaky-link signal"),
    _dcgm("gpu_util", "DCGM_FI_DEV_GPU_UTIL", type="gauge", unit="percent",
          meaning="coarse 'any kernel running' utilisation; prefer gpu_gr_engine_active"),
    _dcgm("gpu_mem_copy_util", "DCGM_FI_DEV_MEM_COPY_UTIL", type="gauge", unit="percent",
          meaning="memory-copy engine utilisation"),
    _dcgm("gpu_enc_util", "DCGM_FI_DEV_ENC_UTIL", type="gauge", unit="percent",
          meaning="video encoder utilisation"),
    _dcgm("gpu_dec_util", "DCGM_FI_DEV_DEC_UTIL", type="gauge", unit="percent",
          meaning="video decoder utilisation"),
    _dcgm("gpu_xid", "DCGM_FI_DEV_XID_ERRORS", type="gauge", unit="none", category="quality",
          extra=("err_code", "err_msg"), meaning="code of the most recent XID error"),
    _dcgm("gpu_fb_free", "DCGM_FI_DEV_FB_FREE", type="gauge", unit="MiB",
          meaning="free framebuffer memory"),
    _dcgm("gpu_fb_used", "DCGM_FI_DEV_FB_USED", type="gauge", unit="MiB",
          meaning="used framebuffer memory (vLLM preallocates most of it for KV)"),
    _dcgm("gpu_fb_reserved", N("DCGM_FI_DEV_FB_RESERVED", since="2025-08 default"),
          type="gauge", unit="MiB", meaning="framebuffer memory reserved by the driver"),
    _dcgm("gpu_nvlink_bandwidth", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", type="counter",
          unit="none", meaning="all-lane NVLink traffic counter (unit not pinned); use rate()"),
    _dcgm("gpu_vgpu_license", "DCGM_FI_DEV_VGPU_LICENSE_STATUS", type="gauge", unit="none",
          meaning="vGPU licence status"),
    _dcgm("gpu_remapped_rows_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
          type="counter", unit="items", category="quality",
          meaning="memory rows remapped after uncorrectable errors"),
    _dcgm("gpu_remapped_rows_correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
          type="counter", unit="items", category="quality",
          meaning="memory rows remapped after correctable errors"),
    _dcgm("gpu_row_remap_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", type="gauge", unit="none",
          category="quality", meaning="1 when a row remap failed: the GPU needs service"),
    _dcgm("gpu_gr_engine_active", N("DCGM_FI_PROF_GR_ENGINE_ACTIVE", since=IN_DEFAULTS_SINCE_4),
          type="gauge", unit="ratio", requires=PROF,
          meaning="share of time the graphics/compute engine is busy"),
    _dcgm("gpu_tensor_active", N("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", since=IN_DEFAULTS_SINCE_4),
          type="gauge", unit="ratio", requires=PROF,
          meaning="share of cycles the tensor pipes are busy"),
    _dcgm("gpu_dram_active", N("DCGM_FI_PROF_DRAM_ACTIVE", since=IN_DEFAULTS_SINCE_4),
          type="gauge", unit="ratio", requires=PROF,
          meaning="share of cycles the memory interface is busy (decode-bound signal)"),
    _dcgm("gpu_pcie_tx", N("DCGM_FI_PROF_PCIE_TX_BYTES", since="dcgm-exporter 4.0.0",
                          note=PCIE_NOTE),
          type="gauge", unit="bytes_per_second", requires=PROF, meaning="PCIe transmit rate"),
    _dcgm("gpu_pcie_rx", N("DCGM_FI_PROF_PCIE_RX_BYTES", since="dcgm-exporter 4.0.0",
                          note=PCIE_NOTE),
          type="gauge", unit="bytes_per_second", requires=PROF, meaning="PCIe receive rate"),
)

ROUTER = (
    _router("router_running", "vllm:num_requests_running", type="gauge", unit="requests",
            category="queue", meaning="router-observed in-flight requests per backend"),
    _router("router_waiting", "vllm:num_requests_waiting", type="gauge", unit="requests",
            category="queue", meaning="declared by the router but never set: normally empty"),
    _router("router_qps", "vllm:current_qps", type="gauge", unit="requests_per_second",
            category="traffic", meaning="sliding-window request rate per backend"),
    _router("router_avg_decoding_length", "vllm:avg_decoding_length", type="gauge",
            unit="tokens", category="traffic", meaning="sliding-window mean decode length"),
    _router("router_prefill_requests", "vllm:num_prefill_requests", type="gauge",
            unit="requests", category="queue", meaning="requests the router sees in prefill"),
    _router("router_decoding_requests", "vllm:num_decoding_requests", type="gauge",
            unit="requests", category="queue", meaning="requests the router sees decoding"),
    _router("router_avg_latency", "vllm:avg_latency", type="gauge", unit="seconds",
            category="latency", meaning="sliding-window mean latency measured at the router"),
    _router("router_avg_itl", "vllm:avg_itl", type="gauge", unit="seconds",
            category="latency", meaning="sliding-window mean inter-token gap at the router"),
    _router("router_swapped", "vllm:num_requests_swapped", type="gauge", unit="requests",
            category="queue", meaning="router stat kept from V0; no V1 engine feeds it"),
    _router("router_prefix_hit_rate", N("vllm:gpu_prefix_cache_hit_rate", note=STALE_NAME),
            type="gauge", unit="ratio", category="engine",
            meaning="prefix-cache hit rate the router copied from its engine scrape"),
    _router("router_prefix_hits", N("vllm:gpu_prefix_cache_hits_total", note=STALE_NAME),
            type="gauge", unit="tokens", category="engine",
            meaning="copied engine prefix hits; a gauge despite the _total suffix"),
    _router("router_prefix_queries", N("vllm:gpu_prefix_cache_queries_total", note=STALE_NAME),
            type="gauge", unit="tokens", category="engine",
            meaning="copied engine prefix queries; a gauge despite the _total suffix"),
    _router("router_healthy_pods", "vllm:healthy_pods_total", type="gauge", unit="none",
            category="traffic", meaning="1 per healthy discovered backend; a gauge"),
    _router("router_incoming_requests", "vllm:num_incoming_requests_total", type="counter",
            unit="requests", category="traffic", labels=("model",),
            meaning="valid requests received, even with no backend to serve them"),
    _router("router_input_tokens", N("vllm:input_tokens_total", since="2026-01-31 (#813)"),
            type="counter", unit="tokens", category="traffic", labels=("server", "model"),
            meaning="prompt tokens from usage of non-streaming responses only"),
    _router("router_output_tokens", N("vllm:output_tokens_total", since="2026-01-31 (#813)"),
            type="counter", unit="tokens", category="traffic", labels=("server", "model"),
            meaning="output tokens from usage of non-streaming responses only"),
    _router("router_request_errors", "vllm:request_errors_total", type="counter",
            unit="requests", category="quality", labels=("server", "model", "error_type"),
            meaning="requests that failed at the router, by exception class"),
    _router("router_request_latency", "vllm:request_latency_seconds", type="histogram",
            unit="seconds", category="latency", labels=("server", "model", "status"),
            meaning="end-to-end latency measured at the router"),
    _router("router_cpu", "router_cpu_usage_percent", type="gauge", unit="percent",
            category="platform", labels=(), meaning="router host CPU usage"),
    _router("router_memory", "router_memory_usage_percent", type="gauge", unit="percent",
            category="platform", labels=(), meaning="router host memory usage"),
    _router("router_disk", "router_disk_usage_percent", type="gauge", unit="percent",
            category="platform", labels=(), meaning="router host disk usage"),
)
# fmt: on

ENTRIES: tuple[CatalogEntry, ...] = DCGM + ROUTER
