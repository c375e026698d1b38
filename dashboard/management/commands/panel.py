from __future__ import annotations

import sys
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandParser
from django.http import Http404
from django.utils import timezone

from dashboard.live import default_backend
from dashboard.overview import overview_json, panel_compute
from dashboard.panels import PANELS_BY_ID
from dashboard.timerange import DEFAULT_RANGE, RANGES, RangeError, parse_range
from inventory.access import fleet_for_user
from queries import Window


class Command(BaseCommand):
    help = "Print the numbers behind one panel of a fleet's overview."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument("panel", help=f"one of: {', '.join(PANELS_BY_ID)}")
        parser.add_argument("--since", default=DEFAULT_RANGE, help=f"one of {', '.join(RANGES)}")
        parser.add_argument("--backend", choices=["local", "prometheus"], default=None)
        parser.add_argument("--model", default=None)
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            # The operator at the shell: no user, every fleet.
            fleet = fleet_for_user(None, slug=options["fleet"])
        except Http404:
            self._fail(f"no fleet {options['fleet']!r}")
        panel = PANELS_BY_ID.get(options["panel"])
        if panel is None:
            self._fail(f"no panel {options['panel']!r}; choose from {', '.join(PANELS_BY_ID)}")
        try:
            span = parse_range(options["since"], None, now=timezone.now())
        except RangeError as exc:
            self._fail(str(exc))
        window = Window(span.start, span.end, span.step_seconds)
        backend = options["backend"] or default_backend()
        data = panel_compute(
            panel, fleet=fleet, window=window, backend=backend, model_name=options["model"]
        )
        if options["as_json"]:
            self.stdout.write(overview_json(data))
            return
        self.stdout.write(
            f"{panel.title} ({panel.unit}) on {fleet.slug}, {span.since}: {data['status']}"
        )
        for note in data["notes"]:
            self.stdout.write(f"  note: {note}")
        for trace in data["traces"]:
            values = [v for v in trace["values"] if v is not None]
            last = f"{values[-1]:.6g}" if values else "n/a"
            self.stdout.write(f"  {trace['name']}: {len(values)} points, last {last}")

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(message)
        sys.exit(2)
