from __future__ import annotations

from django.urls import path

from triage.views import alertmanager, evidence, incidents, runbooks

urlpatterns = [
    path("", incidents.incident_list, name="triage-incident-list"),
    path("new/", incidents.incident_new, name="triage-incident-new"),
    # Alertmanager's receiver config names this URL: keep it stable.
    path("alertmanager/", alertmanager.alertmanager_webhook, name="triage-alertmanager-webhook"),
    path("runbooks/", runbooks.runbook_list, name="triage-runbook-list"),
    path("runbooks/<slug:slug>/", runbooks.runbook_detail, name="triage-runbook-detail"),
    # The permalink of an incident: postmortems and chat messages link to it.
    path("<int:incident_id>/", incidents.incident_detail, name="triage-incident-detail"),
    path("<int:incident_id>/notes/", incidents.incident_note_add, name="triage-incident-note"),
    path("<int:incident_id>/status/", incidents.incident_status_set, name="triage-incident-status"),
    path("<int:incident_id>/walks/", incidents.incident_walk_now, name="triage-incident-walk"),
    path("<int:incident_id>/evidence.md", evidence.evidence_md, name="triage-incident-evidence-md"),
    path(
        "<int:incident_id>/evidence.json",
        evidence.evidence_json,
        name="triage-incident-evidence-json",
    ),
]
