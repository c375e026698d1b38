from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.utils import timezone

from inventory.identity import normalised_target
from inventory.models import ApiToken, Endpoint, Fleet, PrometheusSource, ScrapeRun, TenantGrant


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


@admin.register(TenantGrant)
class TenantGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "fleet", "tenant")
    list_filter = ("fleet",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created with `manage.py api_token create` (the secret is printed once, and
    only there); here they are listed and revoked."""

    list_display = ("name", "prefix", "scope", "user", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("name", "prefix", "scope", "user", "digest", "created_at", "last_used_at")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
