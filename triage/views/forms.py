"""The forms of the incident pages: a new incident, a note, a status change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from inventory.models import Fleet
from slo.models import Slo
from triage.models import IncidentSeverity

SLO_OF_OTHER_FLEET = "this SLO belongs to fleet {other}; pick one of {fleet}'s SLOs or none"


class IncidentNewForm(forms.Form):
    fleet = forms.ModelChoiceField(queryset=Fleet.objects.order_by("name"), to_field_name="slug")
    title = forms.CharField(max_length=300)
    slo = forms.ModelChoiceField(
        queryset=Slo.objects.select_related("fleet").order_by("fleet__name", "name"),
        required=False,
        label="SLO",
        help_text="optional: the walk reads this SLO's breach instead of the fleet's metrics",
    )
    severity = forms.ChoiceField(choices=IncidentSeverity.choices, initial="warning")
    owner = forms.CharField(max_length=200, required=False)

    @classmethod
    def initial_from(cls, query: Mapping[str, str]) -> dict[str, Any]:
        """The form's first values from a link (`?fleet=&slo=&title=`, as the SLO page
        writes it): an SLO is named by its fleet's slug and its own, never by row id."""
        initial: dict[str, Any] = {"fleet": query.get("fleet", "")}
        title = query.get("title", "").strip()
        if title:
            initial["title"] = title[:300]
        slo_slug = query.get("slo", "")
        if slo_slug:
            slo = Slo.objects.filter(fleet__slug=initial["fleet"], slug=slo_slug).first()
            if slo is not None:
                initial["slo"] = slo.pk
        return initial

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        fleet, slo = data.get("fleet"), data.get("slo")
        if fleet is not None and slo is not None and slo.fleet_id != fleet.pk:
            self.add_error("slo", SLO_OF_OTHER_FLEET.format(other=slo.fleet.slug, fleet=fleet.slug))
        return data


class NoteForm(forms.Form):
    text = forms.CharField(max_length=10_000, widget=forms.Textarea(attrs={"rows": 3}))


class StatusForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("acknowledge", "Acknowledge"), ("resolve", "Resolve"), ("reopen", "Reopen")]
    )
    owner = forms.CharField(max_length=200, required=False)
