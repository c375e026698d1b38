"""Engine step time from a simple roofline, and the capacity estimate derived from it.

A step runs every running request's next token (decode) plus a chunk of prompt
tokens (prefill). Its GPU time is the larger of compute time (2 FLOPs per
parameter per token plus attention) and memory time (reading the weights and
every decoding request's KV). Tensor parallelism adds two all-reduces per layer.
A fixed CPU cost per step (scheduling, sampling, launch) sits on top.
"""

from __future__ import annotations

from fleetsim.config import ReplicaConfig
from fleetsim.hardware import KV_DTYPE_BYTES

MATMUL_EFFICIENCY = 0.6  # share of tensor peak that large GEMMs reach
HBM_EFFICIENCY = 0.8  # share of HBM bandwidth that weight/KV streaming reaches
STEP_CPU_S = 2.0e-3
STEP_CPU_PER_SEQ_S = 6.0e-6
ACT_BYTES = 2  # BF16 activations on the wire


class StepModel:
    """Step cost for one engine. Scenario knobs scale clocks and link quality."""

    __slots__ = (
        "flops_per_token", "attn_flops", "peak", "weight_bytes", "kv_bytes", "hbm",
        "tp", "layers", "allreduce_bytes_per_token", "link_bw", "link_latency",
        "clock_factor", "mem_factor", "link_factor", "peak_per_gpu", "hbm_per_gpu",
    )  # fmt: skip

    def __init__(self, cfg: ReplicaConfig) -> None:
        m, g, tp = cfg.model, cfg.gpu, cfg.tp
        self.tp = tp
        self.layers = m.layers
        self.flops_per_token = 2.0 * m.params
        # QK^T and AV: 2 x 2 x hidden FLOPs per (query token, context token) per layer.
        self.attn_flops = 4.0 * m.layers * m.hidden
        self.peak_per_gpu = g.bf16_flops
        self.hbm_per_gpu = g.hbm_bytes_per_s
        self.peak = tp * g.bf16_flops * MATMUL_EFFICIENCY
        self.hbm = g.hbm_bytes_per_s * HBM_EFFICIENCY
        self.weight_bytes = m.weight_bytes / tp
        self.kv_bytes = m.kv_bytes_per_token(KV_DTYPE_BYTES[cfg.deployment.kv_dtype]) / tp
        # Ring all-reduce moves 2 (tp-1)/tp of the activation per GPU.
        self.allreduce_bytes_per_token = m.hidden * ACT_BYTES * 2.0 * (tp - 1) / tp
        self.link_bw = g.link_bytes_per_s
        self.link_latency = g.link_latency_s
        self.clock_factor = 1.0
        self.mem_factor = 1.0
        self.link_factor = 1.0

    def cost(
        self, n_dec: int, ctx_dec: float, prefill: int, prefill_pos: float
    ) -> tuple[float, float, float, float, float]:
        """(step s, GPU-busy s, FLOPs per GPU, HBM bytes per GPU, link bytes per GPU)."""
        tokens = n_dec + prefill
        flops = self.flops_per_token * tokens + self.attn_flops * (ctx_dec + prefill * prefill_pos)
        compute = flops / (self.peak * self.clock_factor)
        hbm_bytes = self.weight_bytes + self.kv_bytes * (ctx_dec + prefill_pos + tokens)
        memory = hbm_bytes / (self.hbm * self.mem_factor)
        gpu = compute if compute > memory else memory
        link_bytes = 0.0
        if self.tp > 1:
            link_bytes = 2 * self.layers * tokens * self.allreduce_bytes_per_token
            per_op = self.link_latency / self.link_factor
            gpu += 2 * self.layers * per_op + link_bytes / (self.link_bw * self.link_factor)
        step = gpu + STEP_CPU_S + STEP_CPU_PER_SEQ_S * (n_dec + (1 if prefill else 0))
        return step, gpu, flops / self.tp, hbm_bytes, link_bytes


def requests_per_second(cfg: ReplicaConfig, mean_prompt: float, mean_output: float) -> float:
    """Throughput one engine sustains with the given mix, at its batch limit.

    The batch is as large as `max_num_seqs` or the KV cache allows; every
    request costs its prefill plus its share of the decode steps.
    """
    model = StepModel(cfg)
    ctx = mean_prompt + mean_output / 2
    batch = max(1, int(min(cfg.deployment.max_num_seqs, 0.9 * cfg.kv_tokens / ctx)))
    step, *_ = model.cost(batch, batch * ctx, 0, 0.0)
    chunk = cfg.deployment.max_num_batched_tokens
    prefill_step, *_ = model.cost(0, 0.0, chunk, chunk / 2)
    per_request = mean_prompt * prefill_step / chunk + mean_output * step / batch
    return 1.0 / per_request
