from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inventory.models import Fleet
from slo.evaluation import slo_statuses
from slo.evaluation.explain import status_text


class Command(BaseCommand):
    help = (
        "Each SLO of a fleet: attainment (a value, or an interval with lower and upper), "
        "goodput (a value or bounds), budget remaining, burn rates and state."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument("--backend", choices=("local", "prometheus"), default="local")
        parser.add_argument("--at", help="evaluate at this UTC time (ISO 8601), default now")
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.add_argument("--explain", action="store_true",
                            help="say where every figure came from")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        fleet = Fleet.objects.filter(slug=options["fleet"]).first()
        if fleet is None:
            raise CommandError(f"no fleet {options['fleet']!r}")
        at = None
        if options["at"]:
            try:
                at = datetime.fromisoformat(options["at"])
            except ValueError:
                raise CommandError(f"--at: not an ISO 8601 time: {options['at']!r}") from None
            if at.tzinfo is None:
                raise CommandError("--at: give a UTC offset, e.g. 2026-12-01T10:00:00+00:00")
            at = at.astimezone(UTC)
        statuses = slo_statuses(fleet, backend=options["backend"], at=at)
        if not statuses:
            self.stdout.write(f"fleet {fleet.slug} has no SLOs: try manage.py slo_preset "
                              f"{fleet.slug} chat")  # fmt: skip
            return
        if options["json"]:
            self.stdout.write(json.dumps([s.to_dict() for s in statuses], allow_nan=False,
                                         indent=2))  # fmt: skip
        else:
            self.stdout.write(status_text(statuses, explain=options["explain"]))
