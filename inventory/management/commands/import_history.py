from __future__ import annotations

import sys
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from inventory.history import HistoryError, history_import

# The dashboard's `since` choices (dashboard.timerange.RANGES, which inventory may not import).
VIEW_RANGES = (
    ("15m", timedelta(minutes=15)),
    ("1h", timedelta(hours=1)),
    ("3h", timedelta(hours=3)),
    ("6h", timedelta(hours=6)),
    ("12h", timedelta(hours=12)),
    ("24h", timedelta(hours=24)),
)


class Command(BaseCommand):
    help = (
        "Load an OpenMetrics history (as Prometheus stored it, e.g. `fleetsim history`) into "
        "the embedded store as the scrapes it records; all or nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="OpenMetrics history with timestamps")
        parser.add_argument("--fleet", required=True, help="fleet slug (created if missing)")
        parser.add_argument("--fleet-name", default=None)

    def handle(
        self, *args: Any, file: str, fleet: str, fleet_name: str | None, **options: Any
    ) -> None:
        started = time.perf_counter()
        try:
            report = history_import(fleet_slug=fleet, path=file, fleet_name=fleet_name)
        except HistoryError as exc:
            self.stderr.write(f"{file}: {exc}")
            sys.exit(2)
        seconds = time.perf_counter() - started
        stored = report.scrapes - report.failed
        self.stdout.write(
            f"fleet {report.fleet.slug}: {report.endpoints_created} endpoints added, "
            f"{report.endpoints_updated} updated; {report.cycles} cycles from "
            f"{report.start:%Y-%m-%dT%H:%M:%SZ} to {report.end:%Y-%m-%dT%H:%M:%SZ}: "
            f"{stored} scrapes stored ({report.samples} samples), {report.failed} failed "
            f"(up=0); {report.parses} layouts parsed; {seconds:.1f} s"
        )
        retention = timedelta(hours=settings.FLEETSCOPE_STORE_RETENTION_HOURS)
        if report.start < timezone.now() - retention:
            self.stdout.write(
                f"note: scrapes older than FLEETSCOPE_STORE_RETENTION_HOURS="
                f"{settings.FLEETSCOPE_STORE_RETENTION_HOURS:g} go at the next store prune"
            )
        span = report.end - report.start
        since = next((label for label, width in VIEW_RANGES if width >= span), "3d")
        self.stdout.write(
            f"view it: /fleets/{report.fleet.slug}/?since={since}"
            f"&end={report.end:%Y-%m-%dT%H:%M:%SZ}"
        )
