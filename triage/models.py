"""Incidents, their timeline, the walks frozen as evidence, and the runbook per leaf of the
triage tree. Rows only: every write goes through triage.incidents (the services)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from inventory.models import Fleet
from slo.models import Slo


class Runbook(models.Model):
    """What to read, check and (safely) do for one leaf of the tree; `slug` is the leaf id
    with "." replaced by "-". Either the body is here, or it lives at `external_url`."""

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    owner_team = models.CharField(max_length=200, blank=True)
    escalation = models.CharField(max_length=500, blank=True)
    body_markdown = models.TextField(blank=True)
    external_url = models.URLField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(body_markdown="") | ~Q(external_url=""),
                name="triage_runbook_has_body_or_url",
                violation_error_message="a runbook needs a body or an external URL",
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def external_link(self) -> str:
        """`external_url` when a browser may follow it: the admin's form takes only web
        addresses, but a row written another way could hold `javascript:`."""
        scheme = self.external_url.split(":", 1)[0].strip().lower()
        return self.external_url if scheme in ("http", "https") else ""


class IncidentStatus(models.TextChoices):
    OPEN = "open", "Open"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    RESOLVED = "resolved", "Resolved"


# Badge classes of fleetscope.css, one place: templates never pick colours themselves.
STATUS_BADGES = {
    IncidentStatus.OPEN: "badge-bad",
    IncidentStatus.ACKNOWLEDGED: "badge-warning",
    IncidentStatus.RESOLVED: "badge-muted",
}
UNRESOLVED = (IncidentStatus.OPEN, IncidentStatus.ACKNOWLEDGED)


class IncidentSeverity(models.TextChoices):
    CRITICAL = "critical", "Critical"
    WARNING = "warning", "Warning"
    INFO = "info", "Info"


class IncidentSource(models.TextChoices):
    MANUAL = "manual", "Opened by hand"
    ALERTMANAGER = "alertmanager", "Alertmanager"


class Incident(models.Model):
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="incidents")
    slo = models.ForeignKey(
        Slo, on_delete=models.SET_NULL, null=True, blank=True, related_name="incidents"
    )
    title = models.CharField(max_length=300)
    status = models.CharField(
        max_length=16, choices=IncidentStatus.choices, default=IncidentStatus.OPEN
    )
    severity = models.CharField(
        max_length=16, choices=IncidentSeverity.choices, default=IncidentSeverity.WARNING
    )
    owner = models.CharField(max_length=200, blank=True)
    runbook = models.ForeignKey(
        Runbook, on_delete=models.SET_NULL, null=True, blank=True, related_name="incidents"
    )
    opened_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # When the breach began (the alert's startsAt), which can be well before opened_at.
    started_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(
        max_length=16, choices=IncidentSource.choices, default=IncidentSource.MANUAL
    )
    alert_fingerprint = models.CharField(max_length=64, blank=True)
    alert_labels = models.JSONField(default=dict, blank=True)
    alert_annotations = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            # Alertmanager replays a notification until it is acknowledged with a 2xx: the
            # fingerprint makes the replay find the incident it opened the first time.
            models.UniqueConstraint(
                fields=["fleet", "alert_fingerprint"],
                condition=~Q(alert_fingerprint=""),
                name="triage_incident_unique_fingerprint_per_fleet",
            ),
            models.CheckConstraint(
                condition=Q(status=IncidentStatus.RESOLVED, resolved_at__isnull=False)
                | (~Q(status=IncidentStatus.RESOLVED) & Q(resolved_at__isnull=True)),
                name="triage_incident_resolved_at_iff_resolved",
                violation_error_message="resolved_at is set exactly when the status is resolved",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def status_badge(self) -> str:
        return STATUS_BADGES[IncidentStatus(self.status)]

    @property
    def is_resolved(self) -> bool:
        return self.status == IncidentStatus.RESOLVED


class WalkRecord(models.Model):
    """One walk of the tree for an incident, frozen: `walk` is `Walk.to_dict()` as it was,
    numbers included, so the evidence outlives the metrics' retention."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="walks")
    created_at = models.DateTimeField(default=timezone.now)
    walk = models.JSONField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"walk {self.pk} of incident {self.incident_id}"


class WalkDelivery(models.Model):
    """One queued walk as the broker delivers it: Celery gives a task the same id on every
    delivery, so `attempts` counts the deliveries of one walk, and `finished_at` says it
    ran to its end (a delivery after that has nothing left to do)."""

    task_id = models.CharField(max_length=64, unique=True)
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=0)
    first_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"walk task {self.task_id} of incident {self.incident_id}"


class EventKind(models.TextChoices):
    NOTE = "note", "Note"
    WALK = "walk", "Walk"
    STATUS = "status", "Status change"
    ALERT = "alert", "Alert update"


class IncidentEvent(models.Model):
    """One line of an incident's timeline."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=16, choices=EventKind.choices)
    author = models.CharField(max_length=150, blank=True)
    at = models.DateTimeField(default=timezone.now)
    text = models.TextField()
    walk_record = models.ForeignKey(
        WalkRecord, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} on incident {self.incident_id}"
