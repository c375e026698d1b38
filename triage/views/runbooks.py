"""The runbooks: every leaf's, and one in full. Bodies are rendered inert (escaped first)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from inventory.access import Role, requires
from triage.models import Runbook
from triage.runbooks import LEAVES, markdown_inert, runbook_slug

SECTION = "incidents"
LEAF_OF_SLUG = {runbook_slug(leaf): leaf for leaf in LEAVES}


@requires(Role.VIEWER)
@require_GET
def runbook_list(request: HttpRequest) -> HttpResponse:
    rows = [{"runbook": r, "leaf": LEAF_OF_SLUG.get(r.slug, "")} for r in Runbook.objects.all()]
    return render(request, "triage/runbook_list.html", {"section": SECTION, "rows": rows})


@requires(Role.VIEWER)
@require_GET
def runbook_detail(request: HttpRequest, slug: str) -> HttpResponse:
    runbook = Runbook.objects.filter(slug=slug).first()
    if runbook is None:
        raise Http404("no such runbook")
    context = {
        "section": SECTION,
        "runbook": runbook,
        "leaf": LEAF_OF_SLUG.get(runbook.slug, ""),
        "body": markdown_inert(runbook.body_markdown),
        "open_incidents": runbook.incidents.exclude(status="resolved").select_related("fleet"),
    }
    return render(request, "triage/runbook_detail.html", context)
