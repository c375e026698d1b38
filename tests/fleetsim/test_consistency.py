"""Numbers that reconcile: histograms, counters and the gateway agree with each other."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from fleetsim.history import History
from fleetsim.signals import Flat, Recording

END = 1_767_225_600.0 + 14 * 3600  # a fixed afternoon, so runs are reproducible
MONOTONIC_SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def record(**kwargs: Any) -> Recording:
    options: dict[str, Any] = {"replicas": 3, "hours": 0.1, "end": END, "seed": 1} | kwargs
    return Recording.of(History(**options))


@pytest.fixture(scope="module")
def steady() -> Recording:
    return record()


def total(flat: Flat, name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, lab), v in flat.items() if n == name and want <= set(lab))


def last_scrapes(rec: Recording, job: str) -> list[Flat]:
    instances = [t["instance"] for t in rec.manifest["targets"] if t["labels"]["job"] == job]
    return [flat for i in instances if (flat := rec.scrapes[i][-1]) is not None]


def cumulative_series(rec: Recording) -> dict[tuple[str, str, tuple], list[float | None]]:
    """Every counter-like series (counters, histogram parts, summary parts) over time."""
    series: dict[tuple[str, str, tuple], list[float | None]] = defaultdict(list)
    for inst, scrapes in rec.scrapes.items():
        keys = {k for flat in scrapes if flat for k in flat}
        for name, labels in keys:
            kind = rec.types[name]
            if kind in ("counter", "histogram", "summary") and name.endswith(MONOTONIC_SUFFIXES):
                series[(inst, name, labels)] = [
                    f.get((name, labels)) if f else None for f in scrapes
                ]
    return series


@pytest.mark.parametrize("dialect", ["current", "v1-0.10", "v1-0.8", "v0"])
def test_histogram_buckets_are_cumulative_and_inf_equals_count(dialect: str) -> None:
    rec = record(dialect=dialect, replicas=2, hours=0.05)
    checked = 0
    for scrapes in rec.scrapes.values():
        for flat in (f for f in scrapes if f):
            buckets: dict[tuple[str, tuple], list[tuple[float, float]]] = defaultdict(list)
            for (name, labels), value in flat.items():
                if name.endswith("_bucket"):
                    le = dict(labels)["le"]
                    rest = tuple(p for p in labels if p[0] != "le")
                    buckets[(name[: -len("_bucket")], rest)].append((float(le), value))
            for (base, labels), points in buckets.items():
                counts = [v for _, v in sorted(points)]
                assert counts == sorted(counts), base
                assert sorted(points)[-1][0] == float("inf")
                assert counts[-1] == flat[(base + "_count", labels)], base
                checked += 1
    assert checked > 100


def test_counters_never_decrease_in_a_steady_fleet(steady: Recording) -> None:
    series = cumulative_series(steady)
    assert len(series) > 500
    for key, values in series.items():
        seen = [v for v in values if v is not None]
        assert all(b >= a for a, b in zip(seen, seen[1:], strict=False)), key


def test_counters_reset_only_when_the_process_restarts() -> None:
    rec = record(scenario="cold-restart", replicas=2, hours=0.2, at=200.0, duration=400.0)
    starts = {
        inst: [total(f, "process_start_time_seconds") if f else None for f in scrapes]
        for inst, scrapes in rec.scrapes.items()
    }
    resets = 0
    for (inst, name, _), values in cumulative_series(rec).items():
        last_value, last_start = None, None
        for value, start in zip(values, starts[inst], strict=True):
            if value is None:
                continue
            if last_value is not None and value < last_value:
                assert start != last_start, (inst, name)  # a decrease means a new process
                resets += 1
            last_value, last_start = value, start
    assert resets > 50  # the restarted replica's counters did start over


def test_finished_requests_agree_between_counters_and_histograms(steady: Recording) -> None:
    for flat in last_scrapes(steady, "vllm"):
        finished = total(flat, "vllm:request_success_total")
        assert finished == total(flat, "vllm:e2e_request_latency_seconds_count") > 0
        prompt = total(flat, "vllm:prompt_tokens_total")
        computed = total(flat, "vllm:prompt_tokens_by_source_total", source="local_compute")
        cached = total(flat, "vllm:prompt_tokens_by_source_total", source="local_cache_hit")
        assert computed + cached == prompt
        assert total(flat, "vllm:prompt_tokens_cached_total") == cached
        assert total(flat, "vllm:prefix_cache_hits_total") <= total(
            flat, "vllm:prefix_cache_queries_total"
        )
        # Tokens of finished requests are counted once more by the per-request histogram.
        assert total(flat, "vllm:generation_tokens_total") >= total(
            flat, "vllm:request_generation_tokens_sum"
        )


def test_gateway_reconciles_with_the_replicas_it_routes_to(steady: Recording) -> None:
    replicas = last_scrapes(steady, "vllm")
    (gateway,) = last_scrapes(steady, "fleetscope-gateway")
    answered = total(gateway, "fleetscope_gateway_requests_total")
    finished = sum(total(f, "vllm:request_success_total") for f in replicas)
    rejected = sum(total(f, "http_requests_total", status="4xx") for f in replicas)
    assert answered == finished + rejected
    generated = sum(total(f, "vllm:request_generation_tokens_sum") for f in replicas)
    assert total(gateway, "fleetscope_gateway_generation_tokens_total") == generated
    prompts = sum(total(f, "vllm:request_prompt_tokens_sum") for f in replicas)
    assert total(gateway, "fleetscope_gateway_prompt_tokens_total") == prompts


def test_dcgm_series_join_to_their_replica_by_pod_and_namespace(steady: Recording) -> None:
    by_job = defaultdict(list)
    for t in steady.manifest["targets"]:
        by_job[t["labels"]["job"]].append(t)
    pods = {t["labels"]["pod"]: t for t in by_job["vllm"]}
    uuids = set()
    for replica in steady.manifest["replicas"]:
        flat = steady.scrapes[replica["instances"]["dcgm"]][-1]
        assert flat is not None
        util = [dict(lab) for (n, lab) in flat if n == "DCGM_FI_DEV_GPU_UTIL"]
        assert len(util) == replica["tensor_parallel_size"] * replica["data_parallel_size"]
        for labels in util:
            assert labels["pod"] == replica["pod"] and labels["pod"] in pods
            assert labels["namespace"] == pods[labels["pod"]]["labels"]["namespace"]
            assert labels["Hostname"] == replica["node"]
            uuids.add(labels["UUID"])
    assert len(uuids) == sum(
        r["tensor_parallel_size"] * r["data_parallel_size"] for r in steady.manifest["replicas"]
    )
