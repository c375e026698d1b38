"""The blind-spot pages: every fleet's latest counts, one fleet's audit (counts by verdict,
then each rule, panel and autoscaler with its verdict, why, since when and rewrite), its
JSON, and the forms that change what is audited: upload a source, delete one, run the audit
again (with the configured Prometheus' rules). Every form is a POST with its CSRF token;
every fleet comes through `inventory.access.fleet_for_user`."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from blindspots.audit import counts_of
from blindspots.models import AuditRun, AuditSource, SourceKind
from blindspots.prometheus import prometheus_configured
from blindspots.services import (
    MAX_SOURCE_BYTES,
    UploadOutcome,
    audit_fleet,
    latest_run,
    new_blind_spots,
    source_delete,
    sources_upload,
)
from blindspots.types import VERDICT_ORDER
from fleetscope.lib.utc import utc_text as shared_utc_text
from fleetscope.lib.utc import utc_text_of_iso
from inventory.access import Role, fleet_for_user, fleets_for_user, requires
from inventory.models import Fleet

# Files one upload may carry.
MAX_FILES = 20
# One colour per verdict; the word always sits beside it.
VERDICT_COLOURS = {
    "blind": "blind",
    "partly blind": "partly",
    "never matched": "never",
    "suspicious": "suspicious",
    "live": "live",
}
KIND_WORDS = {"rule": "rule", "panel": "panel", "autoscaler": "autoscaler", "file": "file"}


utc_text = utc_text_of_iso


def count_cells(counts: dict[str, int]) -> list[dict[str, Any]]:
    cells = [
        {"label": v, "colour": VERDICT_COLOURS[v], "count": counts.get(v, 0)} for v in VERDICT_ORDER
    ]
    cells.append({"label": "errors", "colour": "error", "count": counts.get("errors", 0)})
    return cells


def item_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The stored rows, worst first, ready for the template."""
    rows = []
    for row in report.get("items", []):
        selectors = [
            {**s, "colour": VERDICT_COLOURS.get(s["verdict"], "never")}
            for s in row.get("selectors", [])
        ]
        rows.append(
            {
                **row,
                "colour": VERDICT_COLOURS.get(row["verdict"], "never"),
                "since_shown": utc_text(row.get("since")),
                "selectors": selectors,
                "order": VERDICT_ORDER.index(row["verdict"])
                if row["verdict"] in VERDICT_ORDER
                else len(VERDICT_ORDER),
            }
        )
    rows.sort(key=lambda r: r["order"])  # within a verdict, in the sources' order
    return rows


def page_context(
    request: HttpRequest, fleet: Fleet, run: AuditRun | None, **extra: Any
) -> dict[str, Any]:
    report = run.report if run is not None else {}
    counts = run.counts if run is not None else counts_of((), 0)
    sources = AuditSource.objects.filter(fleet=fleet).order_by("-uploaded_at", "-id")
    return {
        "section": "blindspots",
        "fleet": fleet,
        "run": run,
        "run_started": utc_text(report.get("started")),
        "counts": count_cells(counts),
        "rows": item_rows(report),
        "errors": report.get("errors", []),
        "inputs": report.get("inputs", []),
        "sources": [
            {
                "id": s.pk,
                "name": s.name,
                "kind": SourceKind(s.kind).label,
                "size": len(s.content.encode()),
                "uploaded": shared_utc_text(s.uploaded_at),
            }
            for s in sources
        ],
        "prometheus": prometheus_configured(),
        "max_mib": MAX_SOURCE_BYTES // (1024 * 1024),
        "max_files": MAX_FILES,
        "new_blind": new_blind_spots(fleet),
        "refused": [],
        "stored": [],
        **extra,
    }


@requires(Role.VIEWER)
@require_GET
def blindspots_list(request: HttpRequest) -> HttpResponse:
    fleets = []
    for fleet in fleets_for_user(request.user):
        run = latest_run(fleet)
        fleets.append(
            {
                "fleet": fleet,
                "run": run,
                "started": shared_utc_text(run.started_at) if run else "",
                "counts": count_cells(run.counts) if run else [],
            }
        )
    return render(request, "blindspots/list.html", {"section": "blindspots", "fleets": fleets})


@requires(Role.VIEWER)
@require_GET
def fleet_blindspots(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    return render(request, "blindspots/fleet.html", page_context(request, fleet, latest_run(fleet)))


@requires(Role.VIEWER)
@require_GET
def fleet_blindspots_json(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    run = latest_run(fleet)
    if run is None:
        return JsonResponse({"fleet": fleet.slug, "run": None, "new_blind_24h": []})
    return JsonResponse(
        {
            "fleet": fleet.slug,
            "run": run.report,
            "with_prometheus_rules": run.with_prometheus_rules,
            "new_blind_24h": [
                {k: row.get(k) for k in ("kind", "name", "where", "source", "verdict")}
                for row in new_blind_spots(fleet)
            ],
        }
    )


@requires(Role.ONCALL)
@require_POST
def source_upload(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    """Store what holds something to audit and run the audit again; say per file why any
    other was refused. The page is answered at once (no redirect) so the reasons show."""
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    uploads = request.FILES.getlist("files")
    files: list[tuple[str, bytes]] = []
    refused: list[tuple[str, str]] = []
    if not uploads:
        refused.append(("", "choose a file to upload"))
    for upload in uploads[:MAX_FILES]:
        name = (upload.name or "upload")[:255]
        if upload.size is not None and upload.size > MAX_SOURCE_BYTES:
            size = upload.size / (1024 * 1024)
            refused.append(
                (name, f"{size:.1f} MiB is over the {MAX_SOURCE_BYTES // 2**20} MiB limit")
            )
            continue
        files.append((name, upload.read(MAX_SOURCE_BYTES + 1)))
    for upload in uploads[MAX_FILES:]:
        refused.append((upload.name or "upload", f"more than {MAX_FILES} files in one upload"))
    outcome = sources_upload(fleet, files) if files else UploadOutcome((), (), None)
    refused.extend(outcome.refused)
    context = page_context(
        request,
        fleet,
        latest_run(fleet),
        refused=[{"name": n, "reason": r} for n, r in refused],
        stored=[s.name for s in outcome.stored],
    )
    status = 400 if refused and not outcome.stored else 200
    return render(request, "blindspots/fleet.html", context, status=status)


@requires(Role.ONCALL)
@require_POST
def audit_rerun(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    with_prometheus = request.POST.get("prometheus_rules") == "1" and prometheus_configured()
    audit_fleet(fleet, prometheus_rules=with_prometheus)
    return redirect("blindspots-fleet", fleet.slug)


@requires(Role.ONCALL)
@require_POST
def source_remove(request: HttpRequest, fleet_slug: str, source_id: int) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    if not source_delete(fleet, source_id):
        raise Http404("no such source")
    return redirect("blindspots-fleet", fleet.slug)
