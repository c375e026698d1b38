"""Which vLLM metric families each version exposes, and how a replica's state fills them.

Dialects (see fleetsim/README.md for the evidence behind each row):
  current  the reference's pinned commit (`engine` label, `_created` series)
  v1-0.10  0.10.x: old and new cache names side by side, TPOT under its old name
  v1-0.8   early V1: no `engine` label, prefix-cache counters in blocks, old buckets
  v0       the V0 engine: swap gauges, hit-rate gauges, no `engine`, no `_created`
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from fleetsim.engine import Engine
from fleetsim.families import Family, Labels
from fleetsim.replica import Replica
from fleetsim.request import WAITING

ALL = frozenset({"current", "v1-0.10", "v1-0.8", "v0"})
V1 = frozenset({"current", "v1-0.10", "v1-0.8"})
NEW = frozenset({"current", "v1-0.10"})
NOW = frozenset({"current"})
OLD_CACHE = frozenset({"v1-0.10", "v1-0.8", "v0"})
OLD_TPOT = frozenset({"v1-0.10", "v1-0.8", "v0"})
V0 = frozenset({"v0"})
V1_OLD_PREFIX = frozenset({"v1-0.10", "v1-0.8"})


class Spec(NamedTuple):
    name: str
    type: str
    help: str
    source: str
    dialects: frozenset[str]


HELP_RUNNING_V1 = "Number of requests in model execution batches."
HELP_RUNNING_V0 = "Number of requests currently running on GPU."

SPECS: tuple[Spec, ...] = (
    Spec("vllm:num_requests_running", "gauge", HELP_RUNNING_V1, "running", V1),
    Spec("vllm:num_requests_running", "gauge", HELP_RUNNING_V0, "running", V0),
    Spec("vllm:num_requests_swapped", "gauge", "Number of requests swapped to CPU.", "zero", V0),
    Spec("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
         "waiting", ALL),
    Spec("vllm:num_requests_waiting_by_reason", "gauge",
         "Number of requests waiting to be processed, by reason.", "waiting_by_reason", NOW),
    Spec("vllm:gpu_cache_usage_perc", "gauge",
         "GPU KV-cache usage. 1 means 100 percent usage.", "kv_usage", OLD_CACHE),
    Spec("vllm:cpu_cache_usage_perc", "gauge",
         "CPU KV-cache usage. 1 means 100 percent usage.", "zero", V0),
    Spec("vllm:cpu_prefix_cache_hit_rate", "gauge", "CPU prefix cache block hit rate.",
         "zero", V0),
    Spec("vllm:gpu_prefix_cache_hit_rate", "gauge", "GPU prefix cache block hit rate.",
         "hit_rate", V0),
    Spec("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
         "kv_usage", NEW),
    Spec("vllm:engine_sleep_state", "gauge",
         "Engine sleep state: 1 for the state the engine is in, 0 for the others.",
         "sleep_state", NOW),
    Spec("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig",
         "cache_config", ALL),
    Spec("vllm:lora_requests_info", "gauge", "Running stats on lora requests.", "lora", ALL),
    Spec("vllm:gpu_prefix_cache_queries", "counter",
         "GPU prefix cache queries, in terms of number of queried tokens.",
         "prefix_queries", frozenset({"v1-0.10"})),
    Spec("vllm:gpu_prefix_cache_hits", "counter",
         "GPU prefix cache hits, in terms of number of cached tokens.",
         "prefix_hits", frozenset({"v1-0.10"})),
    Spec("vllm:gpu_prefix_cache_queries", "counter",
         "GPU prefix cache queries, in terms of number of queried blocks.",
         "prefix_queries_blocks", frozenset({"v1-0.8"})),
    Spec("vllm:gpu_prefix_cache_hits", "counter",
         "GPU prefix cache hits, in terms of number of cached blocks.",
         "prefix_hits_blocks", frozenset({"v1-0.8"})),
    Spec("vllm:prefix_cache_queries", "counter",
         "Prefix cache queries, in terms of number of queried tokens.", "prefix_queries", NEW),
    Spec("vllm:prefix_cache_hits", "counter",
         "Prefix cache hits, in terms of number of cached tokens.", "prefix_hits", NEW),
    Spec("vllm:external_prefix_cache_queries", "counter",
         "External prefix cache queries from KV connector cross-instance cache sharing, "
         "in terms of number of queried tokens.", "zero_counter", NOW),
    Spec("vllm:external_prefix_cache_hits", "counter",
         "External prefix cache hits from KV connector cross-instance cache sharing, "
         "in terms of number of cached tokens.", "zero_counter", NOW),
    Spec("vllm:mm_cache_queries", "counter",
         "Multi-modal cache queries, in terms of number of queried items.", "zero_counter", NOW),
    Spec("vllm:mm_cache_hits", "counter",
         "Multi-modal cache hits, in terms of number of cached items.", "zero_counter", NOW),
    Spec("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.",
         "preemptions", ALL),
    Spec("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.",
         "prompt_tokens", ALL),
    Spec("vllm:prompt_tokens_by_source", "counter", "Number of prompt tokens by source.",
         "prompt_by_source", NOW),
    Spec("vllm:prompt_tokens_cached", "counter",
         "Number of cached prompt tokens (local + external).", "prompt_cached", NOW),
    Spec("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
         "gen_tokens", ALL),
    Spec("vllm:tokens", "counter", "Number of prefill plus generation tokens processed.",
         "declared_only", V0),
    Spec("vllm:request_success", "counter", "Count of successfully processed requests.",
         "success", ALL),
    Spec("vllm:estimated_flops_per_gpu", "counter",
         "Estimated number of floating point operations per GPU (for Model Flops "
         "Utilization calculations).", "zero_counter", NOW),
    Spec("vllm:estimated_read_bytes_per_gpu", "counter",
         "Estimated number of bytes read from memory per GPU (for Model Flops "
         "Utilization calculations).", "zero_counter", NOW),
    Spec("vllm:estimated_write_bytes_per_gpu", "counter",
         "Estimated number of bytes written to memory per GPU (for Model Flops "
         "Utilization calculations).", "zero_counter", NOW),
    Spec("vllm:iteration_tokens_total", "histogram",
         "Histogram of number of tokens per engine_step.", "h:iter_tokens", ALL),
    Spec("vllm:time_to_first_token_seconds", "histogram",
         "Histogram of time to first token in seconds.", "h:ttft", ALL),
    Spec("vllm:inter_token_latency_seconds", "histogram",
         "Histogram of inter-token latency in seconds.", "h:itl", NOW),
    Spec("vllm:time_per_output_token_seconds", "histogram",
         "Histogram of time per output token in seconds.", "h:itl", OLD_TPOT),
    Spec("vllm:request_time_per_output_token_seconds", "histogram",
         "Histogram of time_per_output_token_seconds per request.", "h:tpot", NOW),
    Spec("vllm:e2e_request_latency_seconds", "histogram",
         "Histogram of e2e request latency in seconds.", "h:e2e", ALL),
    Spec("vllm:request_queue_time_seconds", "histogram",
         "Histogram of time spent in WAITING phase for request.", "h:queue", ALL),
    Spec("vllm:request_inference_time_seconds", "histogram",
         "Histogram of time spent in RUNNING phase for request.", "h:inference", ALL),
    Spec("vllm:request_prefill_time_seconds", "histogram",
         "Histogram of time spent in PREFILL phase for request.", "h:prefill", ALL),
    Spec("vllm:request_decode_time_seconds", "histogram",
         "Histogram of time spent in DECODE phase for request.", "h:decode", ALL),
    Spec("vllm:time_in_queue_requests", "histogram",
         "Histogram of time the request spent in the queue in seconds.", "h:queue", V0),
    Spec("vllm:request_prompt_tokens", "histogram", "Number of prefill tokens processed.",
         "h:prompt_len", ALL),
    Spec("vllm:request_generation_tokens", "histogram",
         "Number of generation tokens processed.", "h:gen_len", ALL),
    Spec("vllm:request_max_num_generation_tokens", "histogram",
         "Histogram of maximum number of requested generation tokens.", "h:max_gen", ALL),
    Spec("vllm:request_params_n", "histogram", "Histogram of the n request parameter.",
         "h:n", ALL),
    Spec("vllm:request_params_max_tokens", "histogram",
         "Histogram of the max_tokens request parameter.", "h:max_tokens", ALL),
    Spec("vllm:request_prefill_kv_computed_tokens", "histogram",
         "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
         "h:kv_computed", NOW),
)  # fmt: skip

PROMPT_SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")
LORA_SERIES_CAP = 256
SLEEP_STATES = ("awake", "weights_offloaded", "discard_all")


# The current name of a family -> the name older dialects expose it under (same meaning).
OLD_NAMES = {
    "vllm:kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
    "vllm:inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
    "vllm:prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
    "vllm:prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
}
_SINGLE_PROCESS_PREFIXES = ("process_", "python_")


def specs_for(dialect: str) -> list[Spec]:
    return [s for s in SPECS if dialect in s.dialects]


@cache
def _families_of(dialect: str) -> dict[str, str]:
    return {s.name: s.type for s in SPECS if dialect in s.dialects and s.source != "declared_only"}


def exposes(dialect: str, name: str) -> bool:
    """Whether a replica of `dialect` serves samples of `name` (a family or sample name:
    counters may be given with `_total`)."""
    fams = _families_of(dialect)
    if name in fams:
        return True
    return name.endswith("_total") and fams.get(name.removesuffix("_total")) == "counter"


def exposed_name(name: str, dialect: str, *, multiprocess: bool = False) -> str | None:
    """The name under which a replica of `dialect` serves what `name` (the current dialect's
    name) measures, or None when it serves nothing like it.

    Only `vllm:` names and prometheus_client's process/Python families depend on the
    replica; every other name (DCGM, gateway, `up`) is returned as given.
    """
    if name.startswith(_SINGLE_PROCESS_PREFIXES):
        return None if multiprocess else name
    if not name.startswith("vllm:"):
        return name
    if exposes(dialect, name):
        return name
    base = name.removesuffix("_total")
    total = base != name and _families_of("current").get(base) == "counter"
    base = base if total else name
    old = OLD_NAMES.get(base)
    if old is None:
        return None
    old_name = old + "_total" if total else old
    return old_name if exposes(dialect, old_name) else None


def engine_labels(replica: Replica, engine: Engine) -> Labels:
    model = (("model_name", replica.cfg.model.served_name),)
    if replica.dialect in NEW:
        return (("engine", str(engine.rank)), *model)
    return model


def engine_families(replica: Replica, unix_now: float) -> list[Family]:
    """Every `vllm:` family this replica's dialect registers, filled from its engines."""
    dialect = replica.dialect
    created_ok = dialect in NEW and not replica.multiprocess
    out: list[Family] = []
    for engine in replica.engines:
        engine.stats.flush()
    for spec in specs_for(dialect):
        if spec.source == "lora" and not replica.cfg.deployment.enable_lora:
            continue
        fam = Family(spec.name, spec.type, spec.help)
        if spec.source == "lora":
            _lora(fam, replica, unix_now)
        else:
            for engine in replica.engines:
                labels = engine_labels(replica, engine)
                created = engine.stats.created if created_ok else None
                _fill(fam, spec.source, replica, engine, labels, created)
        out.append(fam)
    return out


