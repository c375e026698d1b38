"""What the capacity review measures on a fleet, for one served model: length percentiles,
peak arrival rate, mu_good (from the SLO app), replica count, the cache config vLLM
reports, service demand per request and mean concurrency.

Every figure is a `Quantity` with origin "measured" and a source naming the metric, the
statistic and the window; a figure the fleet cannot give is "needs measurement" with the
reason, never a guess. The window is the last 7 days, clipped to what the backend holds
(the embedded store keeps hours, Prometheus days).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from capacity.figures import Quantity
from inventory.gpus import latest_series_labels
from inventory.models import Fleet
from inventory.selectors import scope_endpoints
from inventory.store import store_span
from queries import (
    Backend,
    Gauge,
    Mean,
    Quantile,
    QueryResult,
    Rate,
    Scope,
    Spec,
    Window,
    run_queries,
)

LOOKBACK = timedelta(days=7)
# Arrival rates are read as 5-minute rates; the peak is their 99th percentile, so one
# burst does not size the fleet and a daily peak does.
PEAK_RATE_SECONDS = 300.0
PEAK_PERCENTILE = 99.0
LENGTH_QUANTILES = (0.5, 0.95, 0.99)
INSTANT_STEP_SECONDS = 60.0
# vLLM's info metric carries the cache config as label values (reference, table A).
CACHE_CONFIG_LABELS = ("num_gpu_blocks", "block_size")
# Query results that mean the fleet lacks the metric (not merely a quiet window).
NOT_EXPOSED_REASONS = frozenset({"not-exposed", "removed", "flag-gated", "not-in-vllm"})


@dataclass(frozen=True)
class CacheConfig:
    num_gpu_blocks: int
    block_size: int
    instance: str
    gpu_memory_utilization: float | None = None

    @property
    def kv_tokens(self) -> int:
        return self.num_gpu_blocks * self.block_size


@dataclass(frozen=True)
class FleetMeasurements:
    """One model's measured inputs, each a Quantity (value None: needs measurement)."""

    model_name: str
    window: str  # "2026-11-24T10:00Z .. 2026-12-01T10:00Z (7 d)"
    backend: str
    prompt_tokens: Mapping[float, Quantity]  # by quantile
    output_tokens: Mapping[float, Quantity]
    lambda_peak: Quantity
    mu_good: Quantity
    current_replicas: Quantity
    prefill_seconds: Quantity
    decode_seconds: Quantity
    concurrency: Quantity
    cache_config: CacheConfig | None
    missing_metrics: tuple[str, ...] = field(default=())


def fleet_models(fleet: Fleet) -> list[str]:
    """The model names the fleet's engines serve now."""
    endpoints = [e for e in scope_endpoints(fleet=fleet) if e.kind == "engine"]
    instances = {e.instance for e in endpoints}
    found: set[str] = set()
    layouts = latest_series_labels(fleet, instances)
    for series in layouts.values():
        found.update(labels["model_name"] for labels in series if labels.get("model_name"))
    return sorted(found)


