from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inventory.exposition import ExpositionError, parse
from inventory.families_json import families_json


class Command(BaseCommand):
    help = "Parse a Prometheus/OpenMetrics exposition file (or - for stdin) strictly."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="path, or - for standard input")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print families as JSON"
        )
        parser.add_argument("--openmetrics", action="store_true", help="OpenMetrics text")

    def handle(
        self, *args: Any, file: str, as_json: bool, openmetrics: bool, **options: Any
    ) -> None:
        try:
            body = sys.stdin.buffer.read() if file == "-" else _read(file)
        except OSError as exc:
            self.stderr.write(f"cannot read {file}: {exc.strerror}")
            sys.exit(2)
        try:
            families = parse(body, openmetrics=openmetrics)
        except ExpositionError as exc:
            self.stderr.write(f"line {exc.line}: {exc.message}")
            sys.exit(2)
        if as_json:
            self.stdout.write(_dumps(families_json(families)))
            return
        for family in families:
            problems = f"  problems: {'; '.join(family.problems)}" if family.problems else ""
            self.stdout.write(f"{family.name} {family.type} {len(family.samples)}{problems}")


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _dumps(data: object) -> str:
    return json.dumps(data, indent=2, allow_nan=False)
