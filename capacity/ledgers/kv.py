"""The KV ledger: bytes per token, per request at each length percentile, the pool a
replica has for them, and how many sequences fit; then the fleet's own block count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from capacity.figures import Ledger, Line, Quantity, bytes_text, derived
from capacity.ledgers.weights import known_sum
from capacity.profiles import ModelShape

PERCENTILES = ("p50", "p95", "p99")


@dataclass(frozen=True)
class RequestLengths:
    """Prompt and generated tokens at one percentile (each may need measurement)."""

    percentile: str
    prompt_tokens: Quantity
    output_tokens: Quantity

    @property
    def total_tokens(self) -> float | None:
        if self.prompt_tokens.known and self.output_tokens.known:
            return float(self.prompt_tokens.value or 0.0) + float(self.output_tokens.value or 0.0)
        return None


def kv_bytes_per_token(shape: ModelShape, bytes_per_element: float) -> float:
    """Per replica, every rank together: K and V, each layer, each KV head."""
    return 2 * shape.num_layers * shape.num_kv_heads * shape.head_dim * bytes_per_element


def kv_bytes_per_token_per_rank(
    shape: ModelShape, bytes_per_element: float, tp: int, pp: int
) -> tuple[float, str]:
    """One rank's share. With fewer KV heads than TP ranks every rank keeps a whole head,
    so the heads are replicated and the replica stores more than the model formula."""
    if tp < 1 or pp < 1:
        raise ValueError(f"tp and pp must be >= 1, got TP={tp} PP={pp}")
    kv = shape.num_kv_heads
    if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
        # vLLM refuses to start with such a split, so no figure is given for it.
        raise ValueError(f"tp: {kv} KV heads cannot be split evenly over TP={tp}")
    layers = shape.num_layers / pp
    if shape.num_kv_heads >= tp:
        heads = shape.num_kv_heads / tp
        text = "2 x (L/PP) x (H_kv/TP) x D_head x b_kv"
    else:
        heads = 1
        text = (
            f"2 x (L/PP) x 1 x D_head x b_kv: {shape.num_kv_heads} KV heads < TP={tp}, so each "
            f"rank keeps one head and heads are replicated {tp // shape.num_kv_heads}x"
        )
    return 2 * layers * heads * shape.head_dim * bytes_per_element, text


def kv_bytes_per_request(per_token: float, lengths: RequestLengths) -> float | None:
    total = lengths.total_tokens
    return None if total is None else per_token * total


def kv_ledger(
    *,
    shape: ModelShape,
    bytes_per_element: Quantity,
    tp: int,
    pp: int,
    lengths: Sequence[RequestLengths],
    usable_memory_bytes_per_gpu: Quantity,
    gpu_memory_utilization: Quantity,
    weights_bytes_per_rank: Quantity,
    other_bytes_per_rank: Sequence[Quantity] = (),
) -> Ledger:
    b_kv = float(bytes_per_element.value or 0.0)
    per_token = kv_bytes_per_token(shape, b_kv)
    per_rank, rank_text = kv_bytes_per_token_per_rank(shape, b_kv, tp, pp)
    stored_per_token = per_rank * tp * pp  # what the replica really holds, replication included
    lines = [
        *(Line(q.key.replace("_", " "), q, "model shape") for q in shape.quantities()),
        Line("bytes per KV element", bytes_per_element, "b_kv"),
        Line(
            "KV bytes per token (replica)",
            derived(
                "kv_bytes_per_token",
                per_token,
                "bytes",
                f"L={shape.num_layers} H_kv={shape.num_kv_heads} D={shape.head_dim}",
            ),
            "2 x L x H_kv x D_head x b_kv",
        ),
        Line(
            "KV bytes per token per rank",
            derived("kv_bytes_per_token_per_rank", per_rank, "bytes"),
            rank_text,
        ),
    ]
    notes = [
        "a percentile of prompt plus a percentile of output over-states the percentile of the "
        "sum: per-request figures are upper estimates",
        "vLLM allocates whole blocks, so a request holds up to block_size - 1 tokens more",
    ]
    if stored_per_token != per_token:
        lines.append(
            Line(
                "KV bytes per token stored (all ranks, with replicated heads)",
                derived("kv_stored_bytes_per_token", stored_per_token, "bytes"),
                "per rank x TP x PP",
            )
        )
    pool = kv_pool(
        usable_memory_bytes_per_gpu,
        gpu_memory_utilization,
        tp,
        pp,
        weights_bytes_per_rank,
        other_bytes_per_rank,
    )
    lines.append(
        Line(
            "KV pool per replica",
            pool,
            "usable x TP x PP x gpu_memory_utilization - weights - other lines",
        )
    )
    for item in lengths:
        per_request = kv_bytes_per_request(per_token, item)
        tag = item.percentile
        lines.append(Line(f"prompt tokens {tag}", item.prompt_tokens, "T_prompt"))
        lines.append(Line(f"generated tokens {tag}", item.output_tokens, "T_generated"))
        lines.append(
            Line(
                f"KV bytes per request {tag}",
                derived(f"kv_bytes_per_request_{tag}", per_request, "bytes"),
                "kv_bytes_per_token x (T_prompt + T_generated)",
            )
        )
        fit: float | None = None
        note = ""
        if pool.known and item.total_tokens:
            fit = max(0.0, math.floor((pool.value or 0.0) / (stored_per_token * item.total_tokens)))
            note = pool.note
            if (pool.value or 0.0) <= 0:
                note = "the pool is empty: weights and other lines use the whole budget"
        lines.append(
            Line(
                f"concurrent sequences that fit at {tag}",
                derived(f"concurrent_sequences_{tag}", fit, "sequences", note=note),
                "floor(pool / (kv_stored_bytes_per_token x (T_prompt + T_generated)))",
            )
        )
    return Ledger("kv", tuple(lines), tuple(notes))


def kv_pool(
    usable: Quantity,
    utilization: Quantity,
    tp: int,
    pp: int,
    weights_bytes_per_rank: Quantity,
    other_bytes_per_rank: Sequence[Quantity],
) -> Quantity:
    key = "kv_pool_bytes_per_replica"
    if not (usable.known and utilization.known and weights_bytes_per_rank.known):
        return derived(key, None, "bytes")
    ranks = tp * pp
    budget = float(usable.value or 0.0) * ranks * float(utilization.value or 0.0)
    used = (float(weights_bytes_per_rank.value or 0.0) + known_sum(other_bytes_per_rank)) * ranks
    unknown = [q.key for q in other_bytes_per_rank if not q.known]
    note = f"other lines need measurement ({', '.join(unknown)}): an upper bound" if unknown else ""
    return derived(key, budget - used, "bytes", note=note)


def cache_config_check(
    *,
    num_gpu_blocks: Quantity | None,
    block_size: Quantity | None,
    kv_pool_bytes: Quantity,
    kv_stored_bytes_per_token: float,
) -> Ledger:
    """The blocks the fleet really allocated, against the tokens the ledger expects."""
    if (
        num_gpu_blocks is None
        or block_size is None
        or not (num_gpu_blocks.known and block_size.known)
    ):
        missing = derived(
            "kv_cache_tokens_per_replica",
            None,
            "tokens",
            note="the fleet does not expose vllm:cache_config_info",
        )
        return Ledger(
            "cache config",
            (Line("KV tokens the fleet has", missing, "num_gpu_blocks x block_size"),),
            ("the fleet does not expose vllm:cache_config_info: no check",),
        )
    real = float(num_gpu_blocks.value or 0.0) * float(block_size.value or 0.0)
    expected = None
    if kv_pool_bytes.known and kv_stored_bytes_per_token > 0:
        expected = float(kv_pool_bytes.value or 0.0) / kv_stored_bytes_per_token
    lines = [
        Line("GPU blocks", num_gpu_blocks, "vllm:cache_config_info num_gpu_blocks"),
        Line("block size", block_size, "vllm:cache_config_info block_size"),
        Line(
            "KV tokens the fleet has",
            derived("kv_cache_tokens_per_replica", real, "tokens"),
            "num_gpu_blocks x block_size",
        ),
        Line(
            "KV tokens the ledger expects",
            derived("kv_ledger_tokens_per_replica", expected, "tokens"),
            "kv_pool_bytes_per_replica / kv_bytes_per_token",
        ),
    ]
    notes = []
    if expected is not None:
        gap = expected - real
        lines.append(
            Line(
                "difference (ledger - fleet)",
                derived("kv_tokens_difference_tokens", gap, "tokens"),
                "expected - real",
            )
        )
        notes.append(
            f"the fleet has {real:,.0f} KV tokens, the ledger expects {expected:,.0f} "
            f"({bytes_text(abs(gap) * kv_stored_bytes_per_token)} "
            f"{'less' if gap > 0 else 'more'}): vLLM profiles activations and CUDA graphs at "
            "start-up and keeps only gpu_memory_utilization of the card, and the pool is cut "
            "into whole blocks (fragmentation); trust the fleet's figure"
        )
    return Ledger("cache config", tuple(lines), tuple(notes))
