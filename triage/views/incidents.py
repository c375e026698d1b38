"""The incident pages: the list (unresolved first), a new incident (walked at once), one
incident in detail with its walk as a tree, and the POST forms for notes, status and a new
walk. Every page needs a login (fleetscope.middleware); every POST a CSRF token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Case, IntegerField, Value, When
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from fleetscope.lib.utc import utc_text, utc_text_of_iso
from inventory.access import Role, fleet_for_user, requires
from triage import incidents as services
from triage.export import NOTHING_APPLIED, figure_row, walk_tree
from triage.figures import figures_by_id, walk_charts
from triage.models import Incident, IncidentSource, IncidentStatus, WalkRecord
from triage.runbooks import runbook_slug
from triage.views.forms import IncidentNewForm, NoteForm, StatusForm

SECTION = "incidents"
RESOLVED_SHOWN = 50


def _author(request: HttpRequest) -> str:
    return request.user.get_username()


def incident_for_user(request: HttpRequest, incident_id: int) -> Incident:
    """The incident, 404 when missing or on a fleet the viewer may not see."""
    incident = (
        Incident.objects.select_related("fleet", "slo", "runbook").filter(pk=incident_id).first()
    )
    if incident is None:
        raise Http404("no such incident")
    fleet_for_user(request.user, slug=incident.fleet.slug)
    return incident


@requires(Role.VIEWER)
@require_GET
def incident_list(request: HttpRequest) -> HttpResponse:
    rank = Case(
        When(status=IncidentStatus.OPEN, then=Value(0)),
        When(status=IncidentStatus.ACKNOWLEDGED, then=Value(1)),
        default=Value(2),
        output_field=IntegerField(),
    )
    rows = Incident.objects.select_related("fleet", "slo", "runbook").annotate(rank=rank)
    unresolved = list(rows.exclude(status=IncidentStatus.RESOLVED).order_by("rank", "-opened_at"))
    resolved = list(rows.filter(status=IncidentStatus.RESOLVED)[:RESOLVED_SHOWN])
    context = {
        "section": SECTION,
        "unresolved": [_row(i) for i in unresolved],
        "resolved": [_row(i) for i in resolved],
        "resolved_shown": RESOLVED_SHOWN,
    }
    return render(request, "triage/incident_list.html", context)


def _row(incident: Incident) -> dict[str, Any]:
    return {
        "incident": incident,
        "opened": utc_text(incident.opened_at),
        "started": utc_text(incident.started_at) if incident.started_at else "",
        "resolved": utc_text(incident.resolved_at) if incident.resolved_at else "",
    }


@requires(Role.ONCALL)
@require_http_methods(["GET", "POST"])
def incident_new(request: HttpRequest) -> HttpResponse:
    """GET: the form (`?fleet=<slug>&slo=<slug>&title=` fill it in). POST: open the
    incident, walk the tree at once (synchronously: the person waits for the evidence)
    and show it."""
    if request.method == "POST":
        form = IncidentNewForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            fleet = fleet_for_user(request.user, slug=data["fleet"].slug)
            try:
                incident = services.incident_open(
                    fleet=fleet,
                    title=data["title"],
                    slo=data["slo"],
                    owner=data["owner"] or _author(request),
                    severity=data["severity"],
                    author=_author(request),
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                if services.incident_walk_run(incident.pk, author=_author(request)) is None:
                    messages.warning(request, "The walk could not run: the timeline says why.")
                return redirect("triage-incident-detail", incident.pk)
    else:
        form = IncidentNewForm(initial=IncidentNewForm.initial_from(request.GET))
    return render(request, "triage/incident_new.html", {"section": SECTION, "form": form})


def _walk_shown(request: HttpRequest, incident: Incident) -> WalkRecord | None:
    """`?walk=<id>` picks a stored walk of this incident; else the newest."""
    walks = incident.walks.all()
    wanted = request.GET.get("walk", "")
    if wanted.isdigit():
        record = walks.filter(pk=int(wanted)).first()
        if record is None:
            raise Http404("no such walk for this incident")
        return record
    return walks.order_by("-created_at", "-id").first()


def _walk_context(record: WalkRecord | None) -> dict[str, Any]:
    if record is None:
        return {"walk": None}
    walk = record.walk
    breach = walk.get("breach") or {}
    supported = list(walk.get("supported") or ())
    charts = walk_charts(walk)
    return {
        "walk": walk,
        "walk_record": record,
        "walk_created": utc_text(record.created_at),
        "window": {k: utc_text_of_iso(v) for k, v in (walk.get("window") or {}).items()},
        "baseline": {k: utc_text_of_iso(v) for k, v in (walk.get("baseline") or {}).items()},
        "day_before": {k: utc_text_of_iso(v) for k, v in (walk.get("day_before") or {}).items()},
        "charts": charts,
        "chart_figures": figures_by_id(charts),
        "breach": breach,
        "breach_since": utc_text_of_iso(breach.get("since")),
        # One sentence with its "since": a reason may end in a full stop of its own.
        "breach_text": (breach.get("description") or "").rstrip("."),
        "breach_figures": [figure_row(f) for f in breach.get("figures") or ()],
        "tree": walk_tree(walk),
        # "healthy" is a leaf too, but it means no cause was found: the page says so.
        "healthy": "healthy" in supported,
        "supported": [
            {"id": leaf, "runbook": runbook_slug(leaf)} for leaf in supported if leaf != "healthy"
        ],
        "changes": [
            {**c, "at_text": utc_text_of_iso(c.get("at")) or "time unknown"}
            for c in walk.get("changes") or ()
        ],
        "canary": walk.get("canary"),
        "plan": canary_view(walk.get("canary")),
    }


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _gate_text(gate: Any) -> str:
    """A gate as one line: its rule (which says from how many requests on it holds)."""
    if not isinstance(gate, Mapping):
        return _text(gate)
    return _text(gate.get("rule") or gate.get("name"))


def canary_view(canary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The stored canary plan as the page shows it: label/value rows at a glance, the
    gates and red flags as lines, the text and the YAML. Reads the plan's contract
    (`variable`, `scope`, `sample`, `duration` as objects) and older flat plans (strings)."""
    if not canary:
        return None
    rows: list[tuple[str, str, str]] = []  # (label, value, how it was worked out)

    def row(label: str, value: Any, how: Any = "") -> None:
        if value not in (None, ""):
            rows.append((label, _text(value), _text(how)))

    row("Leaf", canary.get("leaf"))
    row("Model", canary.get("model_name"))
    row("Why", canary.get("evidence"))
    objective = canary.get("objective")
    if isinstance(objective, Mapping) and objective.get("description"):
        good = objective.get("observed_good")
        seen = f"; the incident window had {good * 100:.4g}%" if isinstance(good, float) else ""
        row("Breached objective", f"{objective['description']}{seen}")
    variable = canary.get("variable")
    if isinstance(variable, Mapping):
        row(
            "Change one thing",
            f"{_text(variable.get('name'))}: {_text(variable.get('current'))} \u2192 "
            f"{_text(variable.get('proposed'))} ({_text(variable.get('where'))})",
            variable.get("current_note"),
        )
        row("How", variable.get("action"))
    else:
        row("Variable", variable)
    row("Change", canary.get("change"))
    scope = canary.get("scope")
    if isinstance(scope, Mapping):
        row("Scope", scope.get("description"), scope.get("share_note"))
    else:
        row("Scope", scope)
    sample = canary.get("sample")
    if isinstance(sample, Mapping):
        row("Sample", f"at least {_text(sample.get('requests'))} requests", sample.get("how"))
    row("Minimum requests", canary.get("min_requests"))
    duration = canary.get("duration")
    if isinstance(duration, Mapping):
        minutes = duration.get("minutes")
        shown = f"{minutes} minutes" if minutes is not None else "until the sample is in"
        row("Duration", shown, duration.get("how"))
    elif canary.get("duration_seconds"):
        row("Duration", f"{canary['duration_seconds']} s")
    if not isinstance(variable, Mapping):
        row("How", canary.get("how"))
    row("Compare with", canary.get("compare"))
    unverified = canary.get("quality_verified") is False

    def gates(name: str) -> list[dict[str, Any]]:
        # Without a prober the quality gate cannot hold: the page shows it in red.
        return [
            {
                "text": _gate_text(g),
                "unverified": unverified and isinstance(g, Mapping) and g.get("name") == "quality",
            }
            for g in canary.get(name) or ()
        ]

    return {
        "rows": rows,
        "success_gates": gates("success_gates"),
        "rollback": gates("rollback"),
        "red_flags": [
            {"text": _text(f), "unverified": unverified and "quality" in _text(f).lower()}
            for f in canary.get("red_flags") or ()
        ],
        "quality_unverified": unverified,
        "text": _text(canary.get("text")),
        "yaml": _text(canary.get("yaml")),
    }


