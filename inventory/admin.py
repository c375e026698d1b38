from __future__ import annotations

from django.contrib import admin

from inventory.models import Endpoint, Fleet, PrometheusSource, ScrapeRun


class EndpointInline(admin.TabularInline):
    model = Endpoint
    extra = 1
    fields = ("url", "kind", "labels", "enabled")


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
