"""One row per recorded change. Rows are only ever added (audit.recording); the admin shows
them read-only. The actor, the object and the fleet are kept as text too, so deleting a
user, the object or its fleet keeps the trail readable."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from inventory.models import Fleet


class AuditAction(models.TextChoices):
    CREATE = "create", "created"
    UPDATE = "update", "updated"
    DELETE = "delete", "deleted"


class AuditEntry(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # A username, "command:<name>" or "system" (audit.actor): text, not a user row.
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=8, choices=AuditAction.choices)
    object_type = models.CharField(max_length=32)  # audit.tracked: "slo", "endpoint", ...
    object_id = models.CharField(max_length=64)
    object_text = models.CharField(max_length=300)  # what the object was called then
    fleet = models.ForeignKey(
        Fleet, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Blank for objects of no fleet (runbooks, GPU profiles); kept when the fleet goes.
    fleet_slug = models.CharField(max_length=64, blank=True)
    # field -> [from, to], JSON-safe; [null, value] on create, [value, null] on delete.
    changes = models.JSONField(default=dict)

    class Meta:
        ordering = ["at", "pk"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.object_text}"