def fleet_measurements(
    fleet: Fleet, *, model_name: str, backend: Backend, at: datetime | None = None
) -> FleetMeasurements:
    end = (at or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    start, note = _span(fleet, backend, end)
    seconds = (end - start).total_seconds()
    window = f"{start:%Y-%m-%dT%H:%MZ} .. {end:%Y-%m-%dT%H:%MZ} ({note})"
    scope = Scope(fleet, model_name)
    # The engines' latest layouts, read once: which serve the model, and their cache config.
    layouts = latest_series_labels(
        fleet, {e.instance for e in scope_endpoints(fleet=fleet) if e.kind == "engine"}
    )
    engines = {
        instance
        for instance, series in layouts.items()
        if any(labels.get("model_name") == model_name for labels in series)
    }
    if seconds < PEAK_RATE_SECONDS:
        why = f"the {backend} backend holds under 5 minutes of this fleet"
        return FleetMeasurements(
            model_name, window, backend,
            {q: _needs(why, f"prompt_tokens_p{_pct(q)}", "tokens") for q in LENGTH_QUANTILES},
            {q: _needs(why, f"output_tokens_p{_pct(q)}", "tokens") for q in LENGTH_QUANTILES},
            _needs(why, "lambda_peak_requests_per_second", "requests_per_second"),
            _mu_good(fleet, model_name, backend, end), _replicas(engines),
            _needs(why, "prefill_seconds_per_request", "seconds"),
            _needs(why, "decode_seconds_per_request", "seconds"),
            _needs(why, "concurrency_requests", "requests"),
            _cache_config(layouts, engines),
        )  # fmt: skip
    instant = Window(end - timedelta(seconds=INSTANT_STEP_SECONDS), end, INSTANT_STEP_SECONDS)
    # On the 5-minute grid, so the peak is the same figure on every read within a step
    # (a page and its JSON, two reloads) rather than moving with the clock's seconds.
    grid_end = datetime.fromtimestamp(end.timestamp() // PEAK_RATE_SECONDS * PEAK_RATE_SECONDS, UTC)
    series = Window(min(start, grid_end), grid_end, PEAK_RATE_SECONDS).bounded()
    specs: dict[str, Spec] = {
        **{f"{side}_{q}": Quantile(f"{side}_len", q, window_seconds=seconds)
           for side in ("prompt", "output") for q in LENGTH_QUANTILES},
        "prefill": Mean("prefill_time", window_seconds=seconds),
        "decode": Mean("decode_time", window_seconds=seconds),
        "arrivals": Rate("request_success", window_seconds=PEAK_RATE_SECONDS),
        "running": Gauge("running"),
        "waiting": Gauge("waiting"),
    }  # fmt: skip
    windows = {key: instant for key in specs if key not in ("arrivals", "running", "waiting")}
    results = run_queries(specs, scope=scope, window=series, backend=backend, windows=windows)
    missing = tuple(
        dict.fromkeys(
            r.message or r.reason for r in results.values() if r.reason in NOT_EXPOSED_REASONS
        )
    )
    length = f"over {window}"
    return FleetMeasurements(
        model_name=model_name,
        window=window,
        backend=backend,
        prompt_tokens={
            q: _last(results[f"prompt_{q}"], f"prompt_tokens_p{_pct(q)}", "tokens",
                     f"p{_pct(q)} of {_name(results[f'prompt_{q}'])} {length}")
            for q in LENGTH_QUANTILES
        },
        output_tokens={
            q: _last(results[f"output_{q}"], f"output_tokens_p{_pct(q)}", "tokens",
                     f"p{_pct(q)} of {_name(results[f'output_{q}'])} {length}")
            for q in LENGTH_QUANTILES
        },
        lambda_peak=_peak(results["arrivals"], window),
        mu_good=_mu_good(fleet, model_name, backend, end),
        current_replicas=_replicas(engines),
        prefill_seconds=_last(results["prefill"], "prefill_seconds_per_request", "seconds",
                              f"mean of {_name(results['prefill'])} {length}"),
        decode_seconds=_last(results["decode"], "decode_seconds_per_request", "seconds",
                             f"mean of {_name(results['decode'])} {length}"),
        concurrency=_concurrency(results["running"], results["waiting"], window),
        cache_config=_cache_config(layouts, engines),
        missing_metrics=missing,
    )  # fmt: skip


def _span(fleet: Fleet, backend: Backend, end: datetime) -> tuple[datetime, str]:
    if backend == "prometheus":
        return end - LOOKBACK, "7 d from Prometheus"
    ids = [e.endpoint_id for e in scope_endpoints(fleet=fleet)]
    held = store_span(ids)
    if held is None:
        return end, "the embedded store holds no samples yet"
    if held[0] >= end:
        return end, "the embedded store holds no samples before this time"
    start = max(held[0].astimezone(UTC), end - LOOKBACK)
    hours = (end - start).total_seconds() / 3600
    return start, f"{hours:.1f} h the embedded store holds, of 7 d"


def _pct(q: float) -> str:
    return f"{q * 100:g}"


def _name(result: QueryResult) -> str:
    return result.resolved_name or "(not exposed)"


def _needs(reason: str, key: str, unit: str) -> Quantity:
    return Quantity(key, None, unit, "needs measurement", note=reason)


def _last(result: QueryResult, key: str, unit: str, source: str) -> Quantity:
    if not result.has_data:
        return _needs(result.message or result.reason, key, unit)
    values = [v for s in result.series for v in s.values[-1:] if v is not None and math.isfinite(v)]
    if not values:
        floor = [s.lower[-1] for s in result.series if s.lower and s.lower[-1] is not None]
        if floor:  # past the last bucket edge the replicas share: a floor, not a value
            return _needs(f"above {floor[0]:g} {unit}, the last bucket edge every replica "
                          "shares: the histogram cannot say how far", key, unit)  # fmt: skip
        return _needs("no requests finished in the window", key, unit)
    note = "; ".join(result.warnings)
    bounds = [(s.lower[-1], s.upper[-1]) for s in result.series if s.lower is not None and s.upper]
    if bounds and bounds[0][0] is not None and bounds[0][1] is not None:
        low, high = bounds[0]
        note = "; ".join(x for x in (f"within the bucket ({low:g}, {high:g}]", note) if x)
    return Quantity(key, values[0], unit, "measured", source, note)


def _peak(result: QueryResult, window: str) -> Quantity:
    key, unit = "lambda_peak_requests_per_second", "requests_per_second"
    if not result.has_data:
        return _needs(result.message or result.reason, key, unit)
    totals = _summed(result)
    if not totals:
        return _needs("no finished requests in the window", key, unit)
    value = float(np.percentile(totals, PEAK_PERCENTILE))
    source = (
        f"p{PEAK_PERCENTILE:g} of {len(totals)} 5-minute rates of {_name(result)} over {window}"
    )
    note = "finishes stand in for arrivals: over 5 minutes they differ by the queue"
    return Quantity(key, value, unit, "measured", source, note)


def _summed(result: QueryResult) -> list[float]:
    """The series summed point by point, skipping points where none has a value."""
    by_time: dict[float, float] = {}
    for one in result.series:
        for t, v in zip(one.timestamps, one.values, strict=True):
            if v is not None and math.isfinite(v):
                by_time[t] = by_time.get(t, 0.0) + v
    return [by_time[t] for t in sorted(by_time)]


def _concurrency(running: QueryResult, waiting: QueryResult, window: str) -> Quantity:
    key, unit = "concurrency_requests", "requests"
    if not running.has_data:
        return _needs(running.message or running.reason, key, unit)
    total = _summed(running)
    source = f"mean of sum({_name(running)})"
    if waiting.has_data:
        queued = dict(enumerate(_summed(waiting)))
        total = [v + queued.get(i, 0.0) for i, v in enumerate(total)]
        source = f"mean of sum({_name(running)} + {_name(waiting)})"
    if not total:
        return _needs("no samples in the window", key, unit)
    return Quantity(key, statistics.fmean(total), unit, "measured", f"{source} over {window}")


def _replicas(engines: set[str]) -> Quantity:
    key = "current_replicas"
    if not engines:
        return _needs("no enabled engine serves this model", key, "replicas")
    return Quantity(key, float(len(engines)), "replicas", "measured",
                    "engine endpoints whose latest scrape labels this model_name")  # fmt: skip


def _mu_good(fleet: Fleet, model_name: str, backend: Backend, at: datetime) -> Quantity:
    from slo.evaluation import slo_statuses
    from slo.services import slo_for_model

    key, unit = "mu_good_requests_per_second", "requests_per_second"
    slo = slo_for_model(fleet, model_name)
    if slo is None:
        return _needs(f"no SLO selects {model_name}: mu_good is measured against an SLO", key, unit)
    status = slo_statuses(fleet, backend=backend, at=at, slos=[slo], replica_rates=True)[0]
    rates = [r.mu_good for r in (status.goodput.replicas if status.goodput else ()) if r.mu_good]
    if not rates:
        reasons = {r.note for r in status.goodput.replicas} if status.goodput else set()
        why = "; ".join(sorted(reasons)) or "the SLO has no per-request objective with data"
        return _needs(f"SLO {status.slug}: {why}", key, unit)
    value = statistics.median(rates)
    return Quantity(key, value, unit, "measured",
                    f"median over {len(rates)} replica(s) of each replica's mu_good against SLO "
                    f"{status.slug} ({backend})")  # fmt: skip


def _cache_config(
    layouts: Mapping[str, Sequence[Mapping[str, str]]], engines: set[str]
) -> CacheConfig | None:
    """The first engine's `vllm:cache_config_info` labels (replicas of one model share a
    config; a difference is the inventory's drift report's business)."""
    for instance, series in sorted((i, layouts[i]) for i in engines if i in layouts):
        for labels in series:
            if all(name in labels for name in CACHE_CONFIG_LABELS):
                try:
                    blocks, size = int(labels["num_gpu_blocks"]), int(labels["block_size"])
                except ValueError:
                    continue  # "None" before the profile run: not a figure
                util = labels.get("gpu_memory_utilization")
                return CacheConfig(blocks, size, instance, _float(util))
    return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


class FleetInputError(ValueError):
    """A fleet or model the review cannot measure; the message says which and why."""


def fleet_inputs(
    fleet_slug: str, *, model_name: str | None, backend: Backend, at: datetime | None = None
) -> dict[str, object]:
    """The review's measurable inputs of one model of a fleet, keyed by the field names of
    `capacity.review.CapacityInputs` (see its MEASURABLE_FIELDS)."""
    fleet = Fleet.objects.filter(slug=fleet_slug).first()
    if fleet is None:
        raise FleetInputError(f"--fleet: no fleet {fleet_slug!r}")
    served = fleet_models(fleet)
    if model_name is None:
        if len(served) != 1:
            listed = ", ".join(served) or "none"
            raise FleetInputError(f"--model: fleet {fleet_slug} serves {listed}; name one")
        model_name = served[0]
    elif model_name not in served:
        raise FleetInputError(
            f"--model: fleet {fleet_slug} does not serve {model_name!r} "
            f"(it serves {', '.join(served) or 'nothing yet'})"
        )
    return measurements_as_inputs(
        fleet_measurements(fleet, model_name=model_name, backend=backend, at=at)
    )


def measurements_as_inputs(found: FleetMeasurements) -> dict[str, object]:
    inputs: dict[str, object] = {
        f"{side}_tokens_p{_pct(q)}": quantity
        for side, by_q in (("prompt", found.prompt_tokens), ("output", found.output_tokens))
        for q, quantity in by_q.items()
    }
    inputs.update(
        lambda_peak=found.lambda_peak,
        mu_good=found.mu_good,
        prefill_seconds=found.prefill_seconds,
        decode_seconds=found.decode_seconds,
        concurrency=found.concurrency,
        missing_metrics=found.missing_metrics,
    )
    if found.current_replicas.known:
        inputs["current_replicas"] = found.current_replicas
    config = found.cache_config
    if config is not None:
        source = f"vllm:cache_config_info on {config.instance}"
        inputs["cache_config"] = {
            "num_gpu_blocks": Quantity("num_gpu_blocks", config.num_gpu_blocks, "blocks",
                                       "measured", source),
            "block_size": Quantity("block_size_tokens", config.block_size, "tokens",
                                   "measured", source),
        }  # fmt: skip
    return inputs
