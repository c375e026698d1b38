"""The metric catalog: every known vLLM, DCGM, router and gateway metric with its names
across versions (`index`), and what an endpoint's families say about it: its kind,
vLLM dialect (`dialects`), data-parallel engines and DCGM labels (`layout`), max_model_len
and bucket generation (`buckets`), all at once (`profile`).

Nothing here imports Django."""

from __future__ import annotations

from inventory.catalog.buckets import infer_bucket_generation, infer_max_model_len
from inventory.catalog.dialects import detect_dialect, detect_kind, series_kind
from inventory.catalog.families import FamilyLike, wire_names
from inventory.catalog.index import (
    CATALOG,
    ENGINE_LABELS,
    ENGINE_ONLY_NAMES,
    RENAMED_PAIRS,
    ROUTER_ONLY_NAMES,
    V0_NAMES,
    CatalogEntry,
    Category,
    MetricName,
    MetricType,
    Resolution,
    SourceKind,
    Unit,
    entries_for_name,
    entry_for_name,
    name_variants,
    replacement_for,
    resolve,
    resolve_all,
)
from inventory.catalog.layout import (
    dcgm_host,
    dcgm_uuid,
    detect_data_parallel,
    detect_dcgm_labels,
)
from inventory.catalog.profile import detect_endpoint, profile_endpoint

__all__ = [
    "CATALOG",
    "CatalogEntry",
    "Category",
    "ENGINE_LABELS",
    "ENGINE_ONLY_NAMES",
    "FamilyLike",
    "MetricName",
    "MetricType",
    "RENAMED_PAIRS",
    "ROUTER_ONLY_NAMES",
    "Resolution",
    "SourceKind",
    "Unit",
    "V0_NAMES",
    "dcgm_host",
    "dcgm_uuid",
    "detect_data_parallel",
    "detect_dcgm_labels",
    "detect_dialect",
    "detect_endpoint",
    "detect_kind",
    "entries_for_name",
    "entry_for_name",
    "infer_bucket_generation",
    "infer_max_model_len",
    "name_variants",
    "profile_endpoint",
    "replacement_for",
    "resolve",
    "resolve_all",
    "series_kind",
    "wire_names",
]
