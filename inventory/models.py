from __future__ import annotations

from django.db import models


class JobHeartbeat(models.Model):
    """Last run of each periodic job, so readiness can tell a stalled scheduler from a quiet one."""

    job = models.CharField(max_length=100, unique=True)
    last_run_at = models.DateTimeField()
    runs = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.job} @ {self.last_run_at:%Y-%m-%dT%H:%M:%SZ}"
