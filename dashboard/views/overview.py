"""The fleet overview, the per-group pages, and their JSON (polling fallback, other views).

Every filter (range, end, source, model, replica) lives in the query string,
so a link reproduces the view. Only the default view is pushed live; the
others are computed on request and shared by viewers of the same view for
one step.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard.live import default_backend, latest_overview, watch
from dashboard.overview import Backend, OverviewRequest, overview_compute, overview_json
from dashboard.panels import GROUP_TITLES, PANELS, Group
from dashboard.timerange import DEFAULT_RANGE, RANGES, RangeError, parse_range
from inventory.access import fleet_for_user, view_scope
from inventory.models import EndpointInventory, EndpointKind, Fleet
from inventory.store import label_values
from queries import Window

BACKENDS: dict[str, Backend] = {"local": "local", "prometheus": "prometheus"}


class FilterError(ValueError):
    """A filter in the query string that cannot be used; the message says which and why."""


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


def replica_instances(fleet: Fleet) -> list[str]:
    endpoints = fleet.endpoints.enabled().filter(kind=EndpointKind.VLLM).order_by("url")
    return [endpoint.instance for endpoint in endpoints]


def filters_from(request: HttpRequest, replicas: list[str]) -> ViewFilters:
    """The view's filters; `replicas` are the fleet's (see `replica_instances`)."""
    backend = BACKENDS.get(request.GET.get("backend") or default_backend())
    if backend is None:
        raise FilterError(f"backend must be one of {', '.join(BACKENDS)}")
    instance = request.GET.get("instance") or None
    if instance is not None and instance not in replicas:
        raise FilterError(f"replica {instance[:60]!r} is not a vLLM endpoint of this fleet")
    return ViewFilters(
        since=request.GET.get("since") or DEFAULT_RANGE,
        end=request.GET.get("end") or None,
        backend=backend,
        model=request.GET.get("model") or None,
        instance=instance,
    )


def _page(request: HttpRequest, slug: str, group: Group | None) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=slug)
    replicas = replica_instances(fleet)
    try:
        live = filters_from(request, replicas).is_default
    except FilterError:
        live = False  # the JSON request will answer with the message
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
        "since": request.GET.get("since", DEFAULT_RANGE),
        "backend": request.GET.get("backend", default_backend()),
        "replicas": replicas,
        "models": served_models(fleet),
        "model": request.GET.get("model", ""),
        "instance": request.GET.get("instance", ""),
        "query": request.GET.urlencode(),
        "live": live,
    }
    return render(request, "dashboard/fleet_overview.html", context)


def fleet_overview(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, slug, None)


def fleet_group(request: HttpRequest, slug: str, group: str) -> HttpResponse:
    try:
        chosen = Group(group)
    except ValueError:
        raise Http404(f"no panel group {group[:30]!r}") from None
    return _page(request, slug, chosen)


def fleet_overview_json(request: HttpRequest, slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=slug)
    scope = view_scope(request.user, fleet)
    try:
        filters = filters_from(request, replica_instances(fleet))
        group = Group(request.GET["group"]) if request.GET.get("group") else None
    except FilterError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except ValueError:
        return JsonResponse({"error": f"group must be one of {', '.join(Group)}"}, status=400)
    watch(scope)
    # The pushed overview holds every group's panels, so group pages share it too.
    if filters.is_default and (cached := latest_overview(scope)) is not None:
        return HttpResponse(cached, content_type="application/json")
    try:
        span = parse_range(filters.since, filters.end, now=timezone.now())
    except RangeError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    # Viewers of the same non-default view share one computation per step.
    tick = int(span.end.timestamp() // span.step_seconds)
    view = hashlib.sha256(repr((filters, group, tick)).encode()).hexdigest()
    key = f"fleetscope:view:{scope.key}:{view}"
    payload = cache.get(key)
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
        payload = overview_json(overview_compute(overview))
        cache.set(key, payload, timeout=int(span.step_seconds))
    return HttpResponse(payload, content_type="application/json")
