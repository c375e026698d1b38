from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet

from inventory.identity import normalised_target
from inventory.models import Endpoint, Fleet, PrometheusSource, ScrapeRun


class EndpointFormSet(BaseInlineFormSet):
    """Two rows of one save that are the same target: the second is refused, as a
    registration of a target the fleet holds is (Endpoint.clean checks the saved rows)."""

    def clean(self) -> None:
        super().clean()
        seen: dict[str, str] = {}
        for form in self.forms:
            url = form.cleaned_data.get("url") if hasattr(form, "cleaned_data") else None
            if not url or form.cleaned_data.get("DELETE"):
                continue
            target = normalised_target(url)
            if target in seen:
                raise ValidationError(f"{url[:200]}: the same target as {seen[target][:200]}")
            seen[target] = url


class EndpointInline(admin.TabularInline):
    model = Endpoint
    formset = EndpointFormSet
    extra = 1
    fields = ("url", "instance", "kind", "labels", "enabled")
    readonly_fields = ("instance",)


@admin.register(Fleet)
class FleetAdmin(admin.ModelAdmin):
    list_display = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [EndpointInline]
    exclude = ("scrape_lease_until",)


@admin.register(PrometheusSource)
class PrometheusSourceAdmin(admin.ModelAdmin):
    list_display = ("name", "fleet", "url", "enabled")


@admin.register(ScrapeRun)
class ScrapeRunAdmin(admin.ModelAdmin):
    list_display = ("endpoint", "started_at", "status", "error_kind", "duration_seconds", "samples")
    list_filter = ("status", "error_kind")
    readonly_fields = [f.name for f in ScrapeRun._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False
