from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inventory.models import Fleet
from slo.models import Slo
from triage.walk import walk_fleet
from triage.walk.text import walk_text

DURATION = re.compile(r"^(\d+)([smhd])$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _bad(message: str) -> CommandError:
    return CommandError(message, returncode=2)


class Command(BaseCommand):
    help = (
        "Walk the TTFT-vs-TPOT triage tree over a window and print each node's verdict "
        "with its numbers. Exit 0 whatever the verdicts; 2 for bad arguments."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument("--slo", help="SLO slug of the fleet whose model to walk")
        parser.add_argument("--at", help="end of the window, ISO 8601 with offset (default now)")
        parser.add_argument("--since", default="30m", help="window length: 30m, 2h, 900s")
        parser.add_argument("--backend", choices=("local", "prometheus"), default="local")
        parser.add_argument("--json", action="store_true", help="the documented JSON contract")

    def handle(self, *args: Any, **options: Any) -> None:
        fleet = Fleet.objects.filter(slug=options["fleet"]).first()
        if fleet is None:
            raise _bad(f"no fleet {options['fleet']!r}")
        slo = None
        if options["slo"]:
            slo = Slo.objects.filter(fleet=fleet, slug=options["slo"]).first()
            if slo is None:
                raise _bad(f"fleet {fleet.slug} has no SLO {options['slo']!r}")
        match = DURATION.match(options["since"].strip())
        if match is None or int(match.group(1)) == 0:
            raise _bad(f"--since: not a duration like 30m, 2h or 900s: {options['since']!r}")
        since = timedelta(seconds=int(match.group(1)) * UNIT_SECONDS[match.group(2)])
        at = None
        if options["at"]:
            try:
                at = datetime.fromisoformat(options["at"].replace("Z", "+00:00"))
            except ValueError:
                raise _bad(f"--at: not an ISO 8601 time: {options['at']!r}") from None
            if at.tzinfo is None:
                raise _bad("--at: give a UTC offset, e.g. 2026-12-01T10:00:00Z")
            at = at.astimezone(UTC)
            if at > datetime.now(UTC) + timedelta(seconds=60):
                raise _bad(f"--at: {options['at']} is in the future")
        walk = walk_fleet(fleet, slo=slo, at=at, since=since, backend=options["backend"])
        if options["json"]:
            self.stdout.write(json.dumps(walk.to_dict(), allow_nan=False, indent=2))
        else:
            self.stdout.write(walk_text(walk.to_dict()))
