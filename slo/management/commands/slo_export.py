from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from slo.openslo import documents_text, slo_documents
from slo.services import SloDefinitionError, fleet_get


class Command(BaseCommand):
    help = "Write a fleet's SLOs as OpenSLO v1 YAML, to stdout or --output FILE."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument("--output", default=None, metavar="FILE")

    def handle(self, *args: Any, fleet: str, output: str | None, **options: Any) -> None:
        try:
            documents = slo_documents(fleet=fleet_get(fleet))
        except SloDefinitionError as exc:
            raise CommandError(str(exc)) from None
        text = documents_text(documents)
        if output is None:
            self.stdout.write(text, ending="")
            return
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"{output}: cannot write: {exc.strerror or exc}") from None
        count = len(documents)
        self.stdout.write(f"wrote {count} SLO{'s' if count != 1 else ''} to {output}")
