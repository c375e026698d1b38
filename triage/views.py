from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from fleetscope.lib.pending_pages import PendingSection, render_pending


def incident_list(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "incidents",
            "Incidents",
            "Open incidents with the TTFT-vs-TPOT triage walk, evidence, owner, runbook "
            "and one suggested canary with rollback criteria.",
        ),
    )
