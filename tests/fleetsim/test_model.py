"""The physics under the metrics: KV sizing, tensor parallelism, and the step roofline."""

from __future__ import annotations

from fleetsim.config import build_replicas
from fleetsim.hardware import GPUS, MODELS, buckets_125
from fleetsim.roofline import StepModel


def test_kv_bytes_per_token_is_two_times_layers_kv_heads_head_dim_and_dtype() -> None:
    llama8b = MODELS["llama-3.1-8b-instruct"]
    assert llama8b.kv_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2 == 131072
    assert MODELS["llama-3.1-70b-instruct"].kv_bytes_per_token(1) == 2 * 80 * 8 * 128 * 1


def test_tensor_parallelism_is_what_the_model_needs_to_fit() -> None:
    replicas = build_replicas(4)
    tp = {r.model.served_name: r.tp for r in replicas}
    assert tp == {"llama-3.1-8b-instruct": 1, "llama-3.1-70b-instruct": 4, "qwen2.5-7b-instruct": 1}
    seventy = replicas[1]
    assert len(seventy.gpus) == 4 and seventy.gpu is GPUS["H100"]
    assert len({g.uuid for r in replicas for g in r.gpus}) == sum(len(r.gpus) for r in replicas)


def test_data_parallel_replicas_get_a_tp_group_per_engine() -> None:
    (replica,) = build_replicas(2, dp=2)[1:]
    assert replica.dp == 2 and len(replica.gpus) == 2 * replica.tp


def test_decode_is_bound_by_memory_and_prefill_by_compute() -> None:
    step = StepModel(build_replicas(1)[0])
    weights_read_s = step.weight_bytes / (step.hbm * step.mem_factor)
    decode, *_ = step.cost(8, 8 * 2000.0, 0, 0.0)
    assert weights_read_s < decode < 2 * weights_read_s  # a small batch mostly streams weights
    chunk = 8192
    prefill, *_ = step.cost(0, 0.0, chunk, chunk / 2)
    compute_s = step.flops_per_token * chunk / step.peak
    assert compute_s < prefill < 1.5 * compute_s


def test_a_slower_clock_slows_prefill_and_a_degraded_link_slows_tensor_parallel_steps() -> None:
    eight, seventy = build_replicas(2)
    step = StepModel(eight)
    before, *_ = step.cost(0, 0.0, 8192, 4096.0)
    step.clock_factor = 0.5
    after, *_ = step.cost(0, 0.0, 8192, 4096.0)
    assert after > 1.8 * before
    tp = StepModel(seventy)
    healthy, *_ = tp.cost(32, 32 * 3000.0, 0, 0.0)
    tp.link_factor = 0.2
    degraded, *_ = tp.cost(32, 32 * 3000.0, 0, 0.0)
    assert degraded > 1.2 * healthy


def test_one_two_five_buckets_stop_at_max_model_len() -> None:
    assert buckets_125(4096)[-1] == 2000.0
    assert buckets_125(32768)[-3:] == [5000.0, 10000.0, 20000.0]
