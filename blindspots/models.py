"""What the blind-spot audit keeps: the sources a team uploaded for a fleet (so the audit
can be run again on them) and each audit run, with its counts and its rows as JSON (so
the overview can say what went blind since an earlier run). Both are written by
`blindspots.services` in one transaction each: a source and the run it caused together,
or neither."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from inventory.models import Fleet


class SourceKind(models.TextChoices):
    DASHBOARD = "dashboard", "Grafana dashboard JSON"
    RULES = "rules", "Prometheus rule YAML"
    AUTOSCALER = "autoscaler", "KEDA ScaledObject / HPA YAML"


class AuditSource(models.Model):
    """A dashboard, rule file or autoscaler definition uploaded on the fleet's page."""

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="blindspot_sources")
    kind = models.CharField(max_length=16, choices=SourceKind.choices)
    name = models.CharField(max_length=255)
    content = models.TextField()
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-uploaded_at", "-id"]

    def __str__(self) -> str:
        return f"{self.fleet.slug}: {self.name}"


class AuditRun(models.Model):
    """One audit of a fleet: when, what it read, its counts by verdict and every item's row
    (`blindspots.audit.AuditReport.to_dict()`)."""

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="blindspot_runs")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    with_prometheus_rules = models.BooleanField(default=False)
    counts = models.JSONField(default=dict)
    report = models.JSONField(default=dict)
    # The items' keys by live or not: what the overview compares without reading reports.
    live_keys = models.JSONField(default=list)
    not_live_keys = models.JSONField(default=list)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["fleet", "-started_at"], name="blindspots_run_latest")]

    def __str__(self) -> str:
        return f"{self.fleet.slug} at {self.started_at:%Y-%m-%d %H:%M} UTC"
