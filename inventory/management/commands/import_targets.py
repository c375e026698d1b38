from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, NoReturn

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from inventory.registration import (
    ImportReport,
    RegistrationError,
    endpoints_discover_from_url,
    targets_import,
)
from inventory.targets import TargetFileError, parse_target_file

MAX_FILE_BYTES = 8 * 1024 * 1024


class Command(BaseCommand):
    help = (
        "Register endpoints from a Prometheus file_sd file or FleetScope YAML/JSON, or from "
        "the active targets of a Prometheus (--from-prometheus URL); all or none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="target file (or give --from-prometheus)")
        parser.add_argument("--fleet", required=True, help="fleet slug (created if missing)")
        parser.add_argument("--fleet-name", default=None)
        parser.add_argument(
            "--from-prometheus",
            metavar="URL",
            default=None,
            help="discover the targets this Prometheus scrapes (GET /api/v1/targets) and "
            "keep it as the fleet's Prometheus source",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=None,
            help="seconds to wait for Prometheus (default: PROMETHEUS_TIMEOUT_SECONDS)",
        )

    def handle(
        self,
        *args: Any,
        file: str | None,
        fleet: str,
        fleet_name: str | None,
        from_prometheus: str | None,
        timeout: float | None,
        **options: Any,
    ) -> None:
        if (file is None) == (from_prometheus is None):
            self._fail("give exactly one of a target FILE or --from-prometheus URL")
        if from_prometheus is not None:
            report = self._discover(from_prometheus, fleet, fleet_name, timeout)
            source = f" (discovered from {report.source.url})" if report.source else ""
        else:
            assert file is not None
            report = self._import_file(file, fleet, fleet_name)
            source = ""
        self.stdout.write(
            f"fleet {report.fleet.slug}: {report.created} endpoints added, "
            f"{report.updated} updated{source}"
        )

    def _discover(
        self, url: str, fleet: str, fleet_name: str | None, timeout: float | None
    ) -> ImportReport:
        seconds = settings.PROMETHEUS_TIMEOUT_SECONDS if timeout is None else timeout
        if not (math.isfinite(seconds) and seconds > 0):
            self._fail("--timeout must be a positive number of seconds")
        try:
            return endpoints_discover_from_url(
                fleet_slug=fleet, url=url, fleet_name=fleet_name, timeout_seconds=seconds
            )
        except RegistrationError as exc:  # DiscoveryError names the URL itself
            self._fail(str(exc))

    def _import_file(self, file: str, fleet: str, fleet_name: str | None) -> ImportReport:
        path = Path(file)
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                self._fail(f"{file}: larger than {MAX_FILE_BYTES} bytes")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self._fail(f"{file}: cannot read: {getattr(exc, 'strerror', None) or exc}")
        try:
            specs = parse_target_file(text)
            return targets_import(fleet_slug=fleet, fleet_name=fleet_name, specs=specs)
        except (TargetFileError, RegistrationError) as exc:
            self._fail(f"{file}: {exc}")

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(message)
        sys.exit(2)
