"""Each dialect's /metrics against the vLLM reference (names, types, labels, buckets)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fleetsim.api import sample_exposition
from fleetsim.dialects import exposed_name
from fleetsim.fleet import FleetModel
from tests.fleetsim.conftest import families, lint_problems, samples

# Bucket sets copied from the reference (section 3 and the changes of section 6).
TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
        20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]  # fmt: skip
TOK = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
       20.0, 40.0, 80.0]  # fmt: skip
REQ = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
       240.0, 480.0, 960.0, 1920.0, 7680.0]  # fmt: skip
ITER = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
ITER_V0 = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8096]
CAPTURE_SIZES = [1, 2, 4, *range(8, 257, 8)]  # early V1; capped at max_num_seqs 256
N = [1, 2, 5, 10, 20]
TOKENS_32K = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000]
OLD = {"ttft": [b for b in TTFT if b <= 10], "tok": [b for b in TOK if b <= 2.5],
       "req": [b for b in REQ if b <= 60]}  # fmt: skip
NEW = {"ttft": TTFT, "tok": TOK, "req": REQ}

LATENCY = ("vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
           "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
           "vllm:request_inference_time_seconds")  # fmt: skip
LENGTHS = ("vllm:request_prompt_tokens", "vllm:request_generation_tokens",
           "vllm:request_max_num_generation_tokens", "vllm:request_params_max_tokens")  # fmt: skip


def expected(dialect: str) -> dict[str, tuple[str, frozenset[str], list[float] | None]]:
    """family -> (type, label names besides model_name/engine/le, buckets) per the reference."""
    b = NEW if dialect in ("current", "v1-0.10") else OLD
    none: frozenset[str] = frozenset()
    fams: dict[str, tuple[str, frozenset[str], list[float] | None]] = {
        "vllm:num_requests_running": ("gauge", none, None),
        "vllm:num_requests_waiting": ("gauge", none, None),
        "vllm:num_preemptions_total": ("counter", none, None),
        "vllm:prompt_tokens_total": ("counter", none, None),
        "vllm:generation_tokens_total": ("counter", none, None),
        "vllm:request_success_total": ("counter", frozenset({"finished_reason"}), None),
        "vllm:time_to_first_token_seconds": ("histogram", none, b["ttft"]),
        "vllm:request_params_n": ("histogram", none, [float(x) for x in N]),
    }
    fams |= {name: ("histogram", none, b["req"]) for name in LATENCY}
    fams |= {name: ("histogram", none, [float(x) for x in TOKENS_32K]) for name in LENGTHS}
    if dialect == "current":
        fams |= {
            "vllm:num_requests_waiting_by_reason": ("gauge", frozenset({"reason"}), None),
            "vllm:kv_cache_usage_perc": ("gauge", none, None),
            "vllm:engine_sleep_state": ("gauge", frozenset({"sleep_state"}), None),
            "vllm:prompt_tokens_by_source_total": ("counter", frozenset({"source"}), None),
            "vllm:inter_token_latency_seconds": ("histogram", none, TOK),
            "vllm:request_time_per_output_token_seconds": ("histogram", none, TOK),
            "vllm:request_prefill_kv_computed_tokens": (
                "histogram", none, [float(x) for x in TOKENS_32K]),
            "vllm:iteration_tokens_total": ("histogram", none, [float(x) for x in ITER]),
        }  # fmt: skip
        for name in ("prefix_cache_queries", "prefix_cache_hits", "external_prefix_cache_queries",
                     "external_prefix_cache_hits", "mm_cache_queries", "mm_cache_hits",
                     "prompt_tokens_cached", "estimated_flops_per_gpu",
                     "estimated_read_bytes_per_gpu", "estimated_write_bytes_per_gpu"):  # fmt: skip
            fams[f"vllm:{name}_total"] = ("counter", none, None)
    else:
        fams["vllm:time_per_output_token_seconds"] = ("histogram", none, b["tok"])
        fams["vllm:gpu_cache_usage_perc"] = ("gauge", none, None)
    if dialect == "v1-0.10":
        fams["vllm:kv_cache_usage_perc"] = ("gauge", none, None)
        for name in ("prefix_cache_queries", "prefix_cache_hits", "gpu_prefix_cache_queries",
                     "gpu_prefix_cache_hits"):  # fmt: skip
            fams[f"vllm:{name}_total"] = ("counter", none, None)
        fams["vllm:iteration_tokens_total"] = ("histogram", none, [float(x) for x in ITER])
    if dialect == "v1-0.8":
        fams["vllm:gpu_prefix_cache_queries_total"] = ("counter", none, None)
        fams["vllm:gpu_prefix_cache_hits_total"] = ("counter", none, None)
        capture = [float(x) for x in CAPTURE_SIZES]
        fams["vllm:iteration_tokens_total"] = ("histogram", none, capture)
    if dialect == "v0":
        for name in ("num_requests_swapped", "cpu_cache_usage_perc", "gpu_prefix_cache_hit_rate",
                     "cpu_prefix_cache_hit_rate"):  # fmt: skip
            fams[f"vllm:{name}"] = ("gauge", none, None)
        fams["vllm:tokens_total"] = ("counter", none, None)  # declared, never populated
        fams["vllm:time_in_queue_requests"] = ("histogram", none, b["req"])
        fams["vllm:iteration_tokens_total"] = ("histogram", none, [float(x) for x in ITER_V0])
    return fams


HTTP = {
    "http_requests_total": "counter",
    "http_request_size_bytes": "summary",
    "http_response_size_bytes": "summary",
    "http_request_duration_highr_seconds": "histogram",
    "http_request_duration_seconds": "histogram",
}
PROCESS = {
    "python_gc_objects_collected_total", "python_gc_objects_uncollectable_total",
    "python_gc_collections_total", "python_info", "process_virtual_memory_bytes",
    "process_resident_memory_bytes", "process_start_time_seconds", "process_cpu_seconds_total",
    "process_open_fds", "process_max_fds",
}  # fmt: skip
LAYOUTS = [("current", 1), ("current", 2), ("v1-0.10", 1), ("v1-0.10", 4), ("v1-0.8", 1), ("v0", 1)]


@pytest.fixture(scope="module")
def expositions() -> dict[tuple[str, int], str]:
    return {(d, dp): sample_exposition(dialect=d, dp=dp, seed=3) for d, dp in LAYOUTS}


@pytest.mark.parametrize(("dialect", "dp"), LAYOUTS)
def test_every_dialect_parses_with_prometheus_clients_parser(
    expositions: dict[tuple[str, int], str], dialect: str, dp: int
) -> None:
    parsed = list(text_string_to_metric_families(expositions[(dialect, dp)]))
    assert len(parsed) > 30


@pytest.mark.parametrize(("dialect", "dp"), LAYOUTS)
def test_every_dialect_passes_promtool_check_metrics_except_vllms_own_naming(
    expositions: dict[tuple[str, int], str], dialect: str, dp: int, promtool: str
) -> None:
    status, problems = lint_problems(promtool, expositions[(dialect, dp)])
    # Real vLLM output draws exactly these lint complaints: colons in every name, and a
    # histogram called iteration_tokens_total. Anything else (or a parse error) is ours.
    assert status in (0, 3), problems
    assert problems <= {
        "metric names should not contain ':'",
        'non-counter metrics should not have "_total" suffix',
    }


@pytest.mark.parametrize(("dialect", "dp"), LAYOUTS)
def test_vllm_families_types_labels_and_buckets_match_the_reference(
    expositions: dict[tuple[str, int], str], dialect: str, dp: int
) -> None:
    got = families(expositions[(dialect, dp)])
    want = expected(dialect)
    vllm = {n for n in got if n.startswith("vllm:") and not n.endswith("_created")}
    # Flag-gated families: the LoRA info and the configuration info are always on here.
    assert vllm - {"vllm:lora_requests_info", "vllm:cache_config_info"} == set(want)
    base = {"model_name", "engine"} if dialect in ("current", "v1-0.10") else {"model_name"}
    for name, (type_, extra, buckets) in want.items():
        got_type, got_samples = got[name]
        assert got_type == type_, name
        for s in got_samples:
            assert set(s.labels) - {"le"} == base | extra, (name, s.labels)
        if buckets is not None:
            les = [s.labels["le"] for s in got_samples if s.name.endswith("_bucket")]
            finite = sorted({float(le) for le in les if le != "+Inf"})
            assert finite == buckets, name
            assert "+Inf" in les


@pytest.mark.parametrize(("dialect", "dp"), LAYOUTS)
def test_http_and_process_families_follow_the_process_layout(
    expositions: dict[tuple[str, int], str], dialect: str, dp: int
) -> None:
    got = families(expositions[(dialect, dp)])
    for name, type_ in HTTP.items():
        assert got[name][0] == type_
    highr = [s for s in got["http_request_duration_highr_seconds"][1] if "le" in s.labels]
    assert all(set(s.labels) == {"le"} for s in highr)
    if dp == 1:
        assert set(got) >= PROCESS
    else:
        assert not {n for n in got if n.startswith(("python_", "process_"))}


@pytest.mark.parametrize(("dialect", "dp"), LAYOUTS)
def test_created_series_appear_only_where_that_vllm_emitted_them(
    expositions: dict[tuple[str, int], str], dialect: str, dp: int
) -> None:
    created = [n for n in families(expositions[(dialect, dp)]) if n.endswith("_created")]
    if dialect in ("current", "v1-0.10") and dp == 1:
        assert "vllm:prompt_tokens_created" in created
        assert "vllm:time_to_first_token_seconds_created" in created
    else:
        assert created == []


def test_data_parallel_engines_are_labelled_zero_to_n_minus_one(
    expositions: dict[tuple[str, int], str],
) -> None:
    got = families(expositions[("v1-0.10", 4)])
    engines = {s.labels["engine"] for s in got["vllm:num_requests_running"][1]}
    assert engines == {"0", "1", "2", "3"}


def test_multiprocess_histograms_print_the_sum_first(
    expositions: dict[tuple[str, int], str],
) -> None:
    lines = [
        line
        for line in expositions[("current", 2)].splitlines()
        if line.startswith("vllm:e2e_request_latency_seconds") and 'engine="1"' in line
    ]
    assert lines[0].startswith("vllm:e2e_request_latency_seconds_sum")
    assert lines[-1].startswith("vllm:e2e_request_latency_seconds_count")


def test_finished_reasons_per_dialect(expositions: dict[tuple[str, int], str]) -> None:
    def reasons(dialect: str) -> set[str]:
        got = families(expositions[(dialect, 1)])
        return {s.labels["finished_reason"] for s in got["vllm:request_success_total"][1]}

    assert reasons("current") == {"stop", "length", "abort", "error", "repetition"}
    assert reasons("v1-0.10") == {"stop", "length", "abort"}
    assert reasons("v0") <= {"stop", "length", "abort"}


def test_labels_on_every_sample_line_are_in_alphabetical_order(
    expositions: dict[tuple[str, int], str],
) -> None:
    for line in expositions[("current", 1)].splitlines():
        if "{" in line and not line.startswith("#"):
            inner = line[line.index("{") + 1 : line.rindex("}")]
            names = [pair.split("=", 1)[0] for pair in inner.split('",') if pair]
            assert names == sorted(names), line


@pytest.mark.parametrize(("max_model_len", "last"), [(4096, 2000), (8192, 5000), (32768, 20000)])
def test_token_count_buckets_follow_max_model_len(max_model_len: int, last: int) -> None:
    text = sample_exposition(max_model_len=max_model_len, warm_seconds=60)
    les = {
        float(s.labels["le"])
        for s in samples(text)
        if s.name == "vllm:request_prompt_tokens_bucket" and s.labels["le"] != "+Inf"
    }
    assert max(les) == last


def test_sample_exposition_is_deterministic_for_a_seed() -> None:
    assert sample_exposition(seed=7, warm_seconds=120) == sample_exposition(
        seed=7, warm_seconds=120
    )
    assert sample_exposition(seed=7, warm_seconds=120) != sample_exposition(
        seed=8, warm_seconds=120
    )


def test_kv_cache_size_comes_from_the_model_config() -> None:
    info = next(
        s for s in samples(sample_exposition(warm_seconds=30)) if s.name == "vllm:cache_config_info"
    )
    # Llama 3.1 8B: 2 x 32 layers x 8 KV heads x 128 dims x 2 bytes (BF16) per token.
    bytes_per_token = 2 * 32 * 8 * 128 * 2
    h100 = 81559 * 1024**2
    tokens = int(info.labels["kv_cache_size_tokens"])
    free = tokens * bytes_per_token
    # What the KV cache gets: 90% of the card minus weights and a few GiB of runtime.
    assert 0.9 * h100 - 8.03e9 * 2 - 4 * 1024**3 < free < 0.9 * h100 - 8.03e9 * 2
    assert int(info.labels["num_gpu_blocks"]) == tokens // 16


def test_a_fleet_model_takes_a_dialect_per_replica() -> None:
    fleet = FleetModel(replicas=3, dialect="v1-0.10", dialect_of={1: "v0", 2: "current"})
    fleet.advance_to(30.0)
    names = [{f.name for f in fleet.vllm_families(i)} for i in range(3)]
    assert "vllm:gpu_prefix_cache_queries" in names[0] and "vllm:engine_sleep_state" not in names[0]
    assert "vllm:num_requests_swapped" in names[1]
    assert "vllm:engine_sleep_state" in names[2] and "vllm:gpu_cache_usage_perc" not in names[2]


@pytest.mark.parametrize(
    ("dialect_of", "says"),
    [
        ({4: "v0"}, "names replica 4, but the fleet has 0..2"),
        ({1: "v2"}, "unknown dialect 'v2'"),
    ],
)
def test_a_dialect_per_replica_must_name_a_replica_and_a_dialect(
    dialect_of: dict[int, str], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        FleetModel(replicas=3, dialect_of=dialect_of)


@pytest.mark.parametrize(
    ("name", "dialect", "exposed"),
    [
        ("vllm:kv_cache_usage_perc", "v1-0.10", "vllm:kv_cache_usage_perc"),
        ("vllm:kv_cache_usage_perc", "v1-0.8", "vllm:gpu_cache_usage_perc"),
        ("vllm:inter_token_latency_seconds", "v1-0.10", "vllm:time_per_output_token_seconds"),
        ("vllm:prefix_cache_hits_total", "v1-0.8", "vllm:gpu_prefix_cache_hits_total"),
        ("vllm:prefix_cache_hits_total", "v0", None),
        ("vllm:num_requests_waiting_by_reason", "v1-0.10", None),
        ("vllm:iteration_tokens_total", "v0", "vllm:iteration_tokens_total"),
        ("DCGM_FI_DEV_SM_CLOCK", "v0", "DCGM_FI_DEV_SM_CLOCK"),
    ],
)
def test_each_current_name_resolves_to_what_an_older_dialect_exposes(
    name: str, dialect: str, exposed: str | None
) -> None:
    assert exposed_name(name, dialect) == exposed
    assert exposed_name("process_cpu_seconds_total", dialect, multiprocess=True) is None
