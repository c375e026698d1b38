"""The fleet overview, the per-group pages, and their JSON (polling fallback, other views).

Every filter (range, end, source, model, replica) lives in the query string,
so a link reproduces the view. Only the default view is pushed live; the
others are computed on request and shared by viewers of the same view for
one step. A filter that cannot be used is answered with one message naming it
(400 from the JSON, a banner on the page), never with empty panels; a signed-out
poller gets a 401 in JSON, not the login page's HTML.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render, resolve_url
from django.utils import timezone
from django.views.decorators.http import require_GET

from blindspots import new_blind_spots
from dashboard.live import default_backend, latest_overview_gzip, watch
from dashboard.overview import Backend, OverviewRequest, overview_compute, overview_json
from dashboard.panels import GROUP_TITLES, PANELS, Group
from dashboard.timerange import DEFAULT_RANGE, RANGES, RangeError, TimeRange, parse_range
from fleetscope.lib import gzipped, shared_cache
from inventory.access import Role, fleet_for_user, requires, view_scope
from inventory.models import EndpointInventory, EndpointKind, Fleet
from inventory.store import label_values, label_values_ever
from queries import Window

BACKENDS: dict[str, Backend] = {"local": "local", "prometheus": "prometheus"}
NO_PROMETHEUS = "Prometheus is not configured (PROMETHEUS_URL is empty)"
# How many of the values that exist a message about an unknown one lists.
LISTED = 20


class FilterError(ValueError):
    """A filter in the query string that cannot be used; the message says which and why,
    and `parameter` names it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


def prometheus_configured() -> bool:
    return bool(settings.PROMETHEUS_URL)


def listing(values: list[str]) -> str:
    """Up to LISTED values for a message, and how many more there are."""
    shown = ", ".join(value[:80] for value in values[:LISTED])
    more = len(values) - LISTED
    return f"{shown} and {more} more" if more > 0 else shown or "none"


@dataclass(frozen=True)
class ViewFilters:
    since: str
    end: str | None
    backend: Backend
    model: str | None
    instance: str | None

    @property
    def is_default(self) -> bool:
        """The view the scheduler computes and pushes live."""
        plain = not (self.model or self.end or self.instance)
        return plain and self.since == DEFAULT_RANGE and self.backend == default_backend()


def served_models(fleet: Fleet) -> list[str]:
    """The `model_name` values the fleet's engines expose now (their current layouts)."""
    current = EndpointInventory.objects.filter(
        endpoint__fleet=fleet, endpoint__enabled=True, detected_kind="engine"
    ).values_list("series_set_id", flat=True)
    return label_values(series_set_ids=list(current), label="model_name")


def known_models(fleet: Fleet) -> list[str]:
    """Every `model_name` any layout of the fleet's endpoints has held: a model no longer
    served may still be in an earlier window."""
    endpoints = fleet.endpoints.values_list("id", flat=True)
    return label_values_ever(endpoint_ids=list(endpoints), label="model_name")


def replica_instances(fleet: Fleet) -> list[str]:
    endpoints = fleet.endpoints.enabled().filter(kind=EndpointKind.VLLM).order_by("url")
    return [endpoint.instance for endpoint in endpoints]


def filters_from(request: HttpRequest, fleet: Fleet, replicas: list[str]) -> ViewFilters:
    """The view's filters; `replicas` are the fleet's (see `replica_instances`). Raises
    FilterError for a source, replica or model that does not exist (the range is checked
    by `span_of`)."""
    backend = BACKENDS.get(request.GET.get("backend") or default_backend())
    if backend is None:
        raise FilterError("backend", f"backend must be one of {', '.join(BACKENDS)}")
    if backend == "prometheus" and not prometheus_configured():
        raise FilterError("backend", NO_PROMETHEUS)
    instance = request.GET.get("instance") or None
    if instance is not None and instance not in replicas:
        message = f"instance {instance[:60]!r} is not a vLLM replica of this fleet"
        raise FilterError("instance", f"{message}; its replicas: {listing(replicas)}")
    model = request.GET.get("model") or None
    if model is not None and model not in (models := known_models(fleet)):
        message = f"model {model[:60]!r} is not a model this fleet serves or has served"
        raise FilterError("model", f"{message}; its models: {listing(models)}")
    return ViewFilters(
        since=request.GET.get("since") or DEFAULT_RANGE,
        end=request.GET.get("end") or None,
        backend=backend,
        model=model,
        instance=instance,
    )


def span_of(filters: ViewFilters) -> TimeRange:
    """The filters' time range, ending now or at `end` (RangeError for one that cannot be)."""
    return parse_range(filters.since, filters.end, now=timezone.now())


