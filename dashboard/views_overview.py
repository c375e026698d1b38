"""The fleet overview page and its JSON (the polling fallback and non-default ranges)."""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from dashboard.live import default_backend, latest_overview, watch
from dashboard.overview import Backend, OverviewRequest, overview_compute, overview_json
from dashboard.panels import GROUP_TITLES, PANELS, Group
from dashboard.queries import Window
from dashboard.timerange import DEFAULT_RANGE, RANGES, RangeError, parse_range
from inventory.models import Fleet

BACKENDS: dict[str, Backend] = {"local": "local", "prometheus": "prometheus"}


def fleet_overview(request: HttpRequest, slug: str) -> HttpResponse:
    fleet = get_object_or_404(Fleet, slug=slug)
    groups = [
        (group, GROUP_TITLES[group], [p for p in PANELS if p.group == group]) for group in Group
    ]
    context = {
        "section": "fleet",
        "fleet": fleet,
        "groups": groups,
        "ranges": list(RANGES),
        "since": request.GET.get("since", DEFAULT_RANGE),
        "backend": request.GET.get("backend", default_backend()),
    }
    return render(request, "dashboard/fleet_overview.html", context)


def fleet_overview_json(request: HttpRequest, slug: str) -> HttpResponse:
    fleet = get_object_or_404(Fleet, slug=slug)
    since = request.GET.get("since") or DEFAULT_RANGE
    backend = BACKENDS.get(request.GET.get("backend") or default_backend())
    model = request.GET.get("model") or None
    end = request.GET.get("end") or None
    if backend is None:
        return JsonResponse({"error": f"backend must be one of {', '.join(BACKENDS)}"}, status=400)
    watch(fleet)
    is_default = since == DEFAULT_RANGE and backend == default_backend() and not model and not end
    if is_default and (cached := latest_overview(fleet)) is not None:
        return HttpResponse(cached, content_type="application/json")
    try:
        span = parse_range(since, end, now=timezone.now())
    except RangeError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    # Viewers of the same non-default view share one computation per step.
    tick = int(span.end.timestamp() // span.step_seconds)
    view = hashlib.sha256(repr((since, end, backend, model, tick)).encode()).hexdigest()
    key = f"fleetscope:view:{fleet.code.hex}:{view}"
    payload = cache.get(key)
    if payload is None:
        window = Window(span.start, span.end, span.step_seconds)
        request_ = OverviewRequest(fleet, window, backend, model_name=model)
        payload = overview_json(overview_compute(request_))
        cache.set(key, payload, timeout=int(span.step_seconds))
    return HttpResponse(payload, content_type="application/json")
