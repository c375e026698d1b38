"""SLO definitions: what a fleet promises, per objective, over a rolling window.

An SLO selects a fleet's replicas (all, or a model, or listed instances) and holds one
or more objectives. Latency objectives are "observations <= threshold_seconds, for at
least `target` of them"; the success objective is "finishes whose reason is not in
`bad_finish_reasons`, for at least `target` of them". Figures come from `slo.status`.
"""

from __future__ import annotations

from django.db import models

from inventory.models import Fleet

DEFAULT_BAD_FINISH_REASONS = ("abort", "error")
# Below this many requests in an alert's long window a burn rate is noise: no page.
DEFAULT_MIN_REQUESTS_TO_PAGE = 100
# The slow, low-traffic rule raises a ticket once this many bad events pile up.
DEFAULT_MIN_BAD_EVENTS = 10


def default_bad_finish_reasons() -> list[str]:
    return list(DEFAULT_BAD_FINISH_REASONS)


class SloWindow(models.IntegerChoices):
    DAYS_7 = 7, "7 days"
    DAYS_28 = 28, "28 days"
    DAYS_30 = 30, "30 days"


class Slo(models.Model):
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="slos")
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # Selector: an empty model or instance list means every replica of the fleet.
    model_name = models.CharField(max_length=200, blank=True)
    instances = models.JSONField(default=list, blank=True)
    window_days = models.PositiveSmallIntegerField(
        choices=SloWindow.choices, default=SloWindow.DAYS_28
    )
    owner = models.CharField(max_length=200, blank=True)
    runbook_url = models.URLField(max_length=500, blank=True)
    bad_finish_reasons = models.JSONField(default=default_bad_finish_reasons)
    min_requests_to_page = models.PositiveIntegerField(default=DEFAULT_MIN_REQUESTS_TO_PAGE)
    min_bad_events = models.PositiveIntegerField(default=DEFAULT_MIN_BAD_EVENTS)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["fleet", "name"]
        constraints = [
            models.UniqueConstraint(fields=["fleet", "slug"], name="slo_unique_slug_per_fleet"),
        ]

    def __str__(self) -> str:
        return f"{self.fleet.slug}/{self.slug}"


class ObjectiveKind(models.TextChoices):
    TTFT = "ttft", "Time to first token"
    ITL = "itl", "Inter-token latency"
    TPOT = "tpot", "Time per output token (per request)"
    E2E = "e2e", "End-to-end latency"
    SUCCESS = "success", "Success ratio"


class Objective(models.Model):
    slo = models.ForeignKey(Slo, on_delete=models.CASCADE, related_name="objectives")
    kind = models.CharField(max_length=16, choices=ObjectiveKind.choices)
    # None for the success objective; seconds for the latency ones.
    threshold_seconds = models.FloatField(null=True, blank=True)
    target = models.FloatField(help_text="fraction of requests (or token gaps, for ITL), 0-1")

    class Meta:
        ordering = ["slo", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["slo", "kind"], name="slo_objective_unique_kind"),
            models.CheckConstraint(
                condition=models.Q(target__gt=0) & models.Q(target__lt=1),
                name="slo_objective_target_open_unit",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(kind="success", threshold_seconds__isnull=True)
                    | (~models.Q(kind="success") & models.Q(threshold_seconds__gt=0))
                ),
                name="slo_objective_threshold_for_latency",
            ),
        ]

    def __str__(self) -> str:
        if self.threshold_seconds is None:
            return f"{self.kind} >= {self.target:.4g}"
        return f"{self.kind} <= {self.threshold_seconds:g} s at {self.target:.4g}"
