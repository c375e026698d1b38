"""Health endpoints; the only views reachable without logging in."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from fleetscope.health import readiness_checks


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results = readiness_checks()
    ready = all(result.ok for result in results if result.required)
    body = {
        "status": "ready" if ready else "not ready",
        "checks": {result.name: result.as_json() for result in results},
    }
    return JsonResponse(body, status=200 if ready else 503)
