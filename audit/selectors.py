"""Reading the trail."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from audit.models import AuditEntry
from inventory.models import Fleet


def changes_between(fleet: Fleet, start: datetime, end: datetime) -> list[AuditEntry]:
    """The entries on `fleet`'s objects and on objects of no fleet (runbooks, GPU
    profiles) recorded in [start, end], oldest first. Entries of a deleted fleet (no fleet
    row, its slug kept) belong to no other fleet, even one given its slug since."""
    return list(
        AuditEntry.objects.filter(
            Q(fleet=fleet) | Q(fleet__isnull=True, fleet_slug=""), at__gte=start, at__lte=end
        ).order_by("at", "pk")
    )
