from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inventory.models import Fleet
from triage.canary import BreachedObjective, ObjectiveKindName, canary_evaluate
from triage.management.commands.triage import DURATION, UNIT_SECONDS

KINDS = ("ttft", "itl", "tpot", "e2e", "success")


def _bad(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def _objective(text: str) -> BreachedObjective:
    """`ttft:2.5:0.95` (kind, threshold seconds, target) or `success:0.99`."""
    parts = text.split(":")
    try:
        if parts[0] == "success" and len(parts) == 2:
            return BreachedObjective("success", None, float(parts[1]), 0.0)
        if parts[0] in KINDS and len(parts) == 3:
            kind = cast(ObjectiveKindName, parts[0])  # checked against KINDS above
            return BreachedObjective(kind, float(parts[1]), float(parts[2]), 0.0)
    except ValueError as exc:
        raise _bad(f"--objective: {exc}") from None
    raise _bad(
        f"--objective: {text!r} is not KIND:THRESHOLD_SECONDS:TARGET (ttft, itl, tpot, e2e) "
        "or success:TARGET"
    )


class Command(BaseCommand):
    help = (
        "Compare canary replicas with control replicas on one objective over a window: "
        "recovered, not recovered, or inconclusive (too few requests). Reads only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument("--canary", required=True, help="instances, comma-separated")
        parser.add_argument("--control", required=True, help="instances, comma-separated")
        parser.add_argument("--objective", required=True, help="e.g. ttft:2.5:0.95 or success:0.99")
        parser.add_argument("--model", help="model_name the replicas serve")
        parser.add_argument("--at", help="end of the window, ISO 8601 with offset (default now)")
        parser.add_argument("--since", default="30m", help="window length: 30m, 2h, 900s")
        parser.add_argument("--min-requests", type=int, default=100)
        parser.add_argument("--backend", choices=("local", "prometheus"), default="local")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        fleet = Fleet.objects.filter(slug=options["fleet"]).first()
        if fleet is None:
            raise _bad(f"no fleet {options['fleet']!r}")
        objective = _objective(options["objective"])
        match = DURATION.match(options["since"].strip())
        if match is None or int(match.group(1)) == 0:
            raise _bad(f"--since: not a duration like 30m, 2h or 900s: {options['since']!r}")
        end = datetime.now(UTC).replace(microsecond=0)
        if options["at"]:
            try:
                end = datetime.fromisoformat(options["at"].replace("Z", "+00:00"))
            except ValueError:
                raise _bad(f"--at: not an ISO 8601 time: {options['at']!r}") from None
            if end.tzinfo is None:
                raise _bad("--at: give a UTC offset, e.g. 2026-12-01T10:00:00Z")
        start = end - timedelta(seconds=int(match.group(1)) * UNIT_SECONDS[match.group(2)])
        canary = [i.strip() for i in options["canary"].split(",") if i.strip()]
        control = [i.strip() for i in options["control"].split(",") if i.strip()]
        try:
            found = canary_evaluate(
                fleet=fleet,
                model_name=options["model"],
                canary_instances=canary,
                control_instances=control,
                objective=objective,
                start=start,
                end=end,
                backend=options["backend"],
                min_requests=options["min_requests"],
            )
        except ValueError as exc:
            raise _bad(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(found.to_dict(), allow_nan=False, indent=2))
            return
        self.stdout.write(f"{found.answer}: {found.reason}")
        self.stdout.write(f"next: {found.next_step}")
        for side in (found.canary, found.control):
            reading = side.to_dict()
            self.stdout.write(f"{reading['role']} {', '.join(reading['instances'])}:")
            for name in ("good", "requests", "error_ratio"):
                figure = reading.get(name)
                if figure:
                    self.stdout.write(
                        f"  {figure['name']} = {figure['value']} ({figure['source']})"
                    )
        for note in found.notes:
            self.stdout.write(f"note: {note}")
