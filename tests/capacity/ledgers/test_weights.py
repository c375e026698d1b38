from __future__ import annotations

import pytest

from capacity.figures import GIB, Ledger, Quantity
from capacity.ledgers import weights_ledger
from capacity.profiles import ModelShape, weight_format

USABLE_80 = Quantity("usable_memory_bytes_per_gpu", 79.1 * GIB, "bytes", "example")


def got(ledger: Ledger, key: str) -> Quantity:
    found = ledger.get(key)
    assert found is not None, key
    return found


def params(n: float) -> Quantity:
    return Quantity("parameters_count", n, "parameters", "entered")


def test_llama_70b_in_bf16_needs_about_131_gib_of_weights_and_a_quarter_per_rank_at_tp4() -> None:
    ledger = weights_ledger(
        parameters=params(70.6e9),
        weight_format=weight_format("bf16"),
        tp=4,
        pp=1,
        usable_memory_bytes_per_gpu=USABLE_80,
    )
    assert ledger.lower_bound
    assert got(ledger, "weights_bytes").value == pytest.approx(141.2e9)
    per_rank = got(ledger, "weights_bytes_per_rank").value
    assert per_rank == pytest.approx(141.2e9 / 4)
    headroom = ledger.get("kv_headroom_bytes_per_rank")
    assert headroom is not None and headroom.value == pytest.approx(79.1 * GIB - 141.2e9 / 4)
    assert "upper bound" in headroom.note


def test_norms_are_replicated_on_every_tp_rank() -> None:
    shape = ModelShape.entered(num_layers=80, num_kv_heads=8, head_dim=128, num_attention_heads=64)
    shape = shape.override(hidden_size=8192)
    ledger = weights_ledger(
        parameters=params(70.6e9),
        weight_format=weight_format("bf16"),
        tp=8,
        pp=1,
        usable_memory_bytes_per_gpu=USABLE_80,
        shape=shape,
    )
    norms = 161 * 8192 * 2
    assert got(ledger, "replicated_bytes_per_rank").value == norms
    per_rank = got(ledger, "weights_bytes_per_rank").value
    assert per_rank == pytest.approx((141.2e9 - norms) / 8 + norms)


def test_weights_that_do_not_fit_say_by_how_much() -> None:
    ledger = weights_ledger(
        parameters=params(70.6e9),
        weight_format=weight_format("bf16"),
        tp=1,
        pp=1,
        usable_memory_bytes_per_gpu=USABLE_80,
    )
    short = ledger.get("weights_shortfall_bytes_per_rank")
    assert short is not None and short.value == pytest.approx(141.2e9 - 79.1 * GIB)
    assert short.note.startswith("does not fit by ")
    assert ledger.get("kv_headroom_bytes_per_rank") is None


def test_awq_weights_add_the_scale_and_zero_point_allowance() -> None:
    ledger = weights_ledger(
        parameters=params(8e9),
        weight_format=weight_format("awq"),
        tp=1,
        pp=1,
        usable_memory_bytes_per_gpu=USABLE_80,
    )
    allowance = 8e9 * 20 / 128 / 8
    assert got(ledger, "quantisation_allowance_bytes").value == pytest.approx(allowance)
    assert got(ledger, "weights_bytes").value == pytest.approx(4e9 + allowance)


def test_activations_workspace_graphs_and_margin_need_measurement_unless_entered() -> None:
    entered = Quantity("cuda_graphs_bytes_per_rank", 1 * GIB, "bytes", "entered")
    ledger = weights_ledger(
        parameters=params(8e9),
        weight_format=weight_format("bf16"),
        tp=1,
        pp=1,
        usable_memory_bytes_per_gpu=USABLE_80,
        others={"cuda_graphs_bytes_per_rank": entered},
    )
    for key in (
        "activations_bytes_per_rank",
        "workspace_bytes_per_rank",
        "safety_margin_bytes_per_rank",
        "kv_context_bytes_per_rank",
    ):
        assert got(ledger, key).origin == "needs measurement"
    headroom = got(ledger, "kv_headroom_bytes_per_rank").value
    assert headroom == pytest.approx(79.1 * GIB - 16e9 - 1 * GIB)


def test_unknown_parameters_leave_the_weights_needing_measurement() -> None:
    unknown = Quantity("parameters_count", None, "parameters", "needs measurement")
    ledger = weights_ledger(
        parameters=unknown,
        weight_format=weight_format("bf16"),
        tp=1,
        pp=1,
        usable_memory_bytes_per_gpu=USABLE_80,
    )
    assert got(ledger, "weights_bytes").origin == "needs measurement"
