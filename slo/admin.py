"""SLOs in the admin, checked by the same services as every other way in: an objective
the fleet does not expose, or a target of 100%, is a form error here too."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.forms.models import BaseInlineFormSet

from slo.models import Objective, Slo
from slo.objectives import FINISHED_REASONS
from slo.services import (
    ObjectiveInput,
    SloDefinitionError,
    bad_finish_reasons_check,
    instances_check,
    objective_check,
    objectives_exposed_check,
    slug_check,
)

# objective_check's field suffix -> the inline form's field.
OBJECTIVE_FIELDS = {"kind": "kind", "threshold_seconds": "threshold_seconds", "target": "target"}


class SloAdminForm(forms.ModelForm):
    instances_text = forms.CharField(
        label="instances",
        required=False,
        help_text="comma-separated host:port; blank: every replica",
    )
    bad_finish_reasons = forms.MultipleChoiceField(
        choices=[(reason, reason) for reason in FINISHED_REASONS],
        widget=forms.CheckboxSelectMultiple,
    )
    runbook_url = forms.URLField(max_length=500, required=False, assume_scheme="https")

    class Meta:
        model = Slo
        fields = [
            "fleet", "name", "slug", "description", "model_name", "window_days", "owner",
            "runbook_url", "bad_finish_reasons", "min_requests_to_page", "min_bad_events",
        ]  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["instances_text"].initial = ", ".join(self.instance.instances or [])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        fleet = data.get("fleet")
        if fleet is None:
            return data
        text = data.get("instances_text") or ""
        try:
            self.instance.instances = list(
                instances_check([p.strip() for p in text.split(",") if p.strip()], fleet)
            )
        except SloDefinitionError as exc:
            self.add_error("instances_text", exc.detail)
        try:
            data["bad_finish_reasons"] = list(
                bad_finish_reasons_check(data.get("bad_finish_reasons") or [])
            )
        except SloDefinitionError as exc:
            self.add_error("bad_finish_reasons", exc.detail)
        if data.get("slug") and data.get("name"):
            try:
                slug_check(
                    fleet=fleet, name=data["name"], slug=data["slug"], exclude_pk=self.instance.pk
                )
            except SloDefinitionError as exc:
                self.add_error("slug", exc.detail)
        return data


class ObjectiveAdminForm(forms.ModelForm):
    class Meta:
        model = Objective
        fields = ["kind", "threshold_seconds", "target"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors or not data.get("kind") or data.get("target") is None:
            return data
        objective = ObjectiveInput(data["kind"], data.get("threshold_seconds"), data["target"])
        try:
            objective_check(objective, 0)
        except SloDefinitionError as exc:
            self.add_error(OBJECTIVE_FIELDS.get(exc.field.rpartition(".")[2]), exc.detail)
        return data


class ObjectiveFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        kinds = [
            form.cleaned_data["kind"]
            for form in self.forms
            if form.cleaned_data.get("kind") and not form.cleaned_data.get("DELETE")
        ]
        if not kinds:
            raise forms.ValidationError("give at least one objective")
        slo = self.instance
        if slo.fleet_id is None:
            return
        try:
            objectives_exposed_check(
                fleet=slo.fleet, model_name=slo.model_name, instances=slo.instances, kinds=kinds
            )
        except SloDefinitionError as exc:
            raise forms.ValidationError(exc.detail) from None


class ObjectiveInline(admin.TabularInline):
    model = Objective
    form = ObjectiveAdminForm
    formset = ObjectiveFormSet
    extra = 1


@admin.register(Slo)
class SloAdmin(admin.ModelAdmin):
    form = SloAdminForm
    list_display = ("name", "fleet", "slug", "window_days", "owner")
    list_filter = ("fleet", "window_days")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [ObjectiveInline]