def _fill(
    fam: Family,
    source: str,
    replica: Replica,
    engine: Engine,
    labels: Labels,
    created: float | None,
) -> None:
    st = engine.stats
    if source.startswith("h:"):
        fam.add_histogram(labels, getattr(st, source[2:]), created, sum_first=replica.multiprocess)
    elif source in _COUNTERS:
        fam.add_counter(labels, _COUNTERS[source](engine), created)
    elif source in _GAUGES:
        fam.add(labels, _GAUGES[source](engine))
    elif source == "waiting_by_reason":
        deferred = engine.waiting_deferred()
        fam.add((*labels, ("reason", "capacity")), engine.n_waiting - deferred)
        fam.add((*labels, ("reason", "deferred")), deferred)
    elif source == "sleep_state":
        for state in SLEEP_STATES:
            fam.add((*labels, ("sleep_state", state)), 1.0 if state == "awake" else 0.0)
    elif source == "cache_config":
        fam.add(_cache_config_labels(replica, engine), 1.0)
    elif source == "prompt_by_source":
        parts = (st.prompt_computed, st.prompt_cached, 0)
        for src, value in zip(PROMPT_SOURCES, parts, strict=True):
            fam.add_counter((*labels, ("source", src)), value, created)
    elif source == "success":
        for reason, value in st.success.items():
            fam.add_counter((*labels, ("finished_reason", reason)), value, created)
    elif source != "declared_only":
        raise ValueError(f"unknown metric source {source!r}")


