from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from slo.models import Slo
from slo.rules import slo_rules
from slo.services import SloDefinitionError, fleet_get

# The settings name no public URL for FleetScope, so alerts link to a local server unless told.
DEFAULT_DASHBOARD_URL = "http://localhost:8000"


class Command(BaseCommand):
    help = (
        "Write a fleet's SLOs as Prometheus recording and burn-rate alerting rules (YAML), to "
        "stdout or --output FILE; notes on objectives left out or read approximately go to "
        "stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument(
            "--dashboard-url",
            default=DEFAULT_DASHBOARD_URL,
            metavar="URL",
            help=f"FleetScope's base URL, for the alerts' dashboard_url (default "
            f"{DEFAULT_DASHBOARD_URL}: no setting names FleetScope's public address)",
        )
        parser.add_argument("--output", default=None, metavar="FILE")

    def handle(
        self, *args: Any, fleet: str, dashboard_url: str, output: str | None, **options: Any
    ) -> None:
        try:
            found = fleet_get(fleet)
        except SloDefinitionError as exc:
            raise CommandError(str(exc)) from None
        if not Slo.objects.filter(fleet=found).exists():
            raise CommandError(f"fleet {found.slug!r} has no SLO to write rules for")
        rules = slo_rules(found, dashboard_base_url=dashboard_url)
        for note in rules.notes:
            self.stderr.write(f"note: {note}")
        text = rules.yaml()
        if output is None:
            self.stdout.write(text, ending="")
            return
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"{output}: cannot write: {exc.strerror or exc}") from None
        count = len(rules.groups)
        self.stderr.write(f"wrote {count} rule group{'s' if count != 1 else ''} to {output}")
