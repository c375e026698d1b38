"""The SLO form: people type thresholds in milliseconds and targets in percent; the
services take seconds and fractions, and do every check."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.text import capfirst

from inventory.models import Fleet
from slo.models import DEFAULT_BAD_FINISH_REASONS, Slo, SloWindow
from slo.objectives import FINISHED_REASONS, LATENCY_KINDS, OBJECTIVE_KINDS
from slo.presets import PRESETS
from slo.services import ObjectiveInput, SloDefinitionError, slo_create

NO_PRESET = ""


def threshold_field(kind: str) -> str:
    return f"{kind}_threshold_ms"


def target_field(kind: str) -> str:
    return f"{kind}_target"


class SloForm(forms.Form):
    """One SLO; each objective kind has a threshold (ms) + target (%) pair, blank = unused.

    `SloForm(preset="chat")` starts from a preset; a bound form whose objective fields are
    all blank takes the chosen preset's objectives."""

    preset = forms.ChoiceField(
        choices=[(NO_PRESET, "none")] + [(key, p.name) for key, p in PRESETS.items()],
        required=False,
    )
    name = forms.CharField(max_length=200, required=False)
    slug = forms.SlugField(max_length=64, required=False, help_text="made from the name if blank")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    window_days = forms.TypedChoiceField(
        choices=SloWindow.choices, coerce=int, initial=SloWindow.DAYS_28
    )
    model_name = forms.CharField(max_length=200, required=False, help_text="blank: every model")
    instances = forms.CharField(
        required=False, help_text="comma-separated host:port; blank: every replica"
    )
    owner = forms.CharField(max_length=200, required=False)
    runbook_url = forms.URLField(
        max_length=500, required=False, assume_scheme="https", label="Runbook URL"
    )
    bad_finish_reasons = forms.MultipleChoiceField(
        choices=[(reason, reason) for reason in FINISHED_REASONS],
        initial=list(DEFAULT_BAD_FINISH_REASONS),
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args: Any, preset: str | None = None, **kwargs: Any) -> None:
        if preset is not None and preset in PRESETS:
            kwargs["initial"] = {**preset_initial(preset), **(kwargs.get("initial") or {})}
        super().__init__(*args, **kwargs)
        for kind, info in OBJECTIVE_KINDS.items():
            if kind in LATENCY_KINDS:
                self.fields[threshold_field(kind)] = forms.FloatField(
                    required=False, label=f"{info.label} threshold (ms)"
                )
            self.fields[target_field(kind)] = forms.FloatField(
                required=False, label=f"{capfirst(info.label)} target (% of {info.events})"
            )
        self._objective_fields: list[str] = []  # form field of each objective sent, in order

    def objectives(self) -> list[ObjectiveInput]:
        """The objectives the cleaned data gives, thresholds in seconds, targets as fractions."""
        data = self.cleaned_data
        found: list[ObjectiveInput] = []
        self._objective_fields = []
        for kind in OBJECTIVE_KINDS:
            threshold_ms = data.get(threshold_field(kind))
            target_pct = data.get(target_field(kind))
            if threshold_ms is None and target_pct is None:
                continue
            found.append(
                ObjectiveInput(
                    kind,
                    # Rounded so 99.9 % is 0.999, not 0.9990000000000001.
                    None if threshold_ms is None else round(threshold_ms / 1000, 12),
                    0.0 if target_pct is None else round(target_pct / 100, 12),
                )
            )
            self._objective_fields.append(kind)
        return found

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for kind in OBJECTIVE_KINDS:
            threshold = data.get(threshold_field(kind))
            target = data.get(target_field(kind))
            # A field that failed its own cleaning already says what is wrong with it.
            lacks_threshold = threshold is None and threshold_field(kind) not in self.errors
            if kind in LATENCY_KINDS and lacks_threshold and target is not None:
                self.add_error(threshold_field(kind), "give a threshold for this target")
            if target is None and threshold is not None and target_field(kind) not in self.errors:
                self.add_error(target_field(kind), "give a target for this threshold")
        preset = data.get("preset") or NO_PRESET
        if preset and not self.objectives():
            for key, value in preset_initial(preset).items():
                if key != "name":
                    data[key] = value
        if not data.get("name"):
            if preset:
                data["name"] = PRESETS[preset].name
            else:
                self.add_error("name", "give the SLO a name")
        return data

    def save(self, fleet: Fleet) -> Slo | None:
        """Create the SLO, or put what is wrong on the form and return None."""
        if not self.is_valid():
            return None
        data = self.cleaned_data
        instances = [part.strip() for part in data["instances"].split(",") if part.strip()]
        try:
            return slo_create(
                fleet=fleet,
                name=data["name"],
                slug=data["slug"] or None,
                objectives=self.objectives(),
                window_days=data["window_days"],
                model_name=data["model_name"],
                instances=instances,
                owner=data["owner"],
                runbook_url=data["runbook_url"],
                bad_finish_reasons=data["bad_finish_reasons"],
                description=data["description"],
            )
        except SloDefinitionError as exc:
            self.add_error(self._field_of(exc.field), exc.detail)
            return None

    def _field_of(self, service_field: str) -> str | None:
        """The form field a service error belongs to (None: the form as a whole)."""
        if service_field.startswith("objectives[") and "]" in service_field:
            index = int(service_field[len("objectives[") : service_field.index("]")])
            kind = self._objective_fields[index]
            if service_field.endswith(".threshold_seconds"):
                return threshold_field(kind)
            if service_field.endswith(".target"):
                return target_field(kind)
            # A kind the fleet lacks, or a second of a kind: the pair's threshold (or target).
            return threshold_field(kind) if kind in LATENCY_KINDS else target_field(kind)
        return service_field if service_field in self.fields else None


def preset_initial(preset_key: str) -> dict[str, Any]:
    """A preset as form values: its name and objectives in milliseconds and percent."""
    preset = PRESETS[preset_key]
    values: dict[str, Any] = {"preset": preset_key, "name": preset.name}
    for objective in preset.objectives:
        if objective.threshold_seconds is not None:
            values[threshold_field(objective.kind)] = round(objective.threshold_seconds * 1000, 6)
        values[target_field(objective.kind)] = round(objective.target * 100, 6)
    return values
