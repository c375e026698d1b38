"""A capacity review's figures as text: a value with its unit and origin ("needs
measurement" with the reason, never 0; an example says so), and the answer first: R_total
and the N+1 verdicts in words."""

from __future__ import annotations

from dataclasses import dataclass

from capacity.figures import Ledger, Quantity, bytes_text
from capacity.ledgers import n_plus_one
from capacity.plans import PlanReview

LEDGER_TITLES = {
    "weights": "Weights",
    "kv": "KV cache",
    "cache config": "Cache config check: what vLLM allocated against the ledger",
    "replicas": "Replicas",
}
UNIT_TEXT = {
    "requests_per_second": "requests/s",
    "fraction": "",
    "usd_per_gpu_hour": "USD per GPU-hour",
}
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}
# The measured inputs a fleet gives, with the key and unit each has even when the fleet
# could not measure it (an unmeasured figure may arrive without them).
MEASURED_KEYS: tuple[tuple[str, str, str], ...] = (
    ("prompt_tokens_p50", "tokens", "prompt tokens p50"),
    ("prompt_tokens_p95", "tokens", "prompt tokens p95"),
    ("prompt_tokens_p99", "tokens", "prompt tokens p99"),
    ("output_tokens_p50", "tokens", "generated tokens p50"),
    ("output_tokens_p95", "tokens", "generated tokens p95"),
    ("output_tokens_p99", "tokens", "generated tokens p99"),
    ("lambda_peak_requests_per_second", "requests_per_second", "peak arrival rate"),
    ("mu_good_requests_per_second", "requests_per_second", "good requests/s per replica"),
    ("current_replicas", "replicas", "replicas serving now"),
    ("prefill_seconds_per_request", "seconds", "prefill seconds per request"),
    ("decode_seconds_per_request", "seconds", "decode seconds per request"),
    ("concurrency_requests", "requests", "mean requests in the system"),
)


def number_text(value: float) -> str:
    if value.is_integer():
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    if abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def unit_text(unit: str) -> str:
    return UNIT_TEXT.get(unit, unit.replace("_", " "))


@dataclass(frozen=True)
class Figure:
    """One quantity as the page shows it."""

    key: str
    text: str  # "15.0 GiB", "70.0%", "6.84", or "needs measurement"
    unit: str  # shown beside the text; "" when the text carries it
    exact: str  # "16,060,522,496 bytes" for byte counts, else ""
    origin: str
    origin_class: str  # css suffix: measured, entered, example, model-config, derived, needs
    source: str
    note: str
    missing: bool


def origin_class(origin: str) -> str:
    return "needs" if origin == "needs measurement" else origin.replace(" ", "-")


def figure(q: Quantity, window: str = "") -> Figure:
    """`window`: the measurement window the page states once; a source naming it says
    "the window above" instead of repeating it on every line."""
    source = q.source.replace(window, "the window above") if window else q.source
    common = {
        "key": q.key,
        "origin": q.origin,
        "origin_class": origin_class(q.origin),
        "source": source,
        "note": q.note,
    }
    if not q.known:
        text = "needs measurement" if q.origin == "needs measurement" else "unknown"
        return Figure(text=text, unit="", exact="", missing=True, **common)
    value = float(q.value or 0.0)
    if q.unit == "bytes":
        exact = f"{value:,.0f} bytes" if abs(value) >= 1024 else ""
        return Figure(text=bytes_text(value), unit="", exact=exact, missing=False, **common)
    if q.unit == "fraction":
        return Figure(text=f"{value:.1%}", unit="", exact="", missing=False, **common)
    if q.unit.startswith("usd"):
        return Figure(text=f"{value:,.2f}", unit=unit_text(q.unit), exact="", missing=False,
                      **common)  # fmt: skip
    return Figure(text=number_text(value), unit=unit_text(q.unit), exact="", missing=False,
                  **common)  # fmt: skip


def count_words(n: int, noun: str) -> str:
    return f"{NUMBER_WORDS.get(n, str(n))} {noun}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class Verdict:
    which: str  # "the requirement", "the current 2 replicas"
    replicas: int
    passed: bool
    text: str


def n_plus_one_text(
    replicas: int, lost: int, lam: float, mu: float, rho: float
) -> tuple[bool, str]:
    """ "With one replica lost at peak the other 3 run at 60.5% against a 70% target:
    PASS, margin 9.5 points"."""
    check = n_plus_one(replicas, lost, lam, mu, rho)
    head = f"With {count_words(lost, 'replica')} lost at peak"
    target = f"{rho * 100:g}%"
    if check.utilisation_fraction is None:
        return False, f"{head} no replica is left to serve: FAIL"
    left = replicas - lost
    run = "runs" if left == 1 else "run"
    margin = (check.margin_fraction or 0.0) * 100
    verdict = (
        f"PASS, margin {margin:.1f} points"
        if check.passed
        else f"FAIL, over by {-margin:.1f} points"
    )
    return check.passed, (
        f"{head} the other {left} {run} at {check.utilisation_fraction:.1%} against a "
        f"{target} target: {verdict}"
    )


@dataclass(frozen=True)
class Answer:
    r_total: Figure
    verdicts: tuple[Verdict, ...]
    current: Figure | None
    gap_text: str  # "the fleet runs 2 replicas, 2 short of the requirement"
    missing: tuple[str, ...]  # why there is no answer


def _value(ledger: Ledger, key: str) -> float | None:
    q = ledger.get(key)
    return float(q.value) if q is not None and q.known and q.value is not None else None


def answer(item: PlanReview) -> Answer | None:
    if item.review is None or item.plan is None:
        return None
    replicas = item.review.ledger("replicas")
    total_q = replicas.get("r_total_replicas") or Quantity("r_total_replicas", None, "replicas",
                                                           "needs measurement")  # fmt: skip
    lam = _value(replicas, "lambda_peak_requests_per_second")
    mu = _value(replicas, "mu_good_requests_per_second")
    rho = _value(replicas, "rho_target_fraction")
    current_q = replicas.get("current_replicas") or item.measurements.current_replicas
    current = int(current_q.value) if current_q.known and current_q.value is not None else None
    lost = item.plan.failure_domain_replicas
    verdicts: list[Verdict] = []
    total = item.review.r_total_replicas
    if lam and mu and rho:
        if total is not None:
            passed, text = n_plus_one_text(total, lost, lam, mu, rho)
            verdicts.append(Verdict("the requirement", total, passed, text))
        if current is not None:
            passed, text = n_plus_one_text(current, lost, lam, mu, rho)
            which = f"the current {count_words(current, 'replica')}"
            verdicts.append(Verdict(which, current, passed, text))
    gap = ""
    runs = f"{current} replica{'' if current == 1 else 's'} now"
    if total is not None and current is not None:
        if current < total:
            gap = f"The fleet runs {runs}: {total - current} short of the requirement."
        elif current > total:
            gap = f"The fleet runs {runs}: {current - total} above the requirement."
        else:
            gap = f"The fleet runs {runs}: exactly the requirement."
    missing = tuple(n for n in replicas.notes if n.startswith("needs measurement"))
    return Answer(
        r_total=figure(total_q),
        verdicts=tuple(verdicts),
        current=figure(current_q) if current_q.known else None,
        gap_text=gap,
        missing=missing,
    )


@dataclass(frozen=True)
class LedgerRow:
    label: str
    formula: str
    figure: Figure


@dataclass(frozen=True)
class LedgerShown:
    name: str
    title: str
    anchor: str
    lower_bound: bool
    rows: tuple[LedgerRow, ...]
    notes: tuple[str, ...]
    show_formula: bool = True
    intro: str = ""
