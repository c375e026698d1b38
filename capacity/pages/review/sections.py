"""One served model's section of the capacity page: its inputs, ledgers, findings,
sensitivity and thresholds as rows the template prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from capacity.figures import Ledger, Origin, Quantity
from capacity.measured import FleetMeasurements
from capacity.models import CapacityPlan
from capacity.pages.review.figures import (
    LEDGER_TITLES,
    MEASURED_KEYS,
    Answer,
    Figure,
    LedgerRow,
    LedgerShown,
    answer,
    figure,
    number_text,
    origin_class,
)
from capacity.plans import PlanReview, plan_inputs
from capacity.review import CapacityInputs, Finding, Sensitivity


def _row(label: str, q: Quantity, window: str = "") -> LedgerRow:
    return LedgerRow(label, "", figure(q, window))


def _text_row(label: str, text: str, origin: str, source: str) -> LedgerRow:
    return LedgerRow(label, "", Figure(key="", text=text, unit="", exact="", origin=origin,
                                  origin_class=origin_class(origin), source=source, note="",
                                  missing=False))  # fmt: skip


def measured_quantities(measured: FleetMeasurements) -> list[tuple[str, Quantity]]:
    """(label, quantity) of every measured input, each with its key and unit."""
    found = [
        *(measured.prompt_tokens.get(q) for q in (0.5, 0.95, 0.99)),
        *(measured.output_tokens.get(q) for q in (0.5, 0.95, 0.99)),
        measured.lambda_peak,
        measured.mu_good,
        measured.current_replicas,
        measured.prefill_seconds,
        measured.decode_seconds,
        measured.concurrency,
    ]
    rows: list[tuple[str, Quantity]] = []
    for (key, unit, label), q in zip(MEASURED_KEYS, found, strict=True):
        if q is None:
            q = Quantity(key, None, unit, "needs measurement", note="not measured")
        elif q.key != key or q.unit != unit:
            q = replace(q, key=key, unit=unit)
        rows.append((label, q))
    config = measured.cache_config
    source = f"vllm:cache_config_info on {config.instance}" if config else ""
    why = "the fleet does not expose vllm:cache_config_info for this model"
    for key, unit, label, value in (
        ("num_gpu_blocks", "blocks", "GPU blocks", config.num_gpu_blocks if config else None),
        ("block_size_tokens", "tokens", "block size", config.block_size if config else None),
        ("kv_cache_tokens_per_replica", "tokens", "KV tokens per replica (blocks x block size)",
         config.kv_tokens if config else None),
    ):  # fmt: skip
        if value is None:
            rows.append((label, Quantity(key, None, unit, "needs measurement", note=why)))
        else:
            rows.append((label, Quantity(key, float(value), unit, "measured", source)))
    if config is not None and config.gpu_memory_utilization is not None:
        rows.append(("gpu_memory_utilization", Quantity(
            "gpu_memory_utilization_fraction", config.gpu_memory_utilization, "fraction",
            "measured", source)))  # fmt: skip
    return rows


def measured_rows(measured: FleetMeasurements) -> list[LedgerRow]:
    return [_row(label, q, measured.window) for label, q in measured_quantities(measured)]


def input_rows(plan: CapacityPlan, inputs: CapacityInputs, window: str = "") -> list[LedgerRow]:
    def _row(label: str, q: Quantity) -> LedgerRow:
        return LedgerRow(label, "", figure(q, window))

    gpu = plan.gpu_profile
    gpu_origin: Origin = "example" if gpu.example else "entered"
    profile = plan.model_profile
    rows = [
        _text_row("model profile", profile.name, str(profile.origin),
                  f"model profile {profile.name} ({profile.get_origin_display()})"),
        _row("parameters", inputs.shape.parameters),
        *(_row(q.key.replace("_", " "), q) for q in inputs.shape.quantities()),
        _text_row("weight dtype", inputs.weight_dtype, str(profile.origin),
                  f"model profile {profile.name}"),
        _text_row("KV dtype", inputs.kv_dtype, "entered", f"capacity plan {plan}"),
        _text_row("GPU profile", str(gpu), gpu_origin,
                  f"GPU profile {gpu.name}" + (" (an example: replace it)" if gpu.example else "")),
        _row("usable memory per GPU", inputs.usable_memory_bytes_per_gpu),
        _row("GPUs per node", replace(inputs.gpus_per_node, origin=gpu_origin)
             if inputs.gpus_per_node.known else inputs.gpus_per_node),
    ]  # fmt: skip
    if gpu.price_per_hour_usd is not None:
        price = Quantity("price_usd_per_gpu_hour", float(gpu.price_per_hour_usd),
                         "usd_per_gpu_hour", "example" if gpu.example else "entered",
                         f"GPU profile {gpu.name}", "example price, replace with your own"
                         if gpu.example else "")  # fmt: skip
        rows.append(_row("price per GPU-hour", price))
    rows += [
        _text_row("tensor / pipeline parallel", f"TP {inputs.tp} x PP {inputs.pp}", "entered",
                  f"capacity plan {plan}"),
        _row("gpu_memory_utilization", inputs.gpu_memory_utilization),
        *(_row(f"prompt tokens {p}", getattr(inputs, f"prompt_tokens_{p}"))
          for p in ("p50", "p95", "p99")),
        *(_row(f"generated tokens {p}", getattr(inputs, f"output_tokens_{p}"))
          for p in ("p50", "p95", "p99")),
        _row("peak arrival rate (lambda_peak)", inputs.lambda_peak),
        _row("good requests/s per replica (mu_good)", inputs.mu_good),
        _row("target utilisation (rho_target)", inputs.rho_target),
        _row("failure reserve", inputs.failure_reserve),
        _row("rollout reserve", inputs.rollout_reserve),
        _row("failure domain", inputs.failure_domain_replicas),
    ]  # fmt: skip
    if inputs.current_replicas is not None:
        rows.append(_row("replicas serving now", inputs.current_replicas))
    if inputs.cache_config is not None:
        rows.append(_row("GPU blocks (vllm:cache_config_info)", inputs.cache_config.num_gpu_blocks))
        rows.append(_row("block size (vllm:cache_config_info)", inputs.cache_config.block_size))
    rows += [
        _row("prefill seconds per request", inputs.prefill_seconds),
        _row("decode seconds per request", inputs.decode_seconds),
        _row("mean requests in the system", inputs.concurrency),
    ]
    return rows


def inputs_shown(rows: list[LedgerRow], title: str) -> LedgerShown:
    return LedgerShown(
        name="inputs",
        title=title,
        anchor="inputs",
        lower_bound=False,
        rows=tuple(rows),
        notes=(),
        show_formula=False,
        intro="Each input with where it came from: measured on the fleet, entered in the plan, "
        "from the model config, or an example profile to replace. An input that needs "
        "measurement is never taken as zero.",
    )


def ledger_shown(ledger: Ledger, window: str = "") -> LedgerShown:
    return LedgerShown(
        name=ledger.name,
        title=LEDGER_TITLES.get(ledger.name, ledger.name.capitalize()),
        anchor=ledger.name.replace(" ", "-"),
        lower_bound=ledger.lower_bound,
        rows=tuple(
            LedgerRow(ln.label, ln.formula, figure(ln.quantity, window)) for ln in ledger.lines
        ),
        notes=ledger.notes,
    )


@dataclass(frozen=True)
class FindingShown:
    name: str
    label: str  # "FLIPS", "holds", "pass", "FAIL", "FLAGGED", "needs measurement"
    colour: str  # state-good / warn / bad / none
    detail: str


def findings_shown(findings: Sequence[Finding], yes: tuple[str, str],
                   no: tuple[str, str]) -> list[FindingShown]:  # fmt: skip
    shown = []
    for f in findings:
        if f.state is None:
            label, colour = "needs measurement", "none"
        else:
            label, colour = yes if f.state else no
        shown.append(FindingShown(f.name.replace("_", " "), label, colour, f.detail))
    return shown


@dataclass(frozen=True)
class SensitivityRow:
    input_label: str
    base: str
    r_minus: int
    r_plus: int
    change: str


def sensitivity_rows(ranked: Sequence[Sensitivity]) -> list[SensitivityRow]:
    return [
        SensitivityRow(
            s.input_key,
            number_text(s.base_value),
            s.r_total_minus_10_replicas,
            s.r_total_plus_10_replicas,
            f"{s.change_minus_10_replicas:+.2f} / {s.change_plus_10_replicas:+.2f}",
        )
        for s in ranked
    ]


@dataclass(frozen=True)
class ThresholdRow:
    name: str
    value: str
    unit: str
    reason: str


@dataclass(frozen=True)
class ModelSection:
    model_name: str
    anchor: str
    plan: CapacityPlan | None
    problem: str
    window: str
    answer: Answer | None
    inputs: LedgerShown
    measured_only: bool  # no plan (or a refused one): only the measured inputs
    ledgers: list[LedgerShown] = field(default_factory=list)
    sensitivity: list[SensitivityRow] = field(default_factory=list)
    flips: list[FindingShown] = field(default_factory=list)
    sanity: list[FindingShown] = field(default_factory=list)
    mistakes: list[FindingShown] = field(default_factory=list)
    thresholds: list[ThresholdRow] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    gpu_example: bool = False


def section_of(item: PlanReview) -> ModelSection:
    anchor = "model-" + "".join(c if c.isalnum() else "-" for c in item.model_name)
    window = item.measurements.window
    review, plan = item.review, item.plan
    if review is None or plan is None:
        return ModelSection(
            model_name=item.model_name,
            anchor=anchor,
            plan=plan,
            problem=item.problem,
            window=window,
            answer=None,
            inputs=inputs_shown(measured_rows(item.measurements), "Measured inputs"),
            measured_only=True,
            gpu_example=bool(plan and plan.gpu_profile.example),
        )
    inputs = plan_inputs(plan, item.measurements)
    return ModelSection(
        model_name=item.model_name,
        anchor=anchor,
        plan=plan,
        problem=item.problem,
        window=window,
        answer=answer(item),
        inputs=inputs_shown(input_rows(plan, inputs, window), "Inputs"),
        measured_only=False,
        ledgers=[ledger_shown(ledger, window) for ledger in review.ledgers],
        sensitivity=sensitivity_rows(review.sensitivity),
        flips=findings_shown(review.flips, ("FLIPS the design", "bad"), ("holds", "good")),
        sanity=findings_shown(review.sanity_checks, ("pass", "good"), ("FAIL", "bad")),
        mistakes=findings_shown(review.mistakes, ("flagged", "warn"), ("ok", "good")),
        thresholds=[ThresholdRow(n, number_text(v), u, r) for n, v, u, r in review.thresholds],
        notes=review.notes,
        gpu_example=plan.gpu_profile.example,
    )
