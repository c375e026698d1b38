"""Catalog data: vLLM's API-server families and the Python process defaults (reference table C.2).

None of the `http_*` families carries `model_name`, so they describe a server,
not a model. The process families vanish in multiprocess mode (reference section 8).
"""

from __future__ import annotations

from inventory.catalog.model import CatalogEntry, MetricName, entry

N = MetricName

WEBSOCKET = "realtime/transcription endpoints in use"
SINGLE_PROCESS = "a single API-server process (absent in multiprocess mode)"

# Hand-laid table rows: the formatter would give every keyword its own line.
# fmt: off
HTTP = (
    entry("http_requests", "http_requests_total", source_kind="http", type="counter",
          unit="requests", category="traffic", labels=("handler", "method", "status"),
          meaning="HTTP requests by handler and status class (2xx/4xx/5xx); no model label"),
    entry("http_request_size", "http_request_size_bytes", source_kind="http", type="summary",
          unit="bytes", category="traffic", labels=("handler",),
          meaning="request body size from Content-Length"),
    entry("http_response_size", "http_response_size_bytes", source_kind="http",
          type="summary", unit="bytes", category="traffic", labels=("handler",),
          meaning="response body size"),
    entry("http_duration", N("http_request_duration_seconds",
                             note="only 3 buckets; includes the whole stream for SSE"),
          source_kind="http", type="histogram", unit="seconds", category="latency",
          labels=("handler", "method"),
          meaning="whole HTTP exchange including streaming: near e2e for SSE, not TTFT"),
    entry("http_duration_highr", "http_request_duration_highr_seconds", source_kind="http",
          type="histogram", unit="seconds", category="latency",
          meaning="whole HTTP exchange, all handlers together, with finer buckets"),
    entry("websocket_active", N("vllm:websocket_connections_active", since="2026-03-04"),
          source_kind="http", type="gauge", unit="connections", category="traffic",
          requires=WEBSOCKET, meaning="open websocket connections"),
    entry("websocket_connections", N("vllm:websocket_connections_total", since="2026-03-04"),
          source_kind="http", type="counter", unit="connections", category="traffic",
          requires=WEBSOCKET, meaning="websocket connections accepted"),
    entry("websocket_duration",
          N("vllm:websocket_connection_duration_seconds", since="2026-03-04"),
          source_kind="http", type="histogram", unit="seconds", category="latency",
          requires=WEBSOCKET, meaning="lifetime of a websocket connection"),
    entry("tool_call_parser",
          N("vllm:tool_call_parser_invocations_total", since="2026-06-10",
            note="parser failures count as no_tool_call"),
          source_kind="http", type="counter", unit="events", category="quality",
          labels=("model_name", "mode", "outcome", "request_type"),
          requires="--tool-call-parser",
          meaning="tool-call parser runs by streaming mode and whether a tool call came out"),
)

PROCESS = (
    entry("process_cpu", "process_cpu_seconds_total", source_kind="process", type="counter",
          unit="seconds", category="platform", requires=SINGLE_PROCESS,
          meaning="CPU time the API-server process has used"),
    entry("process_rss", "process_resident_memory_bytes", source_kind="process",
          type="gauge", unit="bytes", category="platform", requires=SINGLE_PROCESS,
          meaning="resident memory of the API-server process"),
    entry("process_vms", "process_virtual_memory_bytes", source_kind="process",
          type="gauge", unit="bytes", category="platform", requires=SINGLE_PROCESS,
          meaning="virtual memory of the API-server process"),
    entry("process_start_time", "process_start_time_seconds", source_kind="process",
          type="gauge", unit="timestamp", category="platform", requires=SINGLE_PROCESS,
          meaning="when the API-server process started (restart detector)"),
    entry("process_open_fds", "process_open_fds", source_kind="process", type="gauge",
          unit="items", category="platform", requires=SINGLE_PROCESS,
          meaning="open file descriptors"),
    entry("process_max_fds", "process_max_fds", source_kind="process", type="gauge",
          unit="items", category="platform", requires=SINGLE_PROCESS,
          meaning="file-descriptor limit"),
    entry("python_gc_collected", "python_gc_objects_collected_total", source_kind="process",
          type="counter", unit="items", category="platform", requires=SINGLE_PROCESS,
          meaning="objects the garbage collector freed"),
    entry("python_gc_uncollectable", "python_gc_objects_uncollectable_total",
          source_kind="process", type="counter", unit="items", category="platform",
          requires=SINGLE_PROCESS, meaning="objects the garbage collector could not free"),
    entry("python_gc_collections", "python_gc_collections_total", source_kind="process",
          type="counter", unit="events", category="platform", requires=SINGLE_PROCESS,
          meaning="garbage-collector runs"),
    entry("python_info", "python_info", source_kind="process", type="info", unit="none",
          category="platform", requires=SINGLE_PROCESS,
          meaning="Python implementation and version as label values"),
)
# fmt: on

ENTRIES: tuple[CatalogEntry, ...] = HTTP + PROCESS