def problem_of(request: HttpRequest, error: FilterError | RangeError) -> dict[str, str]:
    """What the page says about a filter that cannot be used: the message, the parameter,
    and a link to the same view without it."""
    rest = request.GET.copy()
    rest.pop(error.parameter, None)
    return {
        "error": str(error),
        "parameter": error.parameter,
        "without": f"{request.path}?{rest.urlencode()}" if rest else request.path,
    }


def _page(request: HttpRequest, slug: str, group: Group | None) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=slug)
    replicas = replica_instances(fleet)
    problem = None
    try:
        filters = filters_from(request, fleet, replicas)
        span_of(filters)
        live = filters.is_default
    except (FilterError, RangeError) as exc:
        # Said once on the page; the script then asks for nothing (the JSON would say the same).
        problem, live = problem_of(request, exc), False
    since = request.GET.get("since") or DEFAULT_RANGE
    backend = request.GET.get("backend") or default_backend()
    # The Prometheus source is offered only when there is one to read.
    backends = {"local": "embedded store"}
    if prometheus_configured():
        backends["prometheus"] = "Prometheus"
    groups = [
        (g, GROUP_TITLES[g], [p for p in PANELS if p.group == g])
        for g in Group
        if group is None or g == group
    ]
    context = {
        "section": "fleet",
        "fleet": fleet,
        "group": group,
        "group_tabs": [(g.value, GROUP_TITLES[g]) for g in Group],
        "groups": groups,
        "ranges": list(RANGES),
        "since": since,
        "since_known": since in RANGES,
        "backend": backend,
        "backends": list(backends.items()),
        "backend_known": backend in backends,
        "replicas": replicas,
        "models": served_models(fleet),
        "model": request.GET.get("model", ""),
        "instance": request.GET.get("instance", ""),
        "query": request.GET.urlencode(),
        "live": live,
        "live_interval": settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS,
        "problem": problem,
        "login_url": resolve_url(settings.LOGIN_URL),
        "blind_spots_new": len(new_blind_spots(fleet)),
    }
    return render(request, "dashboard/fleet_overview.html", context)


@requires(Role.VIEWER)
@require_GET
def fleet_overview(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, slug, None)


@requires(Role.VIEWER)
@require_GET
def fleet_group(request: HttpRequest, slug: str, group: str) -> HttpResponse:
    try:
        chosen = Group(group)
    except ValueError:
        raise Http404(f"no panel group {group[:30]!r}") from None
    return _page(request, slug, chosen)


@requires(Role.VIEWER)
@require_GET
@login_not_required  # it answers a signed-out poller itself, in JSON (see below)
def fleet_overview_json(request: HttpRequest, slug: str) -> HttpResponse:
    if not request.user.is_authenticated:
        # The login middleware would redirect to the login page, whose HTML a polling
        # script cannot read: say it in JSON, with where to log in again.
        login = resolve_url(settings.LOGIN_URL)
        return JsonResponse(
            {"error": "signed out", "login_url": f"{login}?{urlencode({'next': request.path})}"},
            status=401,
        )
    try:
        fleet = fleet_for_user(request.user, slug=slug)
    except Http404:
        return JsonResponse({"error": f"no fleet {slug[:60]!r}"}, status=404)
    scope = view_scope(request.user, fleet)
    try:
        filters = filters_from(request, fleet, replica_instances(fleet))
        group = Group(request.GET["group"]) if request.GET.get("group") else None
    except FilterError as exc:
        return JsonResponse({"error": str(exc), "parameter": exc.parameter}, status=400)
    except ValueError:
        message = f"group must be one of {', '.join(Group)}"
        return JsonResponse({"error": message, "parameter": "group"}, status=400)
    watch(scope)
    # The live job caches the default view whole (the overview) and cut per group.
    if filters.is_default and (cached := latest_overview_gzip(scope, group)) is not None:
        return gzipped.response(request, cached, "application/json")
    try:
        span = span_of(filters)
    except RangeError as exc:
        return JsonResponse({"error": str(exc), "parameter": exc.parameter}, status=400)
    # Viewers of the same non-default view share one computation per step.
    tick = int(span.end.timestamp() // span.step_seconds)
    view = hashlib.sha256(repr((filters, group, tick)).encode()).hexdigest()
    key = f"fleetscope:view:{scope.key}:{view}"
    payload = shared_cache.get(key)
    if payload is None:
        window = Window(span.start, span.end, span.step_seconds)
        overview = OverviewRequest(
            fleet,
            window,
            filters.backend,
            model_name=filters.model,
            instance=filters.instance,
            group=group,
        )
        computed = overview_compute(overview)
        payload = overview_json(computed)
        shared_cache.put(key, payload, timeout=int(span.step_seconds))
        if (trouble := shared_cache.trouble()) is not None:
            # The cache is an optimisation: without it this viewer still gets the data,
            # and the page learns why nothing will be pushed (its banner; it polls).
            computed["live_updates"] = {"status": "off", "message": trouble}
            payload = overview_json(computed)
    return HttpResponse(payload, content_type="application/json")
