"""Health endpoints and the favicon; the only views reachable without logging in."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db.utils import DatabaseError
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET, require_safe

from fleetscope.health import readiness_checks


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _is_staff(request: HttpRequest) -> bool:
    try:
        return bool(request.user.is_authenticated and request.user.is_staff)
    except DatabaseError:  # the session lives in the database, which may be what is down
        return False


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results = readiness_checks()
    ready = all(result.ok for result in results if result.required)
    staff = _is_staff(request)
    body = {
        "status": "ready" if ready else "not ready",
        # Connection details (host, port, user) only for staff: anyone may call /readyz.
        "checks": {result.name: result.as_json(staff=staff) for result in results},
    }
    return JsonResponse(body, status=200 if ready else 503)


FAVICON = "favicon.svg"


@login_not_required
@cache_control(public=True, max_age=86400)
@require_safe
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """`/favicon.ico`, which browsers ask for on pages without a <link rel=icon> (a JSON
    view, say): the static SVG the pages link to, served by whitenoise. A temporary
    redirect, so a browser never pins a static URL that may change."""
    return HttpResponseRedirect(static(FAVICON))
