"""The API server's non-engine families: prometheus-fastapi-instrumentator's `http_*`
and prometheus_client's Python/process collectors (single-process mode only)."""

from __future__ import annotations

from fleetsim.families import Family, Labels
from fleetsim.replica import Replica

PYTHON_VERSION = ("CPython", "3", "12", "11")
RSS_BASE_BYTES = 1.9e9
RSS_PER_REQUEST_BYTES = 64e3  # request state, prompt and streaming buffers
VIRTUAL_BYTES = 14.2e9
BASE_FDS = 52
MAX_FDS = 1048576
# Allocation-heavy work per request decides how often the generational GC runs.
GEN0_PER_REQUEST = 9
GEN0_PER_STREAMED_TOKENS = 40
OBJECTS_PER_GEN0 = 310


def http_families(replica: Replica, created_ok: bool) -> list[Family]:
    http = replica.http
    created = http.created if created_ok else None
    sum_first = replica.multiprocess
    requests = Family(
        "http_requests", "counter", "Total number of requests by method, status and handler."
    )
    for (handler, method, status), value in http.requests.items():
        labels: Labels = (("handler", handler), ("method", method), ("status", status))
        requests.add_counter(labels, value, created)
    sizes = []
    for name, table, what in (
        ("http_request_size_bytes", http.req_size, "incoming requests"),
        ("http_response_size_bytes", http.resp_size, "outgoing responses"),
    ):
        fam = Family(
            name,
            "summary",
            f"Content length of {what} by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
        )
        for handler, (count, total) in table.items():
            fam.add_summary((("handler", handler),), count, total, created)
        sizes.append(fam)
    highr = Family(
        "http_request_duration_highr_seconds",
        "histogram",
        "Latency with many buckets but no API specific labels. "
        "Made for more accurate percentile calculations. ",
    )
    highr.add_histogram((), http.highr, created, sum_first=sum_first)
    duration = Family(
        "http_request_duration_seconds",
        "histogram",
        "Latency with only few buckets by handler. "
        "Made to be only used if aggregation by handler is important. ",
    )
    for (handler, method), hist in http.duration.items():
        labels = (("handler", handler), ("method", method))
        duration.add_histogram(labels, hist, created, sum_first=sum_first)
    return [requests, *sizes, highr, duration]


def process_families(replica: Replica, t: float) -> list[Family]:
    """What prometheus_client's GC, platform and process collectors report."""
    proc = replica.process
    gen0 = GEN0_PER_REQUEST * proc.finished + proc.tokens_streamed // GEN0_PER_STREAMED_TOKENS
    collections = (gen0, gen0 // 10, gen0 // 100)
    collected = Family("python_gc_objects_collected", "counter", "Objects collected during gc")
    uncollectable = Family(
        "python_gc_objects_uncollectable", "counter", "Uncollectable objects found during GC"
    )
    runs = Family(
        "python_gc_collections", "counter", "Number of times this generation was collected"
    )
    for gen, count in enumerate(collections):
        labels = (("generation", str(gen)),)
        collected.add_counter(labels, count * OBJECTS_PER_GEN0 // (gen + 1), None)
        uncollectable.add_counter(labels, 0, None)
        runs.add_counter(labels, count, None)
    impl, major, minor, patch = PYTHON_VERSION
    info = Family("python_info", "gauge", "Python platform information")
    info.add(
        (
            ("implementation", impl),
            ("major", major),
            ("minor", minor),
            ("patchlevel", patch),
            ("version", f"{major}.{minor}.{patch}"),
        ),
        1.0,
    )
    in_flight = replica.load()
    out = [collected, uncollectable, runs, info]
    for name, help_, value in (
        ("process_virtual_memory_bytes", "Virtual memory size in bytes.", VIRTUAL_BYTES),
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            RSS_BASE_BYTES + RSS_PER_REQUEST_BYTES * in_flight,
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            round(proc.start, 2),
        ),
    ):
        fam = Family(name, "gauge", help_)
        fam.add((), float(value))
        out.append(fam)
    cpu = Family(
        "process_cpu_seconds", "counter", "Total user and system CPU time spent in seconds."
    )
    cpu.add_counter((), round(replica.cpu_seconds(t), 2), None)
    fds = Family("process_open_fds", "gauge", "Number of open file descriptors.")
    fds.add((), float(BASE_FDS + in_flight))
    max_fds = Family("process_max_fds", "gauge", "Maximum number of open file descriptors.")
    max_fds.add((), float(MAX_FDS))
    return [*out, cpu, fds, max_fds]