@requires(Role.VIEWER)
@require_GET
def incident_detail(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = incident_for_user(request, incident_id)
    events = [
        {"event": e, "at": utc_text(e.at)}
        for e in incident.events.select_related("walk_record").order_by("at", "id")
    ]
    firing = (
        Incident.objects.filter(fleet=incident.fleet, source=IncidentSource.ALERTMANAGER)
        .exclude(status=IncidentStatus.RESOLVED)
        .exclude(pk=incident.pk)
        .order_by("-opened_at")[:20]
    )
    context = {
        "section": SECTION,
        "incident": incident,
        "opened": utc_text(incident.opened_at),
        "started": utc_text(incident.started_at) if incident.started_at else "",
        "resolved": utc_text(incident.resolved_at) if incident.resolved_at else "",
        "alert_labels": sorted(incident.alert_labels.items()),
        "alert_annotations": sorted(incident.alert_annotations.items()),
        "firing": list(firing),
        "events": events,
        "walk_count": incident.walks.count(),
        "note_form": NoteForm(),
        "nothing_applied": NOTHING_APPLIED,
        **_walk_context(_walk_shown(request, incident)),
    }
    return render(request, "triage/incident_detail.html", context)


@requires(Role.ONCALL)
@require_POST
def incident_note_add(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = incident_for_user(request, incident_id)
    form = NoteForm(request.POST)
    if form.is_valid():
        try:
            services.incident_note(
                incident=incident, author=_author(request), text=form.cleaned_data["text"]
            )
        except services.IncidentError as exc:
            messages.error(request, str(exc))
    else:
        messages.error(request, "The note was not saved: it needs some text.")
    return redirect("triage-incident-detail", incident.pk)


@requires(Role.ONCALL)
@require_POST
def incident_status_set(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = incident_for_user(request, incident_id)
    form = StatusForm(request.POST)
    if not form.is_valid():
        return HttpResponse("action must be acknowledge, resolve or reopen", status=400)
    action, author = form.cleaned_data["action"], _author(request)
    try:
        if action == "acknowledge":
            services.incident_acknowledge(
                incident=incident, author=author, owner=form.cleaned_data["owner"]
            )
        elif action == "resolve":
            services.incident_resolve(incident=incident, author=author)
        else:
            services.incident_reopen(incident=incident, author=author)
    except services.IncidentError as exc:
        messages.error(request, str(exc))
    return redirect("triage-incident-detail", incident.pk)


@requires(Role.ONCALL)
@require_POST
def incident_walk_now(request: HttpRequest, incident_id: int) -> HttpResponse:
    """Walk the tree again now (synchronously) and show the new walk."""
    incident = incident_for_user(request, incident_id)
    if services.incident_walk_run(incident.pk, author=_author(request)) is None:
        messages.warning(request, "The walk could not run: the timeline says why.")
    return redirect("triage-incident-detail", incident.pk)
