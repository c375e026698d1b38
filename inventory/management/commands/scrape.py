from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inventory.scraping import Scraper
from inventory.services import outbound_policy, scrape_limits


class Command(BaseCommand):
    help = "Scrape one /metrics URL once (GET only) and print its inventory. Writes nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args: Any, url: str, as_json: bool, **options: Any) -> None:
        scraper = Scraper(policy=outbound_policy(), limits=scrape_limits())
        outcome = asyncio.run(scraper.scrape_many([url]))[0]
        if outcome.error is not None:
            self.stderr.write(f"{url}: {outcome.error.kind}: {outcome.error.message}")
            sys.exit(1)
        snapshot = outcome.inventory
        assert snapshot is not None  # a scraper's first scrape of a URL always carries it
        summary = snapshot.families
        if as_json:
            report = {
                "url": url,
                "duration_seconds": round(outcome.duration_seconds, 4),
                "body_bytes": outcome.body_bytes,
                "samples": outcome.sample_count,
                "dialect": snapshot.dialect,
                "kind": snapshot.kind,
                "engines": list(snapshot.engines),
                "evidence": list(snapshot.evidence),
                "families": summary,
            }
            self.stdout.write(json.dumps(report, indent=2, allow_nan=False))
            return
        self.stdout.write(
            f"{url}: {len(summary)} families, {outcome.sample_count} samples, "
            f"{outcome.body_bytes} bytes in {outcome.duration_seconds * 1000:.0f} ms; "
            f"kind {snapshot.kind}, dialect {snapshot.dialect}"
        )
        for name, family in sorted(summary.items()):
            labels = ",".join(family["label_names"])
            self.stdout.write(f"  {name} {family['type']} series={family['series']} [{labels}]")
