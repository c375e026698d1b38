"""Capacity and cost inputs in the admin: profiles, plans, prices and tenant rules are
entered here (a model profile can also come from a pasted config.json on the capacity
page). A tenant rule is checked by the same code the cost report applies."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from capacity.cost import TenantRuleError, tenant_rule_check
from capacity.models import (
    CapacityPlan,
    CostReportRecord,
    FleetPrice,
    GpuProfile,
    ModelProfile,
    TenantRule,
)


class TenantRuleForm(forms.ModelForm):
    class Meta:
        model = TenantRule
        fields = ("fleet", "tenant", "kind", "label", "pattern", "order")

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        try:
            tenant_rule_check(
                tenant=str(cleaned.get("tenant") or ""),
                kind=str(cleaned.get("kind") or ""),
                label=str(cleaned.get("label") or ""),
                pattern=str(cleaned.get("pattern") or ""),
            )
        except TenantRuleError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
        return cleaned


@admin.register(TenantRule)
class TenantRuleAdmin(admin.ModelAdmin):
    form = TenantRuleForm
    list_display = ("fleet", "tenant", "kind", "label", "pattern", "order")
    list_filter = ("fleet", "kind")


@admin.register(ModelProfile)
class ModelProfileAdmin(admin.ModelAdmin):
    list_display = ("name", "architecture", "params", "dtype", "layers", "kv_heads", "head_dim")
    search_fields = ("name", "architecture")


@admin.register(GpuProfile)
class GpuProfileAdmin(admin.ModelAdmin):
    list_display = ("name", "usable_memory_bytes", "gpus_per_node", "price_per_hour_usd", "example")


@admin.register(CapacityPlan)
class CapacityPlanAdmin(admin.ModelAdmin):
    list_display = ("fleet", "model_name", "model_profile", "gpu_profile", "tp", "pp", "rho_target")
    list_filter = ("fleet",)


@admin.register(FleetPrice)
class FleetPriceAdmin(admin.ModelAdmin):
    list_display = ("fleet", "price_per_gpu_hour_usd", "platform_cost_usd_per_month")


@admin.register(CostReportRecord)
class CostReportRecordAdmin(admin.ModelAdmin):
    list_display = ("fleet", "period_start", "period_end", "created_at")
    readonly_fields = ("fleet", "period_start", "period_end", "created_at", "content", "csv")
