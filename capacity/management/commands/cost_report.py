"""`manage.py cost_report FLEET --from DATE --to DATE [--csv|--json] [--backend ...]`: a
fleet's cost over a period as a plain text table, CSV or JSON (the page's exports)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404

from capacity.cost import CostInputError, report_csv, tenant_view
from capacity.pages import cost as cost_pages
from capacity.services import cost_review
from inventory.access import fleet_for_user


class Command(BaseCommand):
    help = (
        "A fleet's cost per tenant and model over [--from, --to): a text table, --csv or "
        "--json. Dates are ISO 8601 dates or times, UTC."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="the fleet's slug")
        parser.add_argument("--from", dest="start", required=True,
                            help="start, included: 2026-11-01 or 2026-11-01T10:00:00Z")  # fmt: skip
        parser.add_argument("--to", dest="end", required=True,
                            help="end, excluded: 2026-12-01 or 2026-12-01T10:00:00Z")  # fmt: skip
        shape = parser.add_mutually_exclusive_group()
        shape.add_argument("--csv", action="store_true", help="one row per tenant x model line")
        shape.add_argument("--json", action="store_true", help="the whole report")
        parser.add_argument("--backend", default="local", help="local (default) or prometheus")
        parser.add_argument("--tenant", help="one tenant's lines only (no fleet-wide figures)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            fleet = fleet_for_user(None, slug=options["fleet"])
        except Http404:
            raise CommandError(f"FLEET: no fleet {options['fleet']!r}") from None
        try:
            start = cost_pages.time_parse(options["start"], "--from")
            end = cost_pages.time_parse(options["end"], "--to")
            backend = cost_pages.backend_parse(options["backend"], "--backend")
            cost_pages.period_check(
                start, end, now=datetime.now(UTC), start_name="--from", end_name="--to"
            )
        except cost_pages.ParameterError as exc:
            raise CommandError(str(exc)) from None
        review = cost_review(fleet, start=start, end=end, backend=backend)
        if options["tenant"]:
            try:
                review = replace(review, report=tenant_view(review.report, options["tenant"]))
            except CostInputError as exc:
                raise CommandError(f"--tenant: {exc.message}") from None
        if options["csv"]:
            self.stdout.write(report_csv(review.report), ending="")
        elif options["json"]:
            data = cost_pages.export_dict(review)
            self.stdout.write(json.dumps(data, indent=2, allow_nan=False))
        else:
            self.stdout.write(cost_pages.report_text(review), ending="")
