from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from slo.presets import PRESETS
from slo.services import SloDefinitionError, fleet_get, objective_describe, slo_from_preset


class Command(BaseCommand):
    help = "Create an SLO over a whole fleet from a preset: " + ", ".join(PRESETS) + "."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument("preset", help="one of " + ", ".join(PRESETS))
        parser.add_argument("--name", default=None, help="SLO name (default: the preset's)")

    def handle(self, *args: Any, fleet: str, preset: str, name: str | None, **options: Any) -> None:
        try:
            slo = slo_from_preset(fleet_get(fleet), preset, name=name)
        except SloDefinitionError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"created {slo} ({slo.name}), {slo.window_days}-day rolling window:")
        for objective in slo.objectives.all():
            self.stdout.write(f"  {objective_describe(objective)}")
