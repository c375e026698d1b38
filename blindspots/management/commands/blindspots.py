from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from blindspots import ACTIONABLE, AuditPaths, AuditReport, audit_fleet
from blindspots.services import FILE_SUFFIXES, files_under
from inventory.models import Fleet


def utc_text(at: str | None) -> str:
    return at.replace("T", " ").replace("Z", " UTC") if at else ""


def report_text(report: AuditReport) -> str:
    """Counts by verdict, then each item (worst first) with its verdict, why, since when and
    rewrite, then what could not be audited."""
    data = report.to_dict()
    lines = [f"blind spots of {report.fleet}, audited {utc_text(data['started'])}"]
    lines.append("  ".join(f"{label}: {count}" for label, count in data["counts"].items()))
    order = {v: i for i, v in enumerate(data["counts"])}
    # Worst first; within a verdict, in the order the sources hold them.
    for row in sorted(data["items"], key=lambda r: order[r["verdict"]]):
        lines.append("")
        lines.append(f"[{row['verdict']}] {row['kind']} {row['name']!r}")
        lines.append(f"  from: {row['source']} ({row['where']})")
        if row["why"]:
            lines.append(f"  why: {row['why']}")
        if row["since"] or row["since_text"]:
            since = utc_text(row["since"]) or "unknown"
            lines.append(
                f"  since: {since}" + (f": {row['since_text']}" if row["since_text"] else "")
            )
        if row["expected"] and (row["matching"] or row["verdict"] != "live"):
            lines.append(
                f"  replicas: {len(row['matching'])} of {len(row['expected'])}"
                + (f"; missing on {', '.join(row['missing'])}" if row["missing"] else "")
            )
        if row["rewrite"]:
            lines.append("  rewrite:")
            lines.extend(f"    {line}" for line in row["rewrite"]["diff"].splitlines())
            lines.extend(f"    note: {note}" for note in row["rewrite"]["notes"])
    if data["errors"]:
        lines.append("")
        lines.append("could not be audited:")
        for error in data["errors"]:
            lines.append(
                f"  {error['kind']} {error['name']!r} ({error['where']}): {error['reason']}"
            )
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Audit the rules, dashboards and autoscaler queries that read a fleet's metrics: "
        "which are blind, partly blind, never matched, suspicious or live, since when, and "
        "the rewrite. Exit status 1 when anything is blind or partly blind (for CI)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="fleet slug")
        parser.add_argument(
            "--prometheus-rules",
            action="store_true",
            help="also audit the rules of PROMETHEUS_URL (GET /api/v1/rules)",
        )
        parser.add_argument(
            "--rules", nargs="+", default=[], metavar="FILE", help="Prometheus rule files (YAML)"
        )
        parser.add_argument(
            "--dashboards",
            nargs="+",
            default=[],
            metavar="PATH",
            help="Grafana dashboard JSON files or folders of them",
        )
        parser.add_argument(
            "--autoscalers",
            nargs="+",
            default=[],
            metavar="PATH",
            help="KEDA ScaledObject / HPA YAML files or folders of them",
        )
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    def handle(self, *args: Any, **options: Any) -> None:
        fleet = Fleet.objects.filter(slug=options["fleet"]).first()
        if fleet is None:
            raise CommandError(f"FLEET: no fleet {options['fleet']!r}")
        paths = AuditPaths(
            rules=self.paths(options["rules"], "--rules"),
            dashboards=self.paths(options["dashboards"], "--dashboards"),
            autoscalers=self.paths(options["autoscalers"], "--autoscalers"),
        )
        if options["prometheus_rules"]:
            from django.conf import settings

            if not settings.PROMETHEUS_URL:
                raise CommandError("--prometheus-rules: PROMETHEUS_URL is not set")
        report, _ = audit_fleet(fleet, paths=paths, prometheus_rules=options["prometheus_rules"])
        if options["json"]:
            self.stdout.write(json.dumps(report.to_dict(), indent=2, allow_nan=False))
        else:
            self.stdout.write(report_text(report))
        if any(r.verdict in ACTIONABLE for r in report.items):
            sys.exit(1)

    @staticmethod
    def paths(given: list[str], flag: str) -> tuple[Path, ...]:
        """The paths given to `flag`, each an existing file or a folder holding some."""
        found = []
        for name in given:
            path = Path(name)
            if not path.exists():
                raise CommandError(f"{flag}: no such file or folder: {name}")
            if path.is_dir() and not files_under(path):
                suffixes = ", ".join(FILE_SUFFIXES)
                raise CommandError(f"{flag}: no {suffixes} file under {name}")
            if not path.is_dir() and not path.is_file():
                raise CommandError(f"{flag}: not a file: {name}")
            found.append(path)
        return tuple(found)
