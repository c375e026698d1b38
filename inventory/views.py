from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from fleetscope.sections import PendingSection, render_pending


def overview(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "inventory",
            "Inventory",
            "What every endpoint of each fleet really exposes: metric families, label sets, "
            "bucket edges, vLLM dialect, drift between replicas and scrape health.",
        ),
    )