_GAUGES = {
    "running": lambda e: float(e.n_running),
    "waiting": lambda e: float(e.n_waiting),
    "kv_usage": Engine.kv_usage,
    "zero": lambda e: 0.0,
    "hit_rate": lambda e: (
        e.stats.prefix_hits_blocks / e.stats.prefix_queries_blocks
        if e.stats.prefix_queries_blocks
        else 0.0
    ),
}
_COUNTERS = {
    "prefix_queries": lambda e: e.stats.prefix_queries,
    "prefix_hits": lambda e: e.stats.prefix_hits,
    "prefix_queries_blocks": lambda e: e.stats.prefix_queries_blocks,
    "prefix_hits_blocks": lambda e: e.stats.prefix_hits_blocks,
    "preemptions": lambda e: e.stats.preemptions,
    "prompt_tokens": lambda e: e.stats.prompt_tokens,
    "prompt_cached": lambda e: e.stats.prompt_cached,
    "gen_tokens": lambda e: e.stats.gen_tokens,
    "zero_counter": lambda e: 0,
}


def _cache_config_labels(replica: Replica, engine: Engine) -> Labels:
    cfg, dep = replica.cfg, replica.cfg.deployment
    fields = {
        "block_size": str(cfg.block_size),
        "cache_dtype": dep.kv_dtype,
        "calculate_kv_scales": "False",
        "cpu_offload_gb": "0",
        "enable_prefix_caching": "True",
        "gpu_memory_utilization": str(dep.gpu_memory_utilization),
        "num_gpu_blocks": str(cfg.num_gpu_blocks),
        "num_gpu_blocks_override": "None",
        "sliding_window": "None",
    }
    if replica.dialect == "current":
        concurrency = cfg.kv_tokens / cfg.max_model_len
        fields |= {
            "engine": str(engine.rank),
            "kv_cache_max_concurrency": f"{concurrency:.2f}",
            "kv_cache_size_tokens": str(cfg.kv_tokens),
            "mamba_cache_dtype": "auto",
            "num_cpu_blocks": "None",
            "prefix_caching_hash_algo": "sha256",
        }
    else:
        swap_blocks = 4 * 1024**3 // (engine.step.kv_bytes * cfg.tp * cfg.block_size)
        fields |= {
            "is_attention_free": "False",
            "num_cpu_blocks": str(int(swap_blocks)) if replica.dialect == "v0" else "None",
            "swap_space": "4",
            "swap_space_bytes": str(4 * 1024**3),
        }
        if replica.dialect == "v1-0.10":
            fields |= {"engine": str(engine.rank), "prefix_caching_hash_algo": "builtin"}
    return tuple(sorted(fields.items()))


def _lora(fam: Family, replica: Replica, unix_now: float) -> None:
    """One series per adapter mix ever observed; its value is when it was last seen."""
    running: set[str] = set()
    waiting: set[str] = set()
    for engine in replica.engines:
        running.update(engine.lora_active)
        waiting.update(r.lora for r in engine.waiting if r.lora and r.state == WAITING)
    key = (
        str(replica.cfg.deployment.max_loras),
        ",".join(sorted(running)),
        ",".join(sorted(waiting)),
    )
    seen_mixes = replica.lora_seen
    seen_mixes[key] = unix_now
    if len(seen_mixes) > LORA_SERIES_CAP:
        # vLLM keeps every mix forever; a cap keeps week-long simulations bounded.
        for stale in sorted(seen_mixes, key=seen_mixes.__getitem__)[: len(seen_mixes) // 4]:
            del seen_mixes[stale]
    for (max_lora, run, wait), seen in seen_mixes.items():
        labels = (
            ("max_lora", max_lora),
            ("running_lora_adapters", run),
            ("waiting_lora_adapters", wait),
        )
        fam.add(labels, seen)
