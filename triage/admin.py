"""Runbooks are edited here; incidents can be corrected here (their timeline inline); stored
walks are evidence and read-only."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from triage.models import Incident, IncidentEvent, Runbook, WalkRecord


class RunbookAdminForm(forms.ModelForm):
    external_url = forms.URLField(max_length=500, required=False, assume_scheme="https")

    class Meta:
        model = Runbook
        fields = ["slug", "title", "owner_team", "escalation", "body_markdown", "external_url"]


@admin.register(Runbook)
class RunbookAdmin(admin.ModelAdmin):
    form = RunbookAdminForm
    list_display = ("slug", "title", "owner_team", "updated_at")
    search_fields = ("slug", "title", "owner_team")


class IncidentEventInline(admin.TabularInline):
    model = IncidentEvent
    fields = ("at", "kind", "author", "text", "walk_record")
    readonly_fields = ("walk_record",)
    extra = 0


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "fleet", "status", "severity", "owner", "source", "opened_at")
    list_filter = ("status", "severity", "source", "fleet")
    search_fields = ("title", "owner", "alert_fingerprint")
    raw_id_fields = ("slo", "runbook")
    inlines = [IncidentEventInline]


@admin.register(WalkRecord)
class WalkRecordAdmin(admin.ModelAdmin):
    list_display = ("id", "incident", "created_at")
    readonly_fields = ("incident", "created_at", "walk")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
