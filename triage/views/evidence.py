"""The postmortem evidence pack of an incident, as Markdown and as JSON."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from inventory.access import Role, requires
from triage.export import evidence_markdown, evidence_pack
from triage.views.incidents import incident_for_user


def _filename(incident_id: int, extension: str) -> str:
    return f'inline; filename="incident-{incident_id}-evidence.{extension}"'


@requires(Role.VIEWER)
@require_GET
def evidence_md(request: HttpRequest, incident_id: int) -> HttpResponse:
    pack = evidence_pack(incident_for_user(request, incident_id))
    response = HttpResponse(evidence_markdown(pack), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = _filename(incident_id, "md")
    return response


@requires(Role.VIEWER)
@require_GET
def evidence_json(request: HttpRequest, incident_id: int) -> HttpResponse:
    pack = evidence_pack(incident_for_user(request, incident_id))
    response = JsonResponse(pack, json_dumps_params={"indent": 2})
    response["Content-Disposition"] = _filename(incident_id, "json")
    return response
