"""The capacity review: inputs in, ledgers and findings out, as text or JSON."""

from __future__ import annotations

from capacity.review.assemble import CapacityReview, Sensitivity, capacity_review, sensitivity
from capacity.review.checks import THRESHOLDS, Finding
from capacity.review.inputs import MEASURABLE_FIELDS, CacheConfig, CapacityInputs, length
from capacity.review.text import render_text

__all__ = [
    "MEASURABLE_FIELDS",
    "THRESHOLDS",
    "CacheConfig",
    "CapacityInputs",
    "CapacityReview",
    "Finding",
    "Sensitivity",
    "capacity_review",
    "length",
    "render_text",
    "sensitivity",
]
