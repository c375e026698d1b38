"""The capacity review pages: a `PlanReview` as sections, rows and sentences, and as JSON.

from capacity.pages import review as review_rows
sections = [review_rows.section_of(item) for item in reviews]
"""

from __future__ import annotations

from capacity.pages.review.export import fleet_dict, gpu_rows, model_dict, profile_rows
from capacity.pages.review.figures import Answer, Figure, answer, figure
from capacity.pages.review.sections import ModelSection, section_of

__all__ = [
    "Answer",
    "Figure",
    "ModelSection",
    "answer",
    "figure",
    "fleet_dict",
    "gpu_rows",
    "model_dict",
    "profile_rows",
    "section_of",
]
