"""The weights ledger: what one rank holds before any KV cache, against its budget.

A lower bound: activations, the workspace, CUDA graphs and a safety margin also take
memory, and only a profile of the running engine says how much. Those lines stay
"needs measurement" unless someone enters them, and the headroom says it is an upper
bound while they do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from capacity.figures import Ledger, Line, Quantity, bytes_text, derived, needs_measurement
from capacity.profiles import ModelShape, WeightFormat

NORM_BYTES_PER_PARAMETER = 2.0  # norms stay in 16-bit even when the linear layers are quantised

OTHER_LINES: tuple[tuple[str, str], ...] = (
    ("kv_context_bytes_per_rank", "KV cache for the context"),
    ("activations_bytes_per_rank", "activations (peak of the forward pass)"),
    ("workspace_bytes_per_rank", "workspace (sampler, attention kernels, NCCL buffers)"),
    ("cuda_graphs_bytes_per_rank", "CUDA graphs"),
    ("safety_margin_bytes_per_rank", "safety margin"),
)


@dataclass(frozen=True)
class RankMemory:
    """Per-rank figures the other ledgers reuse."""

    weights_bytes: Quantity
    weights_bytes_per_rank: Quantity
    other_bytes_per_rank: tuple[Quantity, ...]  # without the KV context line


def other_lines(given: dict[str, Quantity | None]) -> tuple[Quantity, ...]:
    """Each non-weight memory line: as entered, or "needs measurement"."""
    return tuple(
        given.get(key)
        or needs_measurement(key, "bytes", note="profile the engine (vLLM logs it at start-up)")
        for key, _ in OTHER_LINES
    )


def rank_memory(
    parameters: Quantity,
    fmt: WeightFormat,
    tp: int,
    pp: int,
    shape: ModelShape | None = None,
    others: dict[str, Quantity | None] | None = None,
) -> RankMemory:
    if tp < 1 or pp < 1:
        raise ValueError(f"tensor and pipeline parallel sizes must be >= 1, got TP={tp} PP={pp}")
    per_parameter = fmt.bytes_per_parameter + fmt.allowance_bytes_per_parameter
    total = parameters.value * per_parameter if parameters.known and parameters.value else None
    norms = norm_bytes(shape)
    per_rank = None
    if total is not None:
        sharded = total - (norms or 0.0)
        per_rank = sharded / (tp * pp) + (norms or 0.0) / pp
    lines = other_lines(others or {})
    return RankMemory(
        derived("weights_bytes", total, "bytes", "N_params x (b_weight + allowance)"),
        derived("weights_bytes_per_rank", per_rank, "bytes", "sharded / (TP x PP) + norms / PP"),
        tuple(q for q in lines if q.key != "kv_context_bytes_per_rank"),
    )


def norm_bytes(shape: ModelShape | None) -> float | None:
    """RMSNorm weights: two per layer plus the final one, each `hidden_size` wide."""
    if shape is None or shape.hidden_size is None:
        return None
    return (2 * shape.num_layers + 1) * shape.hidden_size * NORM_BYTES_PER_PARAMETER


def weights_ledger(
    *,
    parameters: Quantity,
    weight_format: WeightFormat,
    tp: int,
    pp: int,
    usable_memory_bytes_per_gpu: Quantity,
    gpu_memory_utilization: Quantity | None = None,
    shape: ModelShape | None = None,
    others: dict[str, Quantity | None] | None = None,
) -> Ledger:
    memory = rank_memory(parameters, weight_format, tp, pp, shape, others)
    fmt = weight_format
    lines = [
        Line("parameters", parameters, "N_params"),
        Line(
            f"bytes per parameter ({fmt.name})",
            Quantity(
                "weight_bytes_per_parameter",
                fmt.bytes_per_parameter,
                "bytes",
                "derived",
                f"dtype {fmt.name}",
            ),
            "b_weight",
        ),
    ]
    if fmt.allowance_bytes_per_parameter:
        allowance = (
            float(parameters.value or 0.0) * fmt.allowance_bytes_per_parameter
            if parameters.known
            else None
        )
        lines.append(
            Line(
                "quantisation allowance (scales, zero points)",
                derived("quantisation_allowance_bytes", allowance, "bytes", fmt.allowance_text),
                "N_params x allowance per weight",
            )
        )
    lines.append(Line("weights, whole model", memory.weights_bytes, "N_params x b_weight"))
    lines.append(Line("tensor parallel ranks", Quantity("tp_ranks", tp, "ranks", "entered"), "TP"))
    lines.append(Line("pipeline stages", Quantity("pp_stages", pp, "stages", "entered"), "PP"))
    norms = norm_bytes(shape)
    notes = [
        "a lower bound: the engine also needs activations, workspace and CUDA graphs",
        "embeddings and lm_head are sharded across TP ranks by vLLM's vocab-parallel layers",
        f"quantisation: {fmt.allowance_text}",
    ]
    if norms is not None:
        lines.append(
            Line(
                "replicated on every TP rank (norms)",
                derived("replicated_bytes_per_rank", norms / pp, "bytes", "(2L+1) x h x 2 / PP"),
                "(2L + 1) x hidden_size x 2 bytes / PP",
            )
        )
    else:
        notes.append("replicated parts unknown (no hidden_size): per rank = weights / (TP x PP)")
    if pp > 1:
        notes.append("PP stages assumed even; the first and last also hold embedding and lm_head")
    lines.append(
        Line(
            "weights per rank",
            memory.weights_bytes_per_rank,
            "(weights - replicated) / (TP x PP) + replicated",
        )
    )
    given = others or {}
    labels = dict(OTHER_LINES)
    for q in other_lines(given):
        lines.append(Line(labels[q.key], q, "profile" if not q.known else "entered"))
    lines.append(
        Line("usable memory per GPU (budget)", usable_memory_bytes_per_gpu, "usable, not nameplate")
    )
    budget = usable_memory_bytes_per_gpu.value if usable_memory_bytes_per_gpu.known else None
    formula = "usable"
    if budget is not None and gpu_memory_utilization is not None:
        if not gpu_memory_utilization.known:
            budget = None
        else:
            budget *= float(gpu_memory_utilization.value or 0.0)
            formula = "usable x gpu_memory_utilization"
        lines.append(Line("gpu_memory_utilization", gpu_memory_utilization, "vLLM flag"))
    lines.extend(headroom_lines(budget, formula, memory))
    return Ledger("weights", tuple(lines), tuple(notes), lower_bound=True)


def headroom_lines(budget: float | None, formula: str, memory: RankMemory) -> list[Line]:
    per_rank = memory.weights_bytes_per_rank.value
    if budget is None or per_rank is None:
        return [
            Line(
                "headroom for KV per rank",
                derived("kv_headroom_bytes_per_rank", None, "bytes"),
                formula,
            )
        ]
    known = [q.value or 0.0 for q in memory.other_bytes_per_rank if q.known]
    unknown = [q.key for q in memory.other_bytes_per_rank if not q.known]
    headroom = budget - per_rank - sum(known)
    bound = f"upper bound: {', '.join(unknown)} need measurement" if unknown else ""
    if per_rank > budget:
        short = per_rank - budget
        return [
            Line(
                "does not fit: weights per rank exceed the budget",
                derived(
                    "weights_shortfall_bytes_per_rank",
                    short,
                    "bytes",
                    note=f"does not fit by {bytes_text(short)} per rank",
                ),
                f"weights per rank - {formula}",
            )
        ]
    return [
        Line(
            "headroom for KV per rank",
            derived("kv_headroom_bytes_per_rank", headroom, "bytes", note=bound),
            f"{formula} - weights per rank - other lines",
        )
    ]


def known_sum(quantities: Sequence[Quantity]) -> float:
    return sum(float(q.value or 0.0) for q in quantities if q.known)
