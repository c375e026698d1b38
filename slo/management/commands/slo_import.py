from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from slo.openslo import MAX_BYTES, OpenSloError, slo_import_text
from slo.services import SloDefinitionError, fleet_get


class Command(BaseCommand):
    help = "Create SLOs from an OpenSLO v1 YAML file: all of them, or none."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="OpenSLO YAML (kind: SLO documents)")
        parser.add_argument(
            "--fleet", default=None, help="fleet slug for every SLO (default: spec.service)"
        )

    def handle(self, *args: Any, file: str, fleet: str | None, **options: Any) -> None:
        path = Path(file)
        try:
            if path.stat().st_size > MAX_BYTES:
                raise CommandError(f"{file}: larger than {MAX_BYTES} bytes")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(
                f"{file}: cannot read: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        try:
            target = None if fleet is None else fleet_get(fleet)
            created = slo_import_text(text, fleet=target)
        except (OpenSloError, SloDefinitionError) as exc:
            raise CommandError(f"{file}: {exc}; nothing was imported") from None
        self.stdout.write(f"imported {len(created)} SLO{'s' if len(created) != 1 else ''}:")
        for slo in created:
            self.stdout.write(f"  {slo} ({slo.name})")
