from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inventory.registration import RegistrationError, targets_import
from inventory.targets import TargetFileError, parse_target_file

MAX_FILE_BYTES = 8 * 1024 * 1024


class Command(BaseCommand):
    help = "Register endpoints from a Prometheus file_sd file or FleetScope YAML/JSON; all or none."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--fleet", required=True, help="fleet slug (created if missing)")
        parser.add_argument("--fleet-name", default=None)

    def handle(
        self, *args: Any, file: str, fleet: str, fleet_name: str | None, **options: Any
    ) -> None:
        path = Path(file)
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                self._fail(f"{file}: larger than {MAX_FILE_BYTES} bytes")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self._fail(f"{file}: cannot read: {getattr(exc, 'strerror', None) or exc}")
        try:
            specs = parse_target_file(text)
            report = targets_import(fleet_slug=fleet, fleet_name=fleet_name, specs=specs)
        except (TargetFileError, RegistrationError) as exc:
            self._fail(f"{file}: {exc}")
        self.stdout.write(
            f"fleet {report.fleet.slug}: {report.created} endpoints added, {report.updated} updated"
        )

    def _fail(self, message: str) -> None:
        self.stderr.write(message)
        sys.exit(2)
