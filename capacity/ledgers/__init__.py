"""The ledgers: weights, KV and replicas, each a `Ledger` of formula lines."""

from __future__ import annotations

from capacity.ledgers.kv import (
    PERCENTILES,
    RequestLengths,
    cache_config_check,
    kv_bytes_per_request,
    kv_bytes_per_token,
    kv_bytes_per_token_per_rank,
    kv_ledger,
)
from capacity.ledgers.replicas import (
    CapacityInputError,
    NPlusOne,
    check_count,
    check_rate,
    check_rho,
    n_plus_one,
    replicas_ledger,
    steady_unrounded,
)
from capacity.ledgers.weights import RankMemory, rank_memory, weights_ledger

__all__ = [
    "PERCENTILES",
    "CapacityInputError",
    "NPlusOne",
    "RankMemory",
    "RequestLengths",
    "cache_config_check",
    "check_count",
    "check_rate",
    "check_rho",
    "kv_bytes_per_request",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_rank",
    "kv_ledger",
    "n_plus_one",
    "rank_memory",
    "replicas_ledger",
    "steady_unrounded",
    "weights_ledger",
]
